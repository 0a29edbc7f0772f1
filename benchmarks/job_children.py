"""Child processes for the whole-job benchmarks (calibration_speed.py, calibration_memory.py).

Each job runs in its own process so that its CPU time (user + system, all threads) and peak RSS
are those of the whole job as a user runs it, start-up included. :func:`run` starts one child and
reads both from ``os.wait4``. The children defined here import only numpy and onnxruntime (the
start-up work of a plain inference script)::

    python benchmarks/job_children.py float MODEL NPZ BATCH N      # float inference of N rows
    python benchmarks/job_children.py ort METHOD MODEL NPZ BATCH N OUT   # quantize_static, QDQ

``float`` runs row 0 alone, then rows 1..N-1 in batches of BATCH (the grouping the workbench's
calibration uses: its batch-size probe runs sample 0 alone) in a session with onnxruntime's thread
spinning off (the workbench's calibration session options). ``ort`` runs onnxruntime's
``quantize_static`` (QDQ, uint8 activations, int8 per-channel weights, ``calibrate_method`` METHOD:
MinMax, Percentile or Entropy) with a data reader that hands it the same batches (for the histogram
methods, equal batches: see :func:`_batches`). In NPZ axis 0
of every array is the model's batch axis, or BATCH is 0 and row i of every array is one feed (the
corpus' ``stacked`` layout); keys starting with ``gt_`` are skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Child:
    """What one child cost: ``cpu`` seconds (user + system), ``rss`` peak resident MiB, ``wall``
    seconds, its exit status and its stderr (text)."""

    cpu: float
    rss: float
    wall: float
    rc: int
    stderr: str


def compile_package() -> None:
    """Write the workbench package's bytecode (``__pycache__``) before any child is timed. An installed
    package has it (pip compiles a wheel's modules at install); a checkout run with
    ``PYTHONDONTWRITEBYTECODE`` set compiles about 100 modules from source in every process, which
    charged 0.1-0.2 s of CPU to each of our jobs and to none of onnxruntime's."""
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "workbench"), quiet=1)


def run(argv: list[str], env: dict[str, str] | None = None, mem_cap_mib: int | None = None) -> Child:
    """Run ``argv`` to the end; CPU and peak RSS from ``os.wait4`` (this child only, Linux ``ru_maxrss`` in KiB).

    ``mem_cap_mib`` limits the child's address space (``RLIMIT_AS``) so a job that holds every
    activation in memory fails instead of exhausting a shared machine.
    """
    def cap() -> None:
        if mem_cap_mib:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (mem_cap_mib << 20, mem_cap_mib << 20))

    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=cap if mem_cap_mib else None)
    err = proc.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    return Child(ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, time.perf_counter() - t0, proc.returncode, err)


#: runs the CLI with the calibration module's debug log on stderr (the batch size it picked)
_LOGGED_CLI = ("import logging, sys; lg = logging.getLogger('workbench.core.calibration.calibrate'); "
               "lg.setLevel(logging.DEBUG); lg.addHandler(logging.StreamHandler()); lg.propagate = False; "
               "from workbench.cli import main; sys.exit(main(sys.argv[1:]))")


def model_file(folder: Path) -> Path:
    """The model of a corpus folder (its model.onnx, else its last ONNX file by name)."""
    return folder / "model.onnx" if (folder / "model.onnx").is_file() else sorted(folder.glob("*.onnx"))[-1]


def repeated_npz(model_dir: Path, n: int, folder: Path) -> Path:
    """calib.npz (batch layout) with its rows repeated to exactly ``n`` rows, written by a child
    process: Linux starts a child's ``ru_maxrss`` at its parent's peak when it execs, so the parent
    must stay small for the children's peaks to be theirs."""
    out = folder / f"{model_dir.name}_{n}.npz"
    subprocess.run([sys.executable, __file__, "npz", str(model_dir), str(n), str(out)], check=True)
    return out


def _write_npz(model_dir: str, n: int, out: str) -> None:
    with np.load(Path(model_dir) / "calib.npz") as z:
        arrays = {k: z[k] for k in z.files if not k.startswith("gt_")}
    rows = next(iter(arrays.values())).shape[0]
    np.savez(out, **{k: np.concatenate([v] * -(-n // rows))[:n] for k, v in arrays.items()})


def cli_argv(model: Path, npz: Path, n: int, out: Path, recipe: Path | None = None) -> list[str]:
    extra = ["--recipe", str(recipe)] if recipe else []
    return [sys.executable, "-m", "workbench.cli", "quantize", str(model), "--data", str(npz), "--samples", str(n),
            "-o", str(out), "--no-latency-check", "--no-auto", *extra]


def batch_size(model: Path, npz: Path, n: int, out: Path, env: dict) -> int:
    """The calibration batch size the CLI picks for this job (a warm-up run);
    0 when it runs one row per feed. Raises RuntimeError when the CLI fails (e.g. refuses the model)."""
    argv = [sys.executable, "-c", _LOGGED_CLI, *cli_argv(model, npz, n, out)[3:]]
    child = run(argv, env)
    found = re.search(r"Calibration batch size (\d+)", child.stderr)
    if child.rc != 0:
        last = (child.stderr.strip().splitlines() or ["?"])[-1][:200]
        raise RuntimeError(f"warm-up quantize failed (exit {child.rc}): {last}")
    return int(found.group(1)) if found else 0  # no probe: stacked rows, one feed per row


def _arrays(npz: str) -> dict:
    with np.load(npz) as z:
        return {k: z[k] for k in z.files if not k.startswith("gt_")}


def _batches(arrays: dict, batch: int, n: int, uniform: bool = False):
    """Row 0 alone, then rows 1..n-1 in slices of ``batch``; ``uniform``: slices of the largest
    divisor of ``n`` not above ``batch`` from row 0 (onnxruntime's histogram calibrators stack the
    outputs of all batches and fail on batches of different sizes)."""
    if batch == 0:  # stacked layout: row i is one feed
        yield from ({k: np.asarray(v[i]) for k, v in arrays.items()} for i in range(n))
        return
    if uniform:
        batch = max(d for d in range(1, batch + 1) if n % d == 0)
        start = 0
    else:
        yield {k: v[:1] for k, v in arrays.items()}
        start = 1
    for i in range(start, n, batch):
        yield {k: v[i:min(i + batch, n)] for k, v in arrays.items()}


def float_child(model: str, npz: str, batch: int, n: int) -> None:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    for feed in _batches(_arrays(npz), batch, n):
        sess.run(None, feed)


def ort_child(method: str, model: str, npz: str, batch: int, n: int, out: str) -> None:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = _batches(_arrays(npz), batch, n, uniform=method != "MinMax")

        def get_next(self):
            return next(self.it, None)

    quantize_static(model, out, Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True, calibrate_method=CalibrationMethod[method])


if __name__ == "__main__":
    kind, *rest = sys.argv[1:]
    if kind == "float":
        float_child(rest[0], rest[1], int(rest[2]), int(rest[3]))
    elif kind == "npz":
        _write_npz(rest[0], int(rest[1]), rest[2])
    elif kind == "ort":
        ort_child(rest[0], rest[1], rest[2], int(rest[3]), int(rest[4]), rest[5])
    else:
        sys.exit(f"unknown child kind {kind!r}: use float or ort")
