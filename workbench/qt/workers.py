"""Background jobs with progress and cancel, their signals delivered on the GUI thread.

Two kinds, one interface (:class:`Job`):

- :class:`ProcessJob` runs a job of :mod:`workbench.core.jobs` in a child process (spawn; the
  child's side is :func:`workbench.qt.engine.child_main`). A QThread in the GUI process waits on the pipe and re-emits the child's messages as Qt signals;
  cancel is sent to the child (its CancelToken), and a child that does not stop within
  ``grace`` seconds is terminated. Calibration, analysis and export use this, so the GUI never
  waits on the GIL held by protobuf calls in the core.
- :class:`ThreadJob` runs a Python callable in a QThread (opening a model: the result, a
  PreparedModel, must live in the GUI process).

Signals are emitted by an object living in the worker thread and connected to the Job (living
in the GUI thread), so Qt queues them onto the GUI thread. Every job ends with exactly one of
``succeeded`` / ``failed`` / ``cancelled``, then ``finished``; the thread is joined before
``finished`` is emitted. :func:`live_jobs` lists jobs not yet finished (the tests fail on leaks).

A job whose result arrives after a cancel ends ``cancelled`` (its result dropped), unless it
:attr:`Job.keeps_late_result`: a job that writes a file has written it once it returns, so it ends
``succeeded`` and :attr:`Job.cancel_requested` tells that the cancel came too late. A file job killed after
its grace (``ProcessJob(writes=...)``) has the temporary files it left beside its target removed, and
:attr:`ProcessJob.written_when_killed` tells whether the target was put in place before the kill.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot

from workbench.core import api
from workbench.core import errors as core_errors
from workbench.core.errors import Cancelled, WorkbenchError
from workbench.core.progress import CancelToken
from workbench.qt.engine import child_main

log = logging.getLogger(__name__)

_LIVE: set[Job] = set()
#: seconds a cancelled :class:`ProcessJob`'s child has to stop before it is killed
GRACE = 5.0


def live_jobs() -> list[Job]:
    """Jobs started and not yet finished."""
    return list(_LIVE)


class InternalError(WorkbenchError):
    """A bug (not bad input) in a background job; the message carries the traceback."""

    def __init__(self, message: str, *, details: str = ""):
        super().__init__(message, hint="This is a bug in Workbench; please report it with the details.")
        self.details = details


def rebuild_error(class_name: str, message: str, hint: str | None, details: str) -> WorkbenchError:
    """The WorkbenchError subclass named ``class_name`` (from the core) with ``details`` (the full text of a
    library message it quotes a line of), else InternalError (``details``: the traceback)."""
    cls = getattr(core_errors, class_name, None)
    if class_name == "Cancelled":
        return Cancelled(message)
    if isinstance(cls, type) and issubclass(cls, WorkbenchError):
        try:
            return cls(message, hint=hint, details=details)
        except TypeError:
            return WorkbenchError(message, hint=hint, details=details)
    return InternalError(message, details=details)


class _Signals(QObject):
    progress = Signal(int, int, str)
    partial = Signal(object)  # an intermediate result (ProcessJob: the job's progress.partial)
    done = Signal(str, object)  # kind ("ok" | "error" | "cancelled"), payload


class _Runner(QObject):
    """Lives in the worker thread; ``run`` does the work and emits ``signals.done`` once."""

    def __init__(self, work: Callable[[_Signals], None]):
        super().__init__()
        self.signals = _Signals()
        self._work = work

    @Slot()
    def run(self) -> None:
        try:
            self._work(self.signals)
        except BaseException as exc:  # noqa: BLE001 - reported through the signal, never escapes
            log.exception("background job failed")
            self.signals.done.emit("error", InternalError(f"{type(exc).__name__}: {exc}"))
        finally:
            QThread.currentThread().quit()


class Job(QObject):
    """A background job. Connect to the signals, then call :meth:`start`."""

    progress = Signal(int, int, str)
    partial = Signal(object)  # an intermediate result before the job ends (e.g. one autotune point)
    succeeded = Signal(object)
    failed = Signal(object)  # a WorkbenchError (InternalError for bugs)
    cancelled = Signal()
    finished = Signal()

    def __init__(self, title: str, parent: QObject | None = None):
        super().__init__(parent)
        self.title = title
        self.started_at = 0.0
        self._thread: QThread | None = None
        self._runner: _Runner | None = None
        self._cancel_requested = False
        self._done = False
        #: a result that arrives after :meth:`cancel` ends the job ``succeeded`` (True: a job that writes a
        #: file, which is written once it returns) rather than ``cancelled`` (False: the result is dropped)
        self.keeps_late_result = False

    # subclasses implement the work, run in the worker thread
    def _work(self, signals: _Signals) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def start(self) -> None:
        self.started_at = time.monotonic()
        self._thread = QThread()
        self._thread.setObjectName(f"workbench-job:{self.title}")
        self._runner = _Runner(self._work)
        self._runner.moveToThread(self._thread)
        self._runner.signals.progress.connect(self.progress)
        self._runner.signals.partial.connect(self.partial)
        self._runner.signals.done.connect(self._on_done)
        self._thread.started.connect(self._runner.run)
        _LIVE.add(self)
        self._thread.start()

    def cancel(self) -> None:
        """Ask the job to stop; ``cancelled`` follows, or ``succeeded`` when the job returned its result
        all the same and :attr:`keeps_late_result` (e.g. its file was already being written)."""
        self._cancel_requested = True

    @property
    def cancel_requested(self) -> bool:
        """Whether :meth:`cancel` was called (a ``succeeded`` after it: the cancel came too late)."""
        return self._cancel_requested

    def _late(self) -> bool:
        """Whether a result that arrives now is dropped (cancelled, and not :attr:`keeps_late_result`)."""
        return self._cancel_requested and not self.keeps_late_result

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._done

    def wait(self, timeout_ms: int = 30_000) -> bool:
        """Block until the worker thread ends, then deliver its final signals (used on shutdown)."""
        ok = self._thread.wait(timeout_ms) if self._thread is not None else True
        deadline = time.monotonic() + 1.0
        while not self._done and time.monotonic() < deadline:
            QCoreApplication.processEvents()
        return ok and self._done

    @Slot(str, object)
    def _on_done(self, kind: str, payload: Any) -> None:
        if self._done:
            return
        self._done = True
        if self._thread is not None:
            self._thread.quit()
            self._thread.wait()
        _LIVE.discard(self)
        try:
            if kind == "ok":
                self.succeeded.emit(payload)
            elif kind == "cancelled" or isinstance(payload, Cancelled):
                self.cancelled.emit()
            else:
                self.failed.emit(payload)
        finally:
            self.finished.emit()
            if self._runner is not None:
                self._runner.deleteLater()
            self._thread = None


class ProcessJob(Job):
    """Run ``workbench.core.jobs.JOBS[name](payload, ...)`` in a spawned child process."""

    def __init__(self, name: str, payload: dict, *, title: str, grace: float | None = None,
                 writes: str | Path | None = None, parent: QObject | None = None):
        """``grace``: seconds a cancelled child has to stop before it is killed (None: :data:`GRACE`); ``writes``:
        the file the job writes (atomically), cleaned up after a kill (:attr:`written_when_killed`)."""
        super().__init__(title, parent)
        self.name = name
        self.payload = payload
        self.grace = GRACE if grace is None else grace
        self.writes = Path(writes) if writes is not None else None
        self._killed = False
        #: the child was killed (no stop within ``grace`` of the cancel) after it had put :attr:`writes` in place:
        #: the job ends ``cancelled`` without a result, but the file is written
        self.written_when_killed = False

    def _work(self, signals: _Signals) -> None:
        ctx = mp.get_context("spawn")
        out_recv, out_send = ctx.Pipe(duplex=False)
        ctl_recv, ctl_send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=child_main, args=(self.name, self.payload, out_send, ctl_recv),
                           name=f"workbench-{self.name}", daemon=True)
        mark = api.mark_target(self.writes) if self.writes is not None else None
        proc.start()
        out_send.close()
        ctl_recv.close()
        try:
            kind, payload = self._pump(proc, out_recv, ctl_send, signals)
        finally:
            if proc.is_alive():
                proc.terminate()
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join()
            proc.close()
            out_recv.close()
            ctl_send.close()
            if self._killed and mark is not None:
                self._clean_after_kill(mark)
        signals.done.emit(kind, payload)

    def _clean_after_kill(self, mark) -> None:
        """Remove the temporary files the killed child left beside :attr:`writes` (only those made after the
        job started) and note whether the target itself changed (:attr:`written_when_killed`)."""
        removed, changed = api.clean_killed_write(self.writes, mark)
        self.written_when_killed = changed
        if removed:
            log.info("removed %s left by the stopped job %r", ", ".join(p.name for p in removed), self.title)

    def _pump(self, proc, conn, ctl, signals: _Signals) -> tuple[str, Any]:
        cancel_sent_at: float | None = None
        while True:
            if self._cancel_requested and cancel_sent_at is None:
                cancel_sent_at = time.monotonic()
                try:
                    ctl.send("cancel")
                except OSError:
                    pass
            if cancel_sent_at is not None and time.monotonic() - cancel_sent_at > self.grace:
                self._killed = True  # _work kills the child
                return "cancelled", None
            try:
                if not conn.poll(0.05):
                    if proc.is_alive() or conn.poll(0):
                        continue
                    break
                msg = conn.recv()
            except (EOFError, OSError):
                break
            if msg[0] == "progress":
                signals.progress.emit(msg[1], msg[2], msg[3])
            elif msg[0] == "partial":
                signals.partial.emit(msg[1])
            elif msg[0] == "ok":
                return ("cancelled", None) if self._late() else ("ok", msg[1])
            elif msg[0] == "error":
                err = rebuild_error(*msg[1:])
                return ("cancelled", None) if isinstance(err, Cancelled) else ("error", err)
        if self._cancel_requested:
            return "cancelled", None
        return "error", InternalError(f"The background process for {self.title!r} ended unexpectedly "
                                      f"(exit code {proc.exitcode}).")


class ThreadJob(Job):
    """Run ``fn(progress=..., cancel=...)`` (or ``fn()`` with ``plain=True``) in a QThread."""

    def __init__(self, fn: Callable[..., Any], *, title: str, plain: bool = False,
                 parent: QObject | None = None):
        super().__init__(title, parent)
        self._fn = fn
        self._plain = plain
        self.token = CancelToken()

    def cancel(self) -> None:
        super().cancel()
        self.token.cancel()

    def _work(self, signals: _Signals) -> None:
        try:
            if self._plain:
                result = self._fn()
            else:
                result = self._fn(progress=lambda d, t, m: signals.progress.emit(int(d), int(t or 0), str(m)),
                                  cancel=self.token)
        except Cancelled:
            signals.done.emit("cancelled", None)
            return
        except WorkbenchError as exc:
            signals.done.emit("error", exc)
            return
        signals.done.emit("cancelled" if self.token.cancelled and not self.keeps_late_result else "ok", result)
