"""Error dialogs, and the guard that keeps exceptions from escaping Qt slots.

A :class:`~workbench.core.errors.WorkbenchError` is the user's problem: the dialog shows its
message (what is wrong, naming the file / node / tensor) and its hint (what to do). Anything
else is a bug: it is logged with its traceback and shown as an internal error; the app goes on.
A project whose model is not found offers to locate it (:func:`load_project_locating`).
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox, QWidget

from workbench import __version__
from workbench.core import api
from workbench.core.errors import ProjectError, WorkbenchError
from workbench.qt.workers import GRACE

log = logging.getLogger(__name__)


def error_text(exc: BaseException) -> tuple[str, str]:
    """(text, informative text) for a dialog about ``exc``."""
    if isinstance(exc, WorkbenchError):
        return exc.message, exc.hint or ""
    return (f"Internal error: {type(exc).__name__}: {exc}",
            "This is a bug in Workbench. The details are in the log; please report them.")


def show_error(parent: QWidget | None, title: str, exc: BaseException, *, to_status: bool = False) -> None:
    """Show ``exc`` in a modal message box (never raises). ``to_status``: the parent window's status line shows
    the error's one line while the box is open (callers that word a line of their own set it before; the
    previous message stayed there until OK)."""
    text, hint = error_text(exc)
    if to_status and _status_of(parent) is not None:
        parent.set_status(text)
    if not isinstance(exc, WorkbenchError):
        log.error("%s: %s", title, "".join(traceback.format_exception(exc)))
    details = getattr(exc, "details", "")
    body = f"{text}\n\n{hint}".strip()
    if details:
        body += f"\n\nDetails:\n{details[-2000:]}"
    try:
        QMessageBox.critical(parent, title, body)
    except Exception:  # noqa: BLE001 - a failing dialog must not take the app down
        log.exception("could not show the error dialog")


def _dialog_parent(args: tuple) -> QWidget | None:
    if args and isinstance(args[0], QWidget):
        return args[0].window()
    return QApplication.activeWindow()


def _status_of(window: QWidget | None) -> str | None:
    """The text of ``window``'s status line (None for a window without one)."""
    label = getattr(window, "status_label", None)
    return label.text() if label is not None and hasattr(window, "set_status") else None


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a slot so no exception escapes it: errors go to a dialog and the log, and to the
    window's status line (an earlier message there would otherwise stay, describing something else)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        status = _status_of(_dialog_parent(args))
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - this is the last line of defence of a slot
            if not isinstance(exc, WorkbenchError):
                log.exception("unhandled error in %s", fn.__qualname__)
            parent = _dialog_parent(args)
            # the slot set no status of its own: the error's line, from when the box opens
            show_error(parent, "Workbench", exc, to_status=status is not None and _status_of(parent) == status)
            return None

    return wrapper


#: answers of :func:`ask_save_changes`
SAVE, DISCARD, CANCEL = "save", "discard", "cancel"


def ask_save_changes(parent: QWidget | None, name: str, doing: str) -> str:
    """Ask what to do with unsaved edits of ``name`` before ``doing`` (e.g. "quitting"): returns
    :data:`SAVE`, :data:`DISCARD` or :data:`CANCEL` (also when the box is closed). The box says what would be
    lost as the window's document words it (``parent.doc.unsaved_text``: edits, results and which)."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("Unsaved changes")
    box.setText(f"{name} has {getattr(getattr(parent, 'doc', None), 'unsaved_text', '') or 'unsaved changes'}.")
    box.setInformativeText(f"Save them to a project before {doing}?")
    B = QMessageBox.StandardButton
    box.setStandardButtons(B.Save | B.Discard | B.Cancel)
    box.setDefaultButton(B.Save)
    answer = box.exec()
    return {B.Save: SAVE, B.Discard: DISCARD}.get(B(answer), CANCEL)


#: answers of :func:`ask_stop_job`
STOP, KEEP = "stop", "keep"
#: what :func:`ask_stop_job` says a stop does to a file job's file (outputs are written atomically: a temporary
#: file renamed over the target once whole, so the target is either as it was or the whole new file)
WRITE_STOPPED = "If stopped before its write begins, nothing is written and a file already there is left as it was."
WRITE_BEGUN = ("A write already under way is finished before the window closes, or, when the job has not ended "
               f"{GRACE:g} s after the stop, cut off: the file is then as it was or whole, never partial.")
#: the button of :func:`ask_stop_job` that stops the job and closes the window
STOP_AND_CLOSE = "&Stop and Close"


def ask_stop_job(parent: QWidget | None, title: str, progress: str = "", *, writes: bool = False) -> str:
    """Ask before closing the window while the job ``title`` (e.g. "Calibration") runs: returns :data:`STOP`
    (Stop and Close) or :data:`KEEP` (Cancel, also when the box is closed; the default button, so Enter keeps
    working). ``progress``: the job's last progress line, shown as where it is; ``writes``: the job writes a
    file (an export, a report): a stop before its write leaves the file as it was, but a write already begun
    is finished while the window waits for the job to end, or cut off when it has not ended within the job's
    grace (:data:`~workbench.qt.workers.GRACE`) (the target is then as it was or whole: outputs are written atomically)."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Job running")
    box.setText(f"{title} is still running" + (f" ({progress})." if progress else "."))
    lost = (f"{WRITE_STOPPED} {WRITE_BEGUN}" if writes else "If stopped, what it has done so far is lost.")
    box.setInformativeText(f"Stop it and close the window? {lost}")
    stop = box.addButton(STOP_AND_CLOSE, QMessageBox.ButtonRole.DestructiveRole)
    keep = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(keep)
    box.setEscapeButton(keep)
    box.exec()
    return STOP if box.clickedButton() is stop else KEEP


#: the button of the missing-model box that opens the file dialog
LOCATE_MODEL = "&Locate Model..."


def ask_locate_model(parent: QWidget | None, project_path: Path, exc: ProjectError) -> Path | None:
    """The box "model not found" of ``project_path`` (``exc``'s message), with Locate Model... and Cancel; on
    Locate, a file dialog in the project's folder. The chosen file, or None (cancelled either time)."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("Model not found")
    box.setText(exc.message)
    box.setInformativeText(f"Locate the model of {project_path.name} to open it: it must be the same file "
                           "(its sha256 is checked). Save the project afterwards to keep the new place.")
    locate = box.addButton(LOCATE_MODEL, QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(locate)
    box.exec()
    if box.clickedButton() is not locate:
        return None
    chosen, _ = QFileDialog.getOpenFileName(parent, f"Locate the model of {project_path.name}",
                                            str(project_path.parent), "ONNX models (*.onnx);;All files (*)")
    return Path(chosen) if chosen else None


def load_project_locating(parent: QWidget | None, path: Path) -> tuple[Any, bool]:
    """``(load_project(path), False)``; when its model is found neither beside the project nor at its saved
    absolute path, :func:`ask_locate_model` and ``(project, True)`` with the chosen model (its sha256 checked;
    the project's model path changed: the caller marks it unsaved). ``(None, False)`` when the user cancels.

    Raises
    ------
    ProjectError
        The project is unreadable, its model changed, or the chosen file is not its model.
    """
    try:
        return api.load_project(path), False
    except ProjectError as exc:
        if api.load_project(path, check_model=False).model_path(path).is_file():  # there, but another file
            raise
        chosen = ask_locate_model(parent, path, exc)
        return (None, False) if chosen is None else (api.load_project(path, model_path=chosen), True)


def about_text() -> str:
    """Help > About: the versions of Workbench and of the libraries it runs on."""
    # third-party version lookups only when the box is shown (onnxruntime is slow to import)
    import onnx
    import onnxruntime
    import pyqtgraph
    import PySide6
    from PySide6.QtCore import qVersion

    return (f"<b>Workbench {__version__}</b><br>Post-training quantization of ONNX models.<br><br>"
            f"onnx {onnx.__version__}<br>onnxruntime {onnxruntime.__version__}<br>"
            f"Qt {qVersion()} (PySide6 {PySide6.__version__})<br>pyqtgraph {pyqtgraph.__version__}")
