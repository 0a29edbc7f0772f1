"""Whole-job speed: CPU time of ``workbench-cli quantize`` / float onnxruntime inference of the same rows.

For nudenet_320n, minilm_l6_v2 and ppocrv4_rec (shared corpus) at 64 and 256 samples (the corpus'
calib.npz repeated to N rows), every job runs in its own child process and is charged its user +
system CPU time (all threads, start-up included, ``os.wait4``; :mod:`job_children`):

- ``ours``: ``python -m workbench.cli quantize MODEL --data calib_N.npz --samples N -o OUT
  --no-latency-check --no-auto``, the CLI's defaults otherwise (preset cpu-u8s8, MinMax; ``--no-auto``
  so the preset's MinMax job is what is timed, not the recipe choice, which corpus_accuracy.py prices). ``--no-latency-check``
  because the latency check is a separate measurement, not quantization: it runs both models for a
  fixed 2 s budget at 1 thread (a wall-clock budget, so its CPU cost is about the same for 64 or 256
  samples) and is cached per model pair, so a user's second run of the job skips it anyway.
- ``ours hist``: the same with ``--recipe`` setting every activation's observer to ``--observer``
  (default percentile, a histogram observer; ``{"rules": [{"name": "*", "activation": {"observer": ...}}]}``).
- ``float``: import onnxruntime + numpy, load the model, run the same N rows (row 0 alone, then
  batches of the size the CLI's calibration picked, read from its debug log in a warm-up run), with
  the calibration session's options (thread spinning off).
- ``ort``: onnxruntime's ``quantize_static`` on the same rows and batches (QDQ, uint8 activations,
  int8 per-channel weights), MinMax and ``--ort-hist`` (default Percentile). onnxruntime's histogram
  calibrators hold every activation of every row in memory, so that child runs under an address
  space cap (``--cap-mib``) and a job over it prints as such instead of swamping the shared machine.
- ``first``: ``ours hist`` with ``NUMBA_CACHE_DIR`` and ``WORKBENCH_CACHE_DIR`` pointing to fresh empty
  folders each time (the first run after install) against ``ours hist`` with the warm caches. The observers'
  loops are compiled by llvmlite on a first run and their machine code kept under ``WORKBENCH_CACHE_DIR``
  (:mod:`workbench.core.formats.llvm_jit`), which later runs load; a MinMax-only job loads no compiled loops.

Repetitions are interleaved (every job once, then again) and each figure is the minimum CPU time
over ``--reps`` (load on the machine only ever adds time). Ratios are CPU / float CPU. Targets:
ours MinMax <= 1.3 at 256 samples, histogram observers <= 1.6, first run <= 1.5x the second.
``--step`` also prints the in-process calibration step alone (calibration_step.py). Prints only.

    .venv/bin/python benchmarks/calibration_speed.py [--models a,b] [--samples 64,256] [--reps 2]
        [--observer percentile] [--ort-hist Percentile] [--cap-mib 6144] [--step]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import onnxruntime as ort

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import job_children  # noqa: E402

CORPUS = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared")) / "corpus" / "models"
MODELS = {"nudenet_320n": "nudenet_320n/model.onnx", "minilm_l6_v2": "minilm_l6_v2/model.onnx",
          "ppocrv4_rec": "ppocrv4_rec/model.onnx"}
def jobs(model: Path, npz: Path, n: int, bs: int, folder: Path, recipe: Path, args, env: dict) -> dict:
    """name -> (argv, env, memory cap) of every child timed for one model and sample count."""
    child = [sys.executable, str(HERE / "job_children.py")]
    out = {
        "float": (child + ["float", str(model), str(npz), str(bs), str(n)], env, None),
        "ours": (job_children.cli_argv(model, npz, n, folder / "ours.onnx", None), env, None),
        f"ours {args.observer}": (job_children.cli_argv(model, npz, n, folder / "hist.onnx", recipe), env, None),
        "ort MinMax": (child + ["ort", "MinMax", str(model), str(npz), str(bs), str(n), str(folder / "ort.onnx")],
                       env, args.cap_mib),
        f"ort {args.ort_hist}": (child + ["ort", args.ort_hist, str(model), str(npz), str(bs), str(n),
                                          str(folder / "orth.onnx")], env, args.cap_mib),
    }
    if n in args.first_at:
        out["first"] = (job_children.cli_argv(model, npz, n, folder / "first.onnx", recipe), None, None)  # env per run
    return out


def bench(name: str, n: int, args, folder: Path, recipe: Path, env: dict) -> None:
    model = CORPUS / MODELS[name] if name in MODELS else job_children.model_file(CORPUS / name)
    npz = job_children.repeated_npz(model.parent, n, folder)
    bs = job_children.batch_size(model, npz, n, folder / "warm.onnx", env)
    todo = jobs(model, npz, n, bs, folder, recipe, args, env)
    if args.only:
        todo = {k: v for k, v in todo.items() if k == "float" or k in args.only.split(",")}
    cpu: dict[str, list[float]] = {k: [] for k in todo}
    failed: dict[str, str] = {}
    for _ in range(args.reps):
        for key, (argv, child_env, cap) in todo.items():
            if key in failed:
                continue
            if key == "first":
                child_env = {**env, "NUMBA_CACHE_DIR": tempfile.mkdtemp(dir=folder, prefix="numba-"),
                             "WORKBENCH_CACHE_DIR": tempfile.mkdtemp(dir=folder, prefix="cache-")}
            child = job_children.run(argv, child_env, cap)
            if child.rc != 0:
                last = (child.stderr.strip().splitlines() or ["?"])[-1][:160]
                oom = any(m in child.stderr for m in ("MemoryError", "bad_alloc", "Failed to allocate"))
                failed[key] = f"over the {cap} MiB cap" if cap and oom else f"exit {child.rc}: {last}"
                continue
            cpu[key].append(child.cpu)
    base = min(cpu["float"])
    cells = []
    for key in todo:
        if key == "float":
            continue
        if key in failed:
            cells.append(f"{key} {failed[key]}")
        elif key == "first":
            warm = min(cpu[f"ours {args.observer}"])
            cells.append(f"first run / second ({args.observer}) {min(cpu[key]) / warm:.2f} ({min(cpu[key]):.2f} s)")
        else:
            cells.append(f"{key} {min(cpu[key]) / base:.2f} ({min(cpu[key]):.2f} s)")
    print(f"{name:13s} {n:3d} samples  batch {bs:2d}  float {base:6.2f} s CPU  |  " + "  ".join(cells), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--samples", default="64,256", help="comma-separated sample counts")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--observer", default="percentile", help="our histogram observer (percentile, entropy, mse)")
    ap.add_argument("--ort-hist", default="Percentile", help="onnxruntime's histogram method (Percentile, Entropy)")
    ap.add_argument("--cap-mib", type=int, default=6144, help="address-space cap of onnxruntime's children")
    ap.add_argument("--first-at", default="256", help="sample counts at which to time the first run")
    ap.add_argument("--only", help="comma-separated job names to time (float is always timed), e.g. 'ours percentile,first'")
    ap.add_argument("--step", action="store_true", help="also the calibration step alone (calibration_step.py)")
    args = ap.parse_args()
    job_children.compile_package()
    args.first_at = {int(s) for s in args.first_at.split(",") if s}
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}")
        return
    print(f"whole job, CPU of each child process / CPU of float inference of the same rows (min of {args.reps} "
          f"interleaved); onnxruntime {ort.__version__}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        recipe = folder / "hist.json"
        recipe.write_text(json.dumps({"preset": "cpu-u8s8",
                                      "rules": [{"name": "*", "activation": {"observer": args.observer}}]}))
        env = {**os.environ, "NUMBA_CACHE_DIR": str(folder / "numba-warm"), "WORKBENCH_CACHE_DIR": str(folder / "cache-warm"),
               "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        for name in args.models.split(","):
            for n in (int(s) for s in args.samples.split(",")):
                bench(name, n, args, folder, recipe, env)
    if args.step:
        import calibration_step  # noqa: PLC0415 - the in-process step benchmark imports the core; only when asked

        with tempfile.TemporaryDirectory() as tmp:
            for name in ("nudenet_320n", "minilm_l6_v2"):
                calibration_step.bench(name, 256, args.reps, Path(tmp), False)
    print(f"load average at the end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
