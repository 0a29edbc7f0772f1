"""Whole-job memory: peak RSS of ``workbench-cli quantize`` (MinMax) vs onnxruntime's ``quantize_static`` MinMax.

For every ONNX file of the shared corpus (``manifest.json``) at 64 and 256 samples (the corpus'
calib.npz repeated to N rows), each job runs in a fresh child process and its peak resident set
(``ru_maxrss`` from ``os.wait4``, :mod:`job_children`) is read:

- ours: ``python -m workbench.cli quantize MODEL --data calib_N.npz --samples N -o OUT
  --no-latency-check`` (the CLI's defaults otherwise: preset cpu-u8s8, MinMax). ``--no-latency-check``
  because the latency check is a separate measurement after the job (two more sessions at 1 thread,
  cached per model pair), which onnxruntime's tool does not do.
- onnxruntime: ``quantize_static`` (QDQ, uint8 activations, int8 per-channel weights, MinMax) fed
  the same rows in the same batches (the batch size the CLI picked, read from its debug log in a
  warm-up run).

The parent process stays small (no onnxruntime, calibration files written by a child): Linux
starts a child's ``ru_maxrss`` at its parent's peak when it execs. Printed per file: both peaks
at 64 and 256 samples, ours / onnxruntime's at 256, and each side's growth 256 / 64. Targets: ours <= onnxruntime's, growth <= 1.1x. A model the CLI refuses (the
already-quantized one) prints its one-line refusal. Prints only.

    .venv/bin/python benchmarks/calibration_memory.py [--models a,b] [--samples 64,256] [--cap-mib 8192]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import job_children  # noqa: E402

SHARED = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared")) / "corpus"


def corpus_files() -> list[tuple[str, Path]]:
    """(name, model file) of every ONNX file the corpus manifest lists, in a fixed order."""
    manifest = json.loads((SHARED / "manifest.json").read_text())
    out = []
    for entry in manifest["models"]:
        rel = entry.get("path") or entry.get("file")
        model = SHARED / rel if (SHARED / rel).exists() else SHARED / "models" / rel
        out.append((f"{model.parent.name}/{model.name}", model))
    return sorted(out)


def measure(model: Path, counts: list[int], folder: Path, env: dict, cap: int) -> str:
    """One line: peaks (MiB) of ours and onnxruntime's at each count, ratio and growth."""
    npzs = {n: job_children.repeated_npz(model.parent, n, folder) for n in counts}
    try:
        bs = job_children.batch_size(model, npzs[counts[0]], counts[0], folder / "warm.onnx", env)
    except RuntimeError as exc:
        return f"refused by the CLI: {exc}"
    ours, theirs = {}, {}
    for n in counts:
        c = job_children.run(job_children.cli_argv(model, npzs[n], n, folder / "ours.onnx"), env)
        ours[n] = c.rss if c.rc == 0 else None
        c = job_children.run([sys.executable, str(HERE / "job_children.py"), "ort", "MinMax", str(model),
                              str(npzs[n]), str(bs), str(n), str(folder / "ort.onnx")], env, cap)
        theirs[n] = c.rss if c.rc == 0 else None

    def peaks(d: dict) -> str:
        return " / ".join("failed" if d[n] is None else f"{d[n]:6.0f}" for n in counts)

    lo, hi = counts[0], counts[-1]
    cells = [f"batch {bs:2d}", f"ours {peaks(ours)} MiB", f"onnxruntime {peaks(theirs)} MiB"]
    if ours[hi] and theirs[hi]:
        cells.append(f"ours / onnxruntime at {hi}: {ours[hi] / theirs[hi]:.2f}")
    if ours[lo] and ours[hi]:
        cells.append(f"growth {hi}/{lo}: ours {ours[hi] / ours[lo]:.2f}"
                     + (f", onnxruntime {theirs[hi] / theirs[lo]:.2f}" if theirs[lo] and theirs[hi] else ""))
    return "  ".join(cells)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated folder/file names (default: every corpus file)")
    ap.add_argument("--samples", default="64,256", help="comma-separated sample counts (lowest first)")
    ap.add_argument("--cap-mib", type=int, default=8192, help="address-space cap of onnxruntime's children")
    args = ap.parse_args()
    job_children.compile_package()
    if not (SHARED / "manifest.json").is_file():
        print(f"corpus not found at {SHARED}")
        return
    counts = sorted(int(s) for s in args.samples.split(","))
    wanted = set(args.models.split(",")) if args.models else None
    print(f"whole job, MinMax peak RSS in MiB at {' / '.join(map(str, counts))} samples; onnxruntime "
          f"{importlib.metadata.version('onnxruntime')}, {os.cpu_count()} CPUs, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}",
          flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ,
               "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        for name, model in corpus_files():
            if wanted and name not in wanted and model.parent.name not in wanted:
                continue
            print(f"{name:40s} {measure(model, counts, Path(tmp), env, args.cap_mib)}", flush=True)


if __name__ == "__main__":
    main()
