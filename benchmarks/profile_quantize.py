"""Where a ``quantize`` run spends its CPU: cProfile over the CLI's quantize verb, as users run it.

Runs ``workbench-cli quantize MODEL --data CALIB --samples N -o OUT`` in this process under
:mod:`cProfile` (imports included: they are part of what a run costs) and prints the functions
with the most cumulative time, then the most own time. Prints only; never asserts.

    .venv/bin/python benchmarks/profile_quantize.py                    # minilm_l6_v2, 64 samples
    .venv/bin/python benchmarks/profile_quantize.py --model nudenet_320n --samples 32 --save q.prof
    .venv/bin/python benchmarks/profile_quantize.py --cpu --no-latency-check --no-auto   # as calibration_speed.py runs it

``--cpu`` times with the process CPU clock (``time.process_time``, all threads) instead of wall
time: on a loaded machine wall time mostly measures the other processes.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared")) / "corpus" / "models"

from workbench.cli import main as cli_main  # noqa: E402


def _model_file(name: str) -> Path:
    folder = CORPUS / name
    files = sorted(folder.glob("*.onnx"))
    return folder / "model.onnx" if (folder / "model.onnx").is_file() else files[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="minilm_l6_v2", help="corpus folder name")
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--top", type=int, default=35)
    ap.add_argument("--save", help="also write the raw profile here (for snakeviz / pstats)")
    ap.add_argument("--cpu", action="store_true", help="process CPU time instead of wall time")
    ap.add_argument("--no-latency-check", action="store_true", help="pass --no-latency-check to quantize")
    ap.add_argument("--no-auto", action="store_true", help="pass --no-auto to quantize (no recipe choice)")
    args = ap.parse_args()
    model = _model_file(args.model)
    with tempfile.TemporaryDirectory() as d:
        argv = ["quantize", str(model), "--data", str(model.parent / "calib.npz"), "--samples",
                str(args.samples), "-o", os.path.join(d, "q.onnx")]
        argv[2:2] = (["--no-latency-check"] if args.no_latency_check else []) + (["--no-auto"] if args.no_auto else [])
        prof = cProfile.Profile(time.process_time) if args.cpu else cProfile.Profile()
        rc = prof.runcall(cli_main, argv)
    if args.save:
        prof.dump_stats(args.save)
    stats = pstats.Stats(prof, stream=sys.stdout).strip_dirs()
    print(f"workbench-cli {' '.join(argv[:-2])} -> exit {rc} ({'CPU' if args.cpu else 'wall'} seconds)")
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top // 2)
    return rc


if __name__ == "__main__":
    sys.exit(main())
