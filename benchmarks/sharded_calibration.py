"""Sharded calibration on Ray: wall time of one pass vs shards on 1 and 2 Ray workers, and how far
the merged qparams are from the single pass (MinMax: bit-identical expected; histogram observers:
range difference in bins of the merged histogram's grid).

    python benchmarks/sharded_calibration.py --model minilm_l6_v2 --shards 4

Prints measured figures; never pass/fail. The Ray figures include starting a private local Ray
instance (about 5-8 s here) once per calibration.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

from workbench.core import api
from workbench.core.analysis.executors import RayExecutor
from workbench.core.pipeline.sharded import calibrate_sharded

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared")) / "corpus" / "models"


def _recipe(observer: str):
    return api.make_recipe("cpu-u8s8", rules=[{"name": "*", "activation": {"observer": observer}}])


def _bins_apart(one, merged) -> tuple[int, int, float]:
    """(tensors, identical qparams, worst range difference in bins of the merged grid)."""
    a, b = one.qparams(), merged.qparams()
    same = sum(np.array_equal(a[t].scale, b[t].scale) and np.array_equal(a[t].zero_point, b[t].zero_point) for t in a)
    worst = 0.0
    for t, obs in merged.observers.items():
        hists = getattr(obs, "hists", None)
        if hists and hists[0].lo is not None and hists[0].width > 0:
            worst = max(worst, float(np.max(np.abs(a[t].scale - b[t].scale))) * 255 / hists[0].width)
    return len(a), int(same), worst


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="minilm_l6_v2")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--observers", default="minmax,percentile,entropy")
    args = ap.parse_args()
    folder = CORPUS / args.model
    model = api.open_model(next(folder.glob("*.onnx")))
    calib = str(folder / "calib.npz")
    flags = open("/proc/cpuinfo").read().split() if Path("/proc/cpuinfo").exists() else []
    vnni = "avx512_vnni" if "avx512_vnni" in flags else "avx_vnni" if "avx_vnni" in flags else "no VNNI"
    print(f"{args.model}, {args.shards} shards, {os.cpu_count()} cores, {platform.machine()} {vnni}")
    for observer in args.observers.split(","):
        recipe = _recipe(observer)
        t = time.perf_counter()
        one = api.calibrate(model, api.plan(model, recipe, guard=True), calib)
        single = time.perf_counter() - t
        walls = {}
        for workers in (1, 2):
            t = time.perf_counter()
            merged = calibrate_sharded(model, recipe, calib, shards=args.shards, executor=RayExecutor(workers=workers))
            walls[workers] = time.perf_counter() - t
        n, same, bins = _bins_apart(one, merged)
        print(f"{observer:10s} single pass {single:6.1f} s | Ray 1 worker {walls[1]:6.1f} s, 2 workers {walls[2]:6.1f} s "
              f"(overhead vs single {walls[2] / single:4.2f}x) | qparams identical {same}/{n}, "
              f"worst range difference {bins:.1f} bins")


if __name__ == "__main__":
    main()
