"""Process plumbing for the app's background jobs (no Qt here: the child imports only the core).

Why a process and not a thread: the core copies and serialises ``ModelProto`` objects (protobuf
``CopyFrom`` / ``SerializeToString``), which hold the GIL for the whole call. On
all-MiniLM-L6-v2 (90 MB) one ``CopyFrom`` held it for ~870 ms, so a calibration thread froze the
window. A child process keeps the GUI's event loop free; :mod:`workbench.qt.workers` talks to it
over two pipes (messages out, cancel in) from a QThread.

The jobs themselves (``fn(payload: dict, progress, cancel) -> dict``, JSON-safe payload and
result) are Qt-free core code in :mod:`workbench.core.jobs`; this module runs one of them in the
child and sends its progress and outcome back.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
import time
import traceback

from workbench.core.errors import WorkbenchError
from workbench.core.jobs import JOBS
from workbench.core.progress import CancelToken, phase_of

log = logging.getLogger(__name__)

#: Progress messages are sent at most this often (seconds), plus the first and last one of each phase.
PROGRESS_INTERVAL = 0.05


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

    Messages on ``out_conn``: ``("progress", done, total, text)`` (throttled) and ``("partial",
    data)`` (an intermediate result, sent as the job makes it), then one of
    ``("ok", result)``, ``("error", class_name, message, hint, traceback_text)``.
    """
    # a terminal's Ctrl+C reaches the whole process group: the window decides (workbench.qt.interrupt) and
    # stops the job through its cancel; a KeyboardInterrupt here came back as "Internal error"
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _lower_priority()
    token = CancelToken()
    threading.Thread(target=_listen_for_cancel, args=(ctl_conn, token), daemon=True).start()
    last: list = [0.0, None]  # time and phase of the last message sent

    def progress(done: int, total: int, message: str) -> None:
        now, phase = time.monotonic(), (phase_of(str(message)), int(total or 0))
        if now - last[0] >= PROGRESS_INTERVAL or phase != last[1] or (total and done >= total):
            last[0], last[1] = now, phase
            out_conn.send(("progress", int(done), int(total or 0), str(message)))

    # intermediate results (the autotune curve's points), never throttled: see workbench.core.jobs
    progress.partial = lambda data: out_conn.send(("partial", data))

    try:
        result = JOBS[job](payload, progress, token)
        out_conn.send(("ok", result))
    except WorkbenchError as exc:
        out_conn.send(("error", type(exc).__name__, exc.message, exc.hint, exc.details))
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
