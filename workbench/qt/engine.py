"""Jobs the app runs in a child process (no Qt here: the child imports only the core).

Why a process and not a thread: the core copies and serialises ``ModelProto`` objects (protobuf
``CopyFrom`` / ``SerializeToString``), which hold the GIL for the whole call. On
all-MiniLM-L6-v2 (90 MB) one ``CopyFrom`` held it for ~870 ms, so a calibration thread froze the
window. A child process keeps the GUI's event loop free; :mod:`workbench.qt.workers` talks to it
over two pipes (messages out, cancel in) from a QThread.

Every job is ``fn(payload: dict, progress, cancel) -> dict`` with a JSON-safe payload and result.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import sys
import threading
import time
import traceback
from dataclasses import asdict
from typing import Any

import numpy as np

from workbench.core import api
from workbench.core.api import (
    CalibrationResult,
    InlineExecutor,
    Recipe,
    add_outputs,
    make_session,
    model_cost,
    sensitivity_sweep,
)
from workbench.core.errors import DataError, WorkbenchError
from workbench.core.progress import CancelToken

log = logging.getLogger(__name__)

#: Progress messages are sent at most this often (seconds), plus the last one of each phase.
PROGRESS_INTERVAL = 0.05


# ----------------------------------------------------------------------------- helpers
def _recipe(payload: dict):
    return Recipe.model_validate_json(payload["recipe"])


def _calibration(payload: dict):
    if not payload.get("calibration"):
        return None

    return CalibrationResult.from_json(payload["calibration"])


def _phase(progress, name: str):
    """A progress callback that prefixes ``name`` to the core's messages."""
    def fn(done: int, total: int, message: str) -> None:
        progress(done, total, f"{name}: {message}" if message else name)
    return fn


def _quantize_with_cache(api, model, recipe, payload, progress, cancel):
    """Calibrate (reusing the payload's cache when ``reuse``) and write the model in memory."""
    previous = _calibration(payload) if payload.get("reuse", True) else None
    the_plan = api.plan(model, recipe, guard=True)  # what quantize() below calibrates
    calib = previous
    if the_plan.mode == "static" and the_plan.activations:
        have = previous.qparams() if previous is not None else {}
        if previous is None or any(t not in have for t in the_plan.activations):
            calib = api.calibrate(model, the_plan, payload["data"], samples=payload.get("samples"),
                                  progress=_phase(progress, "Calibrating"), cancel=cancel, previous=previous)
    cancel.check()
    result = api.quantize(model, recipe, calibration=calib, progress=_phase(progress, "Quantizing"),
                          cancel=cancel)
    return result, calib


def _qparams_json(result) -> dict[str, dict]:
    return {t: qp.to_json() for t, qp in result.qparams.items()}


# ----------------------------------------------------------------------------- jobs
def job_calibrate(payload: dict, progress, cancel: CancelToken) -> dict:
    """Calibrate, quantize in memory and analyse every node unit.

    Payload: ``model_path``, ``recipe`` (JSON), ``data`` (spec), ``samples``, ``calibration``
    (cache JSON or None), ``reuse`` (False recalibrates every tensor), ``analysis_samples``.
    Result: ``calibration`` (JSON), ``errors`` (UnitError.to_json rows, worst first),
    ``qparams`` (tensor -> QParams JSON), ``issues`` (strings), ``recipe`` (the JSON used).
    """
    model = api.open_model(payload["model_path"])
    recipe = _recipe(payload)
    result, calib = _quantize_with_cache(api, model, recipe, payload, progress, cancel)
    rows = api.analyze(model, result, payload["data"], samples=payload.get("analysis_samples"),
                       progress=_phase(progress, "Analysing"), cancel=cancel)
    return {"calibration": calib.to_json() if calib is not None else None,
            "errors": [asdict(r) for r in rows],  # pickled: +inf (bit-exact unit) stays +inf
            "qparams": _qparams_json(result),
            "issues": [_issue_text(i) for i in result.issues],
            "recipe": payload["recipe"]}


def job_export(payload: dict, progress, cancel: CancelToken) -> dict:
    """Quantize with the cached calibration (calibrating only what is missing) and write ``path``."""
    model = api.open_model(payload["model_path"])
    recipe = _recipe(payload)
    result, calib = _quantize_with_cache(api, model, recipe, payload, progress, cancel)
    fmt = payload.get("format", "qdq")
    out = api.export(result, payload["path"], format=fmt, **({"model": model} if fmt == "qonnx" else {}))
    return {"path": str(out), "calibration": calib.to_json() if calib is not None else None,
            "issues": [_issue_text(i) for i in result.issues]}


def job_sensitivity(payload: dict, progress, cancel: CancelToken) -> dict:
    """Sensitivity sweep of every node unit (:func:`workbench.core.analysis.sensitivity.sensitivity_sweep`).

    Payload: as :func:`job_calibrate`, plus ``sweep_samples`` and ``top`` (units measured end to
    end; None: all). Tasks run in this (child) process: a daemon process may not start a pool.
    Result: ``sweep`` (SweepResult JSON), ``suggestion`` (node names to keep in float),
    ``calibration`` (JSON, reused by later runs), ``recipe`` (the JSON swept).
    """
    model = api.open_model(payload["model_path"])
    recipe = _recipe(payload)
    result, calib = _quantize_with_cache(api, model, recipe, payload, progress, cancel)
    sweep = sensitivity_sweep(model, result, payload["data"], samples=payload.get("sweep_samples"),
                              top=payload.get("top"), executor=InlineExecutor(),
                              progress=_phase(progress, "Sensitivity"), cancel=cancel)
    return {"sweep": sweep.to_json(), "suggestion": sweep.suggestion(),
            "calibration": calib.to_json() if calib is not None else None, "recipe": payload["recipe"]}


def job_histogram(payload: dict, progress, cancel: CancelToken) -> dict:
    """Histogram of one float tensor over the first ``samples`` calibration samples.

    Result: ``counts`` (int list, ``bins`` long), ``edges`` (``bins + 1`` floats), ``tensor``,
    ``rmin`` / ``rmax`` (observed float range), ``values`` (number of elements seen).
    """
    model = api.open_model(payload["model_path"])
    tensor = payload["tensor"]
    sess = make_session(add_outputs(model.proto, [tensor]), threads=1)
    source = api.open_data_source(payload["data"], model)
    limit = int(payload.get("samples") or 16)
    chunks: list[np.ndarray] = []
    for i, feed in enumerate(source.batches(1)):
        if i >= limit:
            break
        cancel.check()
        out = sess.run([tensor], feed)[0]
        chunks.append(np.asarray(out, dtype=np.float64).ravel())
        progress(i + 1, limit, f"Histogram of {tensor}")
    values = np.concatenate(chunks) if chunks else np.zeros(0)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return {"tensor": tensor, "counts": [], "edges": [], "rmin": 0.0, "rmax": 0.0, "values": 0}
    counts, edges = np.histogram(values, bins=int(payload.get("bins", 128)))
    return {"tensor": tensor, "counts": counts.tolist(), "edges": edges.tolist(),
            "rmin": float(values.min()), "rmax": float(values.max()), "values": int(values.size)}


def job_sleep(payload: dict, progress, cancel: CancelToken) -> dict:
    """Test helper job: ``steps`` steps of ``delay`` seconds with progress; fails on request."""
    steps = int(payload.get("steps", 10))
    for i in range(steps):
        cancel.check()
        time.sleep(float(payload.get("delay", 0.05)))
        progress(i + 1, steps, "sleeping")
    if payload.get("fail"):
        raise DataError("x.npz: input 'input' has shape [2] but the model needs [1, 8].",
                        hint="Pick data made for this model.")
    if payload.get("crash"):
        raise RuntimeError("simulated bug")
    return {"steps": steps}


def job_cost(payload: dict, progress, cancel: CancelToken) -> dict:
    """Float cost (MACs, weight sizes) of every compute node; see :mod:`workbench.core.analysis.cost`."""
    model = api.open_model(payload["model_path"])
    cancel.check()
    return {"model_path": payload["model_path"], **model_cost(model.proto).to_json()}


JOBS = {"calibrate": job_calibrate, "export": job_export, "sensitivity": job_sensitivity, "histogram": job_histogram, "sleep": job_sleep,
        "cost": job_cost}


def _issue_text(issue: Any) -> str:
    node = getattr(issue, "node", "")
    message = getattr(issue, "message", str(issue))
    severity = getattr(issue, "severity", "")
    return f"{severity} {node}: {message}".strip()


# ----------------------------------------------------------------------------- child side
def _listen_for_cancel(ctl_conn, token: CancelToken) -> None:
    """Cancel ``token`` when the parent sends "cancel" or goes away."""
    try:
        while True:
            if ctl_conn.recv() == "cancel":
                token.cancel()
                return
    except (EOFError, OSError):
        token.cancel()


def _lower_priority() -> None:
    """Run below the GUI's priority so a busy child never starves the window of CPU time."""
    try:
        os.nice(10)
    except (AttributeError, OSError):  # Windows has no nice(); priority stays normal there
        pass


def child_main(job: str, payload: dict, out_conn, ctl_conn) -> None:
    """Entry point of the child process: run ``JOBS[job]`` and send one final message.

    Messages on ``out_conn``: ``("progress", done, total, text)`` (throttled), then one of
    ``("ok", result)``, ``("error", class_name, message, hint, traceback_text)``.
    """
    _lower_priority()
    token = CancelToken()
    threading.Thread(target=_listen_for_cancel, args=(ctl_conn, token), daemon=True).start()
    last = [0.0]

    def progress(done: int, total: int, message: str) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_INTERVAL or (total and done >= total):
            last[0] = now
            out_conn.send(("progress", int(done), int(total or 0), str(message)))

    try:
        result = JOBS[job](payload, progress, token)
        out_conn.send(("ok", result))
    except WorkbenchError as exc:
        out_conn.send(("error", type(exc).__name__, exc.message, exc.hint, ""))
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the GUI as a message
        out_conn.send(("error", "InternalError", f"{type(exc).__name__}: {exc}", None,
                       traceback.format_exc()))
    finally:
        out_conn.close()
    _fast_exit()


def _fast_exit() -> None:
    """Run the exit hooks (temp-dir finalizers, multiprocessing's cleanup), then leave without the
    interpreter's teardown, which frees a large model object by object and competes with the GUI
    for CPU just when it draws the result."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def finite_or_nan(value: Any) -> float:
    """``value`` as a float, None -> NaN (UnitError.to_json writes non-finite values as None)."""
    return float("nan") if value is None else float(value)


def is_finite(value: Any) -> bool:
    return value is not None and math.isfinite(float(value))
