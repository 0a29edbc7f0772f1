"""Do the fanned-out verbs give the same answers on every executor? Runs ``sweep`` and ``autotune
--rank e2e`` of one corpus model through the CLI with ``--executor inline``, ``processes`` and ``ray``
(a private 2-worker Ray instance on 127.0.0.1) and compares the sweep tables, the promoted units, the
autotune curves and the written models' bytes::

    python scripts/executor_parity.py ppocrv4_rec --metric examples/metrics/ppocr_rec_exact.py \\
        --recipe examples/recipes/ppocrv4_rec.json --eval-samples 20 --max-drop 0.05

Exit status 1 when any executor differs from inline.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "models"


def cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "workbench.cli", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--metric", default="top1")
    ap.add_argument("--recipe")
    ap.add_argument("--samples", default="64")
    ap.add_argument("--eval-samples", default="20")
    ap.add_argument("--max-drop", default="0.01")
    ap.add_argument("--candidates", default="6")
    args = ap.parse_args()
    folder = CORPUS / args.model
    model = str(next(folder.glob("*.onnx")))
    data, ev = str(folder / "calib.npz"), str(folder / "eval.npz")
    recipe = ["--recipe", args.recipe] if args.recipe else []
    code = ["--allow-code"] if args.metric.endswith(".py") else []
    got = {}
    with tempfile.TemporaryDirectory() as tmp:
        for ex in ("inline", "processes", "ray"):
            sweep, out, curve = (Path(tmp) / f"{ex}.{s}" for s in ("sweep.json", "onnx", "curve.json"))
            cli("sweep", model, "--data", data, "--samples", args.samples, "--eval", ev, *recipe, "--executor", ex,
                "--json", str(sweep))
            cli("autotune", model, "--data", data, "--samples", args.samples, "--eval", ev, "--eval-samples",
                args.eval_samples, "--metric", args.metric, *code, "--max-drop", args.max_drop, "--rank", "e2e",
                "--e2e-candidates", args.candidates, *recipe, "--executor", ex, "-o", str(out),
                "--curve-json", str(curve))
            table = json.loads(sweep.read_text())
            got[ex] = {"sweep ranking": [r["node"] for r in table["rows"]], "sweep table": table,
                       "autotune curve": json.loads(curve.read_text()),
                       "model sha256": hashlib.sha256(out.read_bytes()).hexdigest()}
            print(f"{ex:9s} sweep rows {len(table['rows'])}, model {got[ex]['model sha256'][:16]}", flush=True)
    bad = [f"{ex}: {k}" for ex in ("processes", "ray") for k in got["inline"] if got[ex][k] != got["inline"][k]]
    print("identical on every executor" if not bad else "DIFFERENT: " + ", ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
