"""Cost of the sensitivity sweep relative to one calibration pass (prints only; no pass/fail).

The sweep (:func:`workbench.core.analysis.sensitivity.sensitivity_sweep`) caches the float and the QDQ
model's activations once, measures every unit's own error in one pass of all unit fragments, then
runs, for the ``--top`` units with the worst own error (all units with ``--top 0``), two suffix
models per unit (only it quantized / only it float) from the cached activations. Times are CPU
seconds (``time.process_time``: all threads of this process); the ratio is sweep / calibration.

    .venv/bin/python benchmarks/sensitivity_sweep.py [--corpus DIR] [--calib-samples 32]
        [--samples 8] [--top 16] [--models digits_transformer ppocrv4_rec]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from workbench.core import api
from workbench.core.analysis.executors import InlineExecutor
from workbench.core.analysis.sensitivity import sensitivity_sweep
from workbench.core.runtime.session import describe_runtime

FILES = {"digits_transformer": "model_opset17.onnx", "digits_cnn": "model_opset17.onnx",
         "ppocrv4_rec": "model.onnx"}


def measure(folder: Path, file: str, args) -> tuple[int, float, float, object]:
    model = api.open_model(folder / file)
    recipe = api.make_recipe("cpu-u8s8")
    the_plan = api.plan(model, recipe)
    data = str(folder / "calib.npz")
    t0 = time.process_time()
    calib = api.calibrate(model, the_plan, data, samples=args.calib_samples)
    t_calib = time.process_time() - t0
    result = api.quantize(model, recipe, calibration=calib)
    t0 = time.process_time()
    sweep = sensitivity_sweep(model, result, data, samples=args.samples, top=args.top or None,
                              executor=InlineExecutor())
    t_sweep = time.process_time() - t0
    return len(sweep.rows), t_calib, t_sweep, sweep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "shared/corpus/models"))
    ap.add_argument("--calib-samples", type=int, default=32)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--top", type=int, default=16, help="units measured end to end (0: all)")
    ap.add_argument("--models", nargs="+", default=["digits_transformer", "ppocrv4_rec"])
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; calibration {args.calib_samples} samples, sweep "
          f"{args.samples} samples, end-to-end for {args.top or 'all'} units (inline executor); quantized graphs "
          f"measured with {describe_runtime(False)}")
    print("| model | units | e2e units | calibration CPU s | sweep CPU s | sweep / calibration | worst (only it "
          "quantized) |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models:
        folder = Path(args.corpus) / name
        if not folder.is_dir():
            print(f"| {name} | skipped: {folder} not found | | | | | |")
            continue
        units, tc, ts, sweep = measure(folder, FILES.get(name, "model.onnx"), args)
        worst = ", ".join(f"{r.node} ({r.only_quant_db:.1f} dB)" for r in sweep.rows[:2])
        print(f"| {name} | {units} | {sweep.tasks // 2} | {tc:.2f} | {ts:.2f} | {ts / tc:.2f} | {worst} |",
              flush=True)


if __name__ == "__main__":
    main()
