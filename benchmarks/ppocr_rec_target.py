"""ppocrv4_rec exact line match with a recipe, over several calibration draws (issue #5).

Quantizes ``../shared/corpus/models/ppocrv4_rec/model.onnx`` with a recipe file (default: the
shipped ``examples/recipes/ppocrv4_rec.json``) from several calibration subsets of calib.npz (the
first N rows, rows 32..63, the odd rows, the rows reversed), and prints the exact line match on the
100-line eval split and the share of Conv/MatMul/Gemm units with 8-bit activations.

Usage::

    .venv/bin/python benchmarks/ppocr_rec_target.py [--recipe FILE.json] [--draws first:32 odd:32 ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.core import api  # noqa: E402
from workbench.core.analysis.metrics import ctc_greedy_decode  # noqa: E402
from workbench.core.runtime.session import make_session  # noqa: E402

FOLDER = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared")) / "corpus/models/ppocrv4_rec"
DRAWS = ["first:16", "first:32", "first:48", "first:64", "last:32", "odd:32", "reversed:24", "reversed:40"]


def subset(calib: np.ndarray, kind: str) -> np.ndarray:
    return {"first": calib, "last": calib[32:], "odd": calib[1::2], "reversed": calib[::-1]}[kind]


def exact(proto, x: np.ndarray, gts: list[str], charset: list[str]) -> float:
    sess = make_session(proto)
    probs = np.concatenate([sess.run(None, {"x": x[i:i + 25]})[0] for i in range(0, len(x), 25)])
    texts = [t.strip() for t in ctc_greedy_decode(probs, charset, blank=0)]
    return float(np.mean([p == g for p, g in zip(texts, gts, strict=True)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recipe", default=str(ROOT / "examples/recipes/ppocrv4_rec.json"))
    ap.add_argument("--draws", nargs="*", default=DRAWS, help="KIND:N with KIND first|last|odd|reversed")
    args = ap.parse_args()
    model = api.open_model(FOLDER / "model.onnx")
    recipe = api.load_recipe(args.recipe)
    charset = (FOLDER / "charset.txt").read_text(encoding="utf-8").split("\n")
    with np.load(FOLDER / "eval.npz") as z:
        x, gts = z["x"], [str(t) for t in z["gt_text"]]
    with np.load(FOLDER / "calib.npz") as z:
        calib = z["x"]
    print(f"recipe {args.recipe}; load average {os.getloadavg()[0]:.1f}")
    print("| calibration draw | exact | Conv/MatMul/Gemm 8-bit | CPU s |\n|---|---|---|---|")
    scores = []
    with tempfile.TemporaryDirectory() as tmp:
        for draw in args.draws:
            kind, n = draw.split(":")
            path = Path(tmp) / f"{kind}.npz"
            np.savez(path, x=subset(calib, kind))
            t0 = time.process_time()
            res = api.quantize(model, recipe, data=str(path), samples=int(n))
            score = exact(res.proto, x, gts, charset)
            units = [u for u in res.plan.units.values() if u.op_type in ("Conv", "MatMul", "Gemm")]
            q8 = [u for u in units if not u.excluded and u.config.activation is not None
                  and u.config.activation.qtype.bits == 8]
            scores.append(score)
            print(f"| {draw} | {score:.2f} | {len(q8)}/{len(units)} | {time.process_time() - t0:.0f} |", flush=True)
    print(f"mean {np.mean(scores):.3f}, min {np.min(scores):.2f}, float 0.95")


if __name__ == "__main__":
    main()
