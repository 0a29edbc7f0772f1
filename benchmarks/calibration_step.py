"""Calibration step only: in-process CPU time of calibrate() / plain float onnxruntime inference.

The whole ``quantize`` job (start-up, planning, writing) is timed by calibration_speed.py; this
benchmark isolates the calibration step.

For digits_cnn, nudenet_320n and minilm_l6_v2 (shared corpus), 256 calibration samples (the
corpus' calib.npz repeated to 256), the cpu-u8s8 plan's activation tensors observed with
MinMax, Percentile and Entropy. The baseline runs the same batches (same grouping, sample 0
alone first, as calibrate's batch-size probe does) through a plain session of the float model;
both sides include creating their session. The ratio is against plain inference with the SAME
session options as calibration (onnxruntime's thread spinning off, ``workbench.core.calibration.instrument.SPIN``;
scheduling only, same kernels and values); the figure in brackets divides by plain inference with
default options (spinning threads burn CPU while idle, which flatters calibration). CPU time is the
process's user + system time (all onnxruntime threads). Each figure is the minimum over
``--reps`` interleaved repetitions (other load on the machine only ever adds time); a model
whose plain pass takes under 0.5 s is timed as the mean of several passes per repetition.
``--compare`` also times calibration with every tensor fetched (``calibrate.DERIVE = False``, no
derived observers), interleaved in the same repetitions. ``--updates`` first prints the CPU time
per element of observer updates alone, compiled loops vs the numpy fallback (40 tensors of 1 Mi
float32 values cycled, so they come from memory as onnxruntime's outputs do). Targets: <= 1.3 for MinMax, <= 1.6 for
the histogram observers. Prints only.

    .venv/bin/python benchmarks/calibration_step.py [--models a,b] [--samples 256] [--reps 3] [--compare]
        [--updates]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.core.api import make_recipe  # noqa: E402
from workbench.core.calibration import calibrate as calib_mod  # noqa: E402
from workbench.core.calibration.instrument import session_options  # noqa: E402
from workbench.core.calibration.observers import kernels, make_observer  # noqa: E402
from workbench.core.data.loader import open_data  # noqa: E402
from workbench.core.model.load import load_model  # noqa: E402
from workbench.core.planning.plan import build_plan  # noqa: E402
from workbench.core.recipe.spec import QuantSpec  # noqa: E402

CORPUS = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared")) / "corpus" / "models"
MODELS = {"digits_cnn": "digits_cnn/model_opset17.onnx", "nudenet_320n": "nudenet_320n/model.onnx",
          "minilm_l6_v2": "minilm_l6_v2/model.onnx"}
OBSERVERS = ("minmax", "percentile", "entropy")


class Plan:
    """The activations of a real plan with every spec's observer replaced."""

    def __init__(self, activations):
        self.activations = activations


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def repeated_npz(model_dir: Path, n: int, folder: Path) -> Path:
    """calib.npz (batch layout) with its rows repeated to ``n``."""
    with np.load(model_dir / "calib.npz") as z:
        arrays = {k: z[k] for k in z.files if not k.startswith("gt_")}
    rows = next(iter(arrays.values())).shape[0]
    reps = -(-n // rows)
    out = folder / f"{model_dir.name}_{n}.npz"
    np.savez(out, **{k: np.concatenate([v] * reps)[:n] for k, v in arrays.items()})
    return out


def plain(model, source, batch_size: int, n: int, spinning: bool = True) -> float:
    """CPU seconds of plain float inference over calibrate's batches (session creation and release included)."""
    t0 = cpu()
    sess = ort.InferenceSession(model.proto.SerializeToString(), session_options(spinning=spinning),
                                providers=["CPUExecutionProvider"])
    sess.run(None, next(iter(source.samples(1))))
    for idx, feed in source.indexed_batches(batch_size, n):
        if idx[0] == 0:
            idx, feed = idx[1:], {k: v[1:] for k, v in feed.items()}
            if not idx:
                continue
        sess.run(None, feed)
    del sess  # released inside the timing, as calibrate releases its session
    return cpu() - t0


def calibrated(model, plan, source, n: int, inner: int = 1, derive: bool = True,
               batch_size: int | None = None) -> tuple[float, float, int]:
    calib_mod.DERIVE = derive
    t0, w0 = cpu(), time.perf_counter()
    for _ in range(inner):
        res = calib_mod.calibrate(model, plan, source, samples=n, batch_size=batch_size)
    calib_mod.DERIVE = True
    return (cpu() - t0) / inner, (time.perf_counter() - w0) / inner, res.batch_size


def repeat(inner: int, *args, **kw) -> float:
    return sum(plain(*args, **kw) for _ in range(inner)) / inner


def bench(name: str, n: int, reps: int, folder: Path, compare: bool) -> None:
    path = CORPUS / MODELS[name]
    model = load_model(path)
    base = build_plan(model, make_recipe("cpu-u8s8")).activations
    source = open_data(repeated_npz(path.parent, n, folder), model)
    plans = {o: Plan({t: s.model_copy(update={"observer": o}) for t, s in base.items()}) for o in OBSERVERS}
    modes = (True, False) if compare else (True,)
    cal: dict[tuple, list[float]] = {(o, d): [] for o in OBSERVERS for d in modes}
    walls: dict[tuple, list[float]] = {(o, d): [] for o in OBSERVERS for d in modes}
    bases: list[float] = []
    spin: list[float] = []
    bs = calibrated(model, plans["minmax"], source, min(n, 2))[2]  # warm-up; batch size as calibrate picks it
    inner = max(1, min(50, int(0.5 / max(plain(model, source, bs, n), 1e-3))))  # tiny models: average
    for _ in range(reps):
        for o in OBSERVERS:
            for d in modes:  # the direct run uses the same batch size, so both see the same batches
                c, w, _ = calibrated(model, plans[o], source, n, inner, derive=d, batch_size=bs)
                cal[(o, d)].append(c)
                walls[(o, d)].append(w)
            bases.append(repeat(inner, model, source, bs, n, spinning=False))
            spin.append(repeat(inner, model, source, bs, n))
    b, q = min(bases), min(spin)

    def cell(o: str, d: bool) -> str:
        c = min(cal[(o, d)])
        return f"{c / b:5.2f} [{c / q:5.2f}] ({c:6.2f} s, wall {min(walls[(o, d)]):6.2f} s)"

    cells = "  ".join(f"{o} {cell(o, True)}" + (f" direct {cell(o, False)}" if compare else "") for o in OBSERVERS)
    print(f"calibration step only: {name:13s} {len(base):4d} tensors  batch {bs:2d}  plain {b:6.2f} s CPU [default options {q:6.2f} s]  |  "
          f"{cells}", flush=True)


def updates(reps: int) -> None:
    """ns per element of observer updates, compiled loops vs numpy (min over ``reps``)."""
    rng = np.random.default_rng(0)
    tensors = [rng.standard_normal(1 << 20).astype(np.float32) * (1 + i % 7) for i in range(40)]
    tensors[1::2] = [np.maximum(t, 0) for t in tensors[1::2]]  # ReLU outputs: a spike at 0
    n = sum(t.size for t in tensors)
    for o in OBSERVERS:
        cells = []
        for numpy_path in (True, False):
            kernels.ENABLED = not numpy_path
            best = np.inf
            for _ in range(reps):
                obs = [make_observer(QuantSpec(observer=o)) for _ in range(8)]
                t0 = cpu()
                for i, t in enumerate(tensors):
                    obs[i % 8].update(t)
                best = min(best, cpu() - t0)
            cells.append(f"{'numpy' if numpy_path else 'llvm'} {best / n * 1e9:5.2f} ns")
        kernels.ENABLED = None
        print(f"updates {o:10s} {'  '.join(cells)} per element", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-pipeline", action="store_true", help="observe and run in sequence")
    ap.add_argument("--compare", action="store_true", help="also time calibration without derived observers")
    ap.add_argument("--updates", action="store_true", help="first time observer updates alone (compiled vs numpy)")
    args = ap.parse_args()
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}")
        return
    calib_mod.PIPELINE = not args.no_pipeline
    print(f"CALIBRATION STEP ONLY (not the whole job): onnxruntime {ort.__version__}, {os.cpu_count()} CPUs, "
          f"{args.samples} samples, "
          f"pipeline {calib_mod.PIPELINE}; ratio = calibration CPU / plain inference CPU, same session options "
          f"(spinning off) [/ plain inference with default options] (min of {args.reps}); "
          f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.updates:
        updates(args.reps)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            bench(name, args.samples, args.reps, Path(tmp), args.compare)
    print(f"load average at the end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
