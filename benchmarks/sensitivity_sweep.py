"""Cost of the sensitivity sweep relative to one calibration pass (prints only; no pass/fail).

The sweep (:func:`workbench.core.analysis.sensitivity.sensitivity_sweep`) measures every unit's own
error in one pass of all unit fragments, caches the float and the QDQ model's activations once,
then runs, for the ``--top`` units with the worst own error (all units with ``--top 0``), two
suffix models per unit (only it quantized / only it float) from the cached activations. All three
steps run on the executor users get by default (``workbench-cli sweep`` without ``--executor``:
:func:`~workbench.core.analysis.sensitivity.sweep_executor`, one thread per core in this process;
``--executor inline`` for one thread, ``processes[:N]`` for local processes). Reported: wall seconds
and CPU seconds (this process's threads plus the worker processes, which end before the clock is
read), each as sweep / one calibration pass, then where the sweep's wall and CPU time go (its
phases, as its progress messages mark them; the CPU split is this process's, so it misses worker
processes' time until the last phase). State the load average next to any figure: on a shared
machine the wall-time ratio follows how many runnable threads each step has.

The denominator is ``api.calibrate`` with the recipe's observers over the rows ``workbench-cli
sweep`` calibrates on by default: every row of ``--data`` (64 in ppocrv4_rec's calib.npz, 100 in
digits_transformer's); ``--calib-samples N`` takes the first N instead (earlier tables used 32).
The CLI's job may first choose a recipe variant and times the model (the latency check), so it
costs more than this pass.

    .venv/bin/python benchmarks/sensitivity_sweep.py [--corpus DIR] [--calib-samples N (default: all rows)]
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
from workbench.core.analysis.sensitivity import sensitivity_sweep, sweep_executor
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
    calib = api.calibrate(model, the_plan, data, samples=args.calib_samples or None)
    w1, c1 = _clocks()
    result = api.quantize(model, recipe, calibration=calib)
    phases = Phases()
    w2, c2 = _clocks()
    sweep = sensitivity_sweep(model, result, data, samples=args.samples, top=args.top or None,
                              executor=make_executor(args.executor) if args.executor else None,
                              progress=phases)  # its workers end before it returns
    w3, c3 = _clocks()
    phases.end(w3, c3)
    return len(sweep.rows), (w1 - w0, c1 - c0), (w3 - w2, c3 - c2), sweep, phases


#: the sweep's progress messages -> the phase that starts with them
PHASES = {"Preparing: measuring each unit's own error": "own-error pass",
          "Preparing: caching float and quantized activations": "float and QDQ activation caches",
          "Preparing: activations cached": "first suffix models built", "Sweeping units": "suffix models"}


class Phases:
    """Progress callback: wall and CPU seconds (:func:`_clocks`) from one phase message to the next."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float, float]] = [("tensor types", *_clocks())]

    def __call__(self, done: int, total: int, message: str) -> None:
        name = PHASES.get(message.split(" (")[0], message)  # "Sweeping units (p2o.Conv.1)": "suffix models"
        if name != self.marks[-1][0]:
            self.marks.append((name, *_clocks()))

    def end(self, wall: float, cpu: float) -> None:
        self.marks.append(("end", wall, cpu))

    def rows(self) -> list[tuple[str, float, float]]:
        """(phase, wall s, CPU s) per phase."""
        return [(a[0], b[1] - a[1], b[2] - a[2]) for a, b in zip(self.marks, self.marks[1:], strict=False)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "shared/corpus/models"))
    ap.add_argument("--calib-samples", type=int, default=0,
                    help="calibration rows (default 0: every row of calib.npz, as workbench-cli sweep calibrates)")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--top", type=int, default=SWEEP_TOP_UNITS,
                    help=f"units measured end to end (0: all; default {SWEEP_TOP_UNITS}, workbench-cli sweep's)")
    ap.add_argument("--models", nargs="+", default=["digits_transformer", "ppocrv4_rec"])
    ap.add_argument("--executor", help="inline, processes[:N] or ray (default: the sweep's default, one thread per core)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} cores; calibration on "
          f"{f'the first {args.calib_samples} rows' if args.calib_samples else 'every row'} of calib.npz, "
          f"sweep {args.samples} samples, end-to-end for {args.top or 'all'} units "
          f"({args.executor or 'default'} executor: "
          f"{type(make_executor(args.executor) if args.executor else sweep_executor()).__name__}); "
          f"quantized graphs measured with {describe_runtime(False)}")
    print("| model | units | e2e units | calibration wall / CPU s | sweep wall / CPU s | sweep / calibration wall "
          "| CPU | worst (only it quantized) |")
    print("|---|---|---|---|---|---|---|---|")
    split = {}
    for name in args.models:
        folder = Path(args.corpus) / name
        if not folder.is_dir():
            print(f"| {name} | skipped: {folder} not found | | | | | | |")
            continue
        units, tc, ts, sweep, phases = measure(folder, FILES.get(name, "model.onnx"), args)
        worst = ", ".join(f"{r.node} ({r.only_quant_db:.1f} dB)" for r in sweep.rows[:2])
        print(f"| {name} | {units} | {sweep.tasks // 2} | {tc[0]:.2f} / {tc[1]:.2f} | {ts[0]:.2f} / {ts[1]:.2f} "
              f"| {ts[0] / tc[0]:.2f} | {ts[1] / tc[1]:.2f} | {worst} |", flush=True)
        split[name] = phases.rows()
    for name, rows in split.items():
        print(f"\n{name}: " + "; ".join(f"{phase} {w:.2f} s wall / {c:.2f} s CPU" for phase, w, c in rows))


if __name__ == "__main__":
    main()
