"""Calibration memory: peak RSS of Percentile and Entropy calibration of minilm_l6_v2 with 32 and
with 256 samples, each in a fresh subprocess. Streaming observers and one batch in flight mean
the peak must not grow with the number of samples (target: ratio 256 / 32 <= 1.15). Prints only.

    .venv/bin/python benchmarks/calibration_memory.py
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared")) / "corpus" / "models"
MODEL = CORPUS / "minilm_l6_v2" / "model.onnx"


def child(observer: str, npz: str, n: int) -> None:
    """Run one calibration and print a JSON line with the peak RSS (MiB)."""
    sys.path.insert(0, str(ROOT))
    from workbench.core.api import make_recipe
    from workbench.core.calibration.calibrate import calibrate
    from workbench.core.data.loader import open_data
    from workbench.core.model.load import load_model
    from workbench.core.planning.plan import build_plan

    model = load_model(MODEL)
    acts = build_plan(model, make_recipe("cpu-u8s8")).activations

    class Plan:
        activations = {t: s.model_copy(update={"observer": observer}) for t, s in acts.items()}

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    res = calibrate(model, Plan(), open_data(npz, model), samples=n)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_mib": peak, "before_mib": before, "samples": res.samples_seen,
                      "batch": res.batch_size}))


def repeated(n: int, folder: Path) -> Path:
    with np.load(MODEL.parent / "calib.npz") as z:
        arrays = {k: z[k] for k in z.files if not k.startswith("gt_")}
    rows = next(iter(arrays.values())).shape[0]
    out = folder / f"calib_{n}.npz"
    np.savez(out, **{k: np.concatenate([v] * -(-n // rows))[:n] for k, v in arrays.items()})
    return out


def main() -> None:
    if len(sys.argv) == 4:
        child(sys.argv[1], sys.argv[2], int(sys.argv[3]))
        return
    if not MODEL.is_file():
        print(f"model not found at {MODEL}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        for observer in ("percentile", "entropy"):
            peaks = {}
            for n in (32, 256):
                out = subprocess.run([sys.executable, __file__, observer, str(repeated(n, Path(tmp))), str(n)],
                                     capture_output=True, text=True, check=True)
                peaks[n] = json.loads(out.stdout.strip().splitlines()[-1])
            p32, p256 = peaks[32]["peak_mib"], peaks[256]["peak_mib"]
            print(f"minilm_l6_v2 {observer:10s} peak RSS 32 samples {p32:7.1f} MiB, 256 samples {p256:7.1f} MiB "
                  f"(after model load {peaks[32]['before_mib']:.0f} MiB, batch {peaks[256]['batch']}): "
                  f"ratio {p256 / p32:.3f}", flush=True)


if __name__ == "__main__":
    main()
