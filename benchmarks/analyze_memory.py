"""Peak RSS of ``workbench-cli analyze`` against ``quantize`` of the same model (prints only).

Each command runs in its own child process (:mod:`job_children`, peak resident set from ``os.wait4``),
as a user runs it: CLI defaults, the corpus' calib.npz for calibration and eval.npz for the errors:

- ``quantize MODEL --data calib.npz -o OUT``
- ``analyze MODEL --data calib.npz --eval eval.npz --eval-samples N`` for each N of ``--eval-samples``
  (eval.npz repeated to the largest N rows first, so every N has the rows it asks for)

Printed per model: each peak in MiB, analyze / quantize for each N, and the largest N's peak / the
smallest N's (memory flat in the number of eval rows). Targets (issue 14): analyze <= 1.5x quantize,
and 64 rows within 1.1x of 16. State the load average and CPU flags with any figure.

    .venv/bin/python benchmarks/analyze_memory.py [--models ppocrv4_rec] [--eval-samples 16,64]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import job_children  # noqa: E402

CORPUS = Path(os.environ.get("WORKBENCH_SHARED", HERE.parents[1] / "shared")) / "corpus" / "models"


def repeated_eval(folder: Path, n: int, out_dir: Path) -> Path:
    """eval.npz with its rows repeated to at least ``n`` (written by a child, so this process stays small)."""
    out = out_dir / f"{folder.name}_eval_{n}.npz"
    code = ("import numpy as np, sys; z = np.load(sys.argv[1]); a = {k: z[k] for k in z.files}; "
            "r = next(iter(a.values())).shape[0]; n = int(sys.argv[2]); "
            "np.savez(sys.argv[3], **{k: np.concatenate([v] * -(-n // r))[:max(n, r)] for k, v in a.items()})")
    subprocess.run([sys.executable, "-c", code, str(folder / "eval.npz"), str(n), str(out)], check=True)
    return out


def bench(name: str, counts: list[int], tmp: Path) -> None:
    folder = CORPUS / name
    model, calib = job_children.model_file(folder), folder / "calib.npz"
    cli = [sys.executable, "-m", "workbench.cli"]
    quant = job_children.run(cli + ["quantize", str(model), "--data", str(calib), "-o", str(tmp / "q.onnx")])
    if quant.rc != 0:
        print(f"{name}: quantize failed: {quant.stderr.strip().splitlines()[-1][:200]}")
        return
    evals = repeated_eval(folder, max(counts), tmp)
    peaks = {}
    for n in counts:
        child = job_children.run(cli + ["analyze", str(model), "--data", str(calib), "--eval", str(evals),
                                        "--eval-samples", str(n)])
        if child.rc != 0:
            print(f"{name}: analyze --eval-samples {n} failed: {child.stderr.strip().splitlines()[-1][:200]}")
            return
        peaks[n] = child.rss
    cells = "  ".join(f"analyze {n} rows {peaks[n]:.0f} MiB = {peaks[n] / quant.rss:.2f}x" for n in counts)
    print(f"{name:13s} quantize {quant.rss:.0f} MiB  |  {cells}  |  {max(counts)} / {min(counts)} rows: "
          f"{peaks[max(counts)] / peaks[min(counts)]:.3f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="ppocrv4_rec", help="comma-separated corpus folders")
    ap.add_argument("--eval-samples", default="16,64", help="comma-separated eval row counts")
    args = ap.parse_args()
    job_children.compile_package()
    counts = sorted(int(x) for x in args.eval_samples.split(","))
    print(f"peak RSS of whole CLI runs (CLI defaults); {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            bench(name, counts, Path(tmp))


if __name__ == "__main__":
    main()
