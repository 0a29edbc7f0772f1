"""Cost of the sensitivity sweep relative to one calibration pass (prints only; no pass/fail).

The sweep ranks every node unit by the noise it adds itself from ONE analysis pass (float and
quantized model over the same held-out samples, :mod:`workbench.core.sensitivity`) instead of one
end-to-end run per unit. This prints, per model: units, calibration time, sweep time and the ratio.

    .venv/bin/python benchmarks/sensitivity_sweep.py [--corpus ../shared/corpus/models] [--samples 32]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from workbench.core import api
from workbench.core.sensitivity import local_sensitivity

MODELS = [("digits_transformer", "model_opset17.onnx"), ("ppocrv4_rec", "model.onnx")]


def measure(folder: Path, file: str, samples: int) -> tuple[int, float, float, list]:
    model = api.open_model(folder / file)
    recipe = api.make_recipe("cpu-u8s8")
    the_plan = api.plan(model, recipe)
    t0 = time.process_time()
    calib = api.calibrate(model, the_plan, str(folder / "calib.npz"), samples=samples)
    t_calib = time.process_time() - t0
    result = api.quantize(model, recipe, calibration=calib)
    t0 = time.process_time()
    rows = api.analyze(model, result, str(folder / "calib.npz"), samples=samples)
    ranking = local_sensitivity(result.plan, rows)
    t_sweep = time.process_time() - t0
    return len(result.plan.units), t_calib, t_sweep, ranking[:3]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "shared/corpus/models"))
    ap.add_argument("--samples", type=int, default=32)
    args = ap.parse_args()
    print("| model | units | calibration CPU s | sweep CPU s | sweep / calibration | most sensitive |")
    print("|---|---|---|---|---|---|")
    for name, file in MODELS:
        folder = Path(args.corpus) / name
        if not folder.is_dir():
            print(f"| {name} | skipped: {folder} not found | | | | |")
            continue
        units, tc, ts, top = measure(folder, file, args.samples)
        worst = ", ".join(f"{s.node} ({s.local_sqnr_db:.1f} dB)" for s in top)
        print(f"| {name} | {units} | {tc:.2f} | {ts:.2f} | {ts / tc:.2f} | {worst} |")


if __name__ == "__main__":
    main()
