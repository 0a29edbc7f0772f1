"""Cost of the sensitivity sweep relative to one calibration pass (prints only; no pass/fail).

The sweep (:func:`workbench.core.analysis.sensitivity.sensitivity_sweep`) measures every unit's own
error in one pass of all unit fragments, caches the float and the QDQ model's activations once,
then runs, for the ``--top`` units with the worst own error (all units with ``--top 0``), two
suffix models per unit (only it quantized / only it float) from the cached activations. All three
steps run on the executor users get by default
(:func:`~workbench.core.analysis.executors.default_executor`: one local process per core, started
once; ``--executor inline`` for one process). Reported: wall seconds and CPU seconds (this
process's threads plus the worker processes, which end before the clock is read), each as
sweep / one calibration pass. State the load average next to any figure: on a shared machine the
wall-time ratio follows how many runnable threads each step has.

    .venv/bin/python benchmarks/sensitivity_sweep.py [--corpus DIR] [--calib-samples 32]
        [--samples 8] [--top N (default: workbench-cli sweep's --top-units, 16)] [--models digits_transformer ppocrv4_rec] [--executor inline]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

from workbench.cli import SWEEP_TOP_UNITS
from workbench.core import api
from workbench.core.analysis.executors import make_executor
from workbench.core.analysis.sensitivity import sensitivity_sweep
from workbench.core.runtime.session import describe_runtime

FILES = {"digits_transformer": "model_opset17.onnx", "digits_cnn": "model_opset17.onnx",
         "ppocrv4_rec": "model.onnx"}


def _clocks() -> tuple[float, float]:
    """(wall s, CPU s of this process and of its finished children)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), time.process_time() + kids.ru_utime + kids.ru_stime


def measure(folder: Path, file: str, args) -> tuple[int, tuple[float, float], tuple[float, float], object]:
    model = api.open_model(folder / file)
    recipe = api.make_recipe("cpu-u8s8")
    the_plan = api.plan(model, recipe)
    data = str(folder / "calib.npz")
    w0, c0 = _clocks()
    calib = api.calibrate(model, the_plan, data, samples=args.calib_samples)
    w1, c1 = _clocks()
    result = api.quantize(model, recipe, calibration=calib)
    w2, c2 = _clocks()
    sweep = sensitivity_sweep(model, result, data, samples=args.samples, top=args.top or None,
                              executor=make_executor(args.executor))  # its workers end before it returns
    w3, c3 = _clocks()
    return len(sweep.rows), (w1 - w0, c1 - c0), (w3 - w2, c3 - c2), sweep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "shared/corpus/models"))
    ap.add_argument("--calib-samples", type=int, default=32)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--top", type=int, default=SWEEP_TOP_UNITS,
                    help=f"units measured end to end (0: all; default {SWEEP_TOP_UNITS}, workbench-cli sweep's)")
    ap.add_argument("--models", nargs="+", default=["digits_transformer", "ppocrv4_rec"])
    ap.add_argument("--executor", help="inline, processes[:N] or ray (default: the sweep's default, one process per core)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} cores; calibration {args.calib_samples} samples, "
          f"sweep {args.samples} samples, end-to-end for {args.top or 'all'} units "
          f"({args.executor or 'default'} executor: {type(make_executor(args.executor)).__name__}); "
          f"quantized graphs measured with {describe_runtime(False)}")
    print("| model | units | e2e units | calibration wall / CPU s | sweep wall / CPU s | sweep / calibration wall "
          "| CPU | worst (only it quantized) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.models:
        folder = Path(args.corpus) / name
        if not folder.is_dir():
            print(f"| {name} | skipped: {folder} not found | | | | | | |")
            continue
        units, tc, ts, sweep = measure(folder, FILES.get(name, "model.onnx"), args)
        worst = ", ".join(f"{r.node} ({r.only_quant_db:.1f} dB)" for r in sweep.rows[:2])
        print(f"| {name} | {units} | {sweep.tasks // 2} | {tc[0]:.2f} / {tc[1]:.2f} | {ts[0]:.2f} / {ts[1]:.2f} "
              f"| {ts[0] / tc[0]:.2f} | {ts[1] / tc[1]:.2f} | {worst} |", flush=True)


if __name__ == "__main__":
    main()
