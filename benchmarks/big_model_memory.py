"""Big-model memory: peak RSS of the whole quantize (open + calibrate + write + export) of a
synthetic float model above 2 GiB in external data, divided by the float weight bytes, for a
dynamic recipe (no calibration) and a static one (cpu-u8s8, 4 random calibration samples through
onnxruntime), each in a fresh subprocess. Target (issue #6): ratio <= 1.5. Prints only.
``--prepack`` lets onnxruntime prepack the weights in the calibration session (off by default for
weights kept on disk, see ``workbench.core.io.external.PREPACK``).

    .venv/bin/python benchmarks/big_model_memory.py [--dims 16384x16384,16384x16384,16384x1024]

Needs about twice the model size in free disk space in the temp folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, os, sys, time
from workbench.core import api
from workbench.core.io import external
src, out, preset = sys.argv[1], sys.argv[2], sys.argv[3]
external.PREPACK = sys.argv[4] == "1"
t0, c0 = time.perf_counter(), time.process_time()
model = api.open_model(src)
t_open = time.perf_counter() - t0
data = {"kind": "random", "count": 4, "seed": 0} if preset != "dynamic-u8" else None
result = api.quantize(model, api.make_recipe(preset), data=data, samples=4)
del model
t_quant = time.perf_counter() - t0 - t_open
api.export(result, out)
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) * 1024  # own peak
print(json.dumps({"peak": peak,
                  "open_s": t_open, "quantize_s": t_quant, "total_s": time.perf_counter() - t0,
                  "cpu_s": time.process_time() - c0, "data": os.path.getsize(out + ".data")
                  if os.path.exists(out + ".data") else 0}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dims", default="16384x16384,16384x16384,16384x1024")
    ap.add_argument("--presets", default="dynamic-u8,cpu-u8s8")
    ap.add_argument("--prepack", action="store_true", help="let onnxruntime prepack weights (a second copy)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.test_big_model import _generate

    dims = tuple(tuple(int(v) for v in d.split("x")) for d in args.dims.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        src, float_bytes = _generate(Path(tmp), dims=dims)
        for preset in args.presets.split(","):
            out = Path(tmp) / f"q_{preset}.onnx"
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", CHILD, str(src), str(out), preset,
                                   "1" if args.prepack else "0"],
                                  capture_output=True, text=True, cwd=ROOT)
            if proc.returncode:
                print(preset, "failed:", proc.stderr[-1500:])
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{preset:11s} float {float_bytes / 2**30:.2f} GiB  peak RSS {r['peak'] / 2**30:.2f} GiB  "
                  f"ratio {r['peak'] / float_bytes:.2f}  open {r['open_s']:.1f} s  quantize {r['quantize_s']:.1f} s  "
                  f"total {r['total_s']:.1f} s (cpu {r['cpu_s']:.1f} s, wall incl. start "
                  f"{time.perf_counter() - t:.1f} s)  .data {r['data'] / 2**20:.0f} MiB")
            out.unlink(missing_ok=True)
            Path(str(out) + ".data").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
