"""Crash-safe autosave of the open project, offered back after an abnormal exit.

While the document has unsaved edits, :class:`Autosaver` writes the project (recipe with its
overrides, data source, samples, calibration cache, results: what File > Save writes) every
:data:`INTERVAL_S` seconds to ``<user data dir>/workbench/autosave/<key>.wbproj``, atomically
(temporary file + rename, :func:`workbench.core.api.save_project`), with a small
``<key>.json`` beside it naming the model and the project file the edits belong to. ``<key>`` is the
sha1 of the model's absolute path, so each model has at most one autosave.

A clean save, a discard, or a quit that did not keep the edits removes the autosave. One that is
still there when the model is opened again means the app did not exit cleanly: the window asks
Restore / Discard (:func:`ask_restore`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QMessageBox, QWidget

from workbench.core import api
from workbench.core.errors import WorkbenchError

log = logging.getLogger(__name__)

#: seconds between two autosaves while the document is dirty
INTERVAL_S = 30
#: answers of :func:`ask_restore`
RESTORE, DISCARD = "restore", "discard"


def autosave_dir() -> Path:
    """Folder of the autosaves: ``<platformdirs user data dir>/workbench/autosave`` (tests redirect it)."""
    return Path(platformdirs.user_data_dir("workbench", appauthor=False)) / "autosave"


def _key(model_path: str | Path) -> str:
    return hashlib.sha1(str(Path(model_path).resolve()).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class AutosaveFiles:
    """The autosave of one model: the project file and the note beside it."""

    project: Path
    note: Path

    @classmethod
    def for_model(cls, model_path: str | Path) -> AutosaveFiles:
        folder, key = autosave_dir(), _key(model_path)
        return cls(folder / f"{key}{api.PROJECT_SUFFIX}", folder / f"{key}.json")

    def exists(self) -> bool:
        return self.project.is_file()

    def remove(self) -> None:
        for p in (self.project, self.note):
            p.unlink(missing_ok=True)

    def read_note(self) -> dict:
        """``{"model_path", "project_path" (or None), "saved_at" (Unix seconds)}``; {} when unreadable."""
        try:
            note = json.loads(self.note.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return note if isinstance(note, dict) else {}


def write_autosave(project, model_path: Path, project_path: Path | None) -> AutosaveFiles:
    """Write ``project`` (a :class:`~workbench.core.pipeline.project.Project`) as the autosave of
    ``model_path``; both files atomically. Raises ExportError when the folder is not writable."""
    files = AutosaveFiles.for_model(model_path)
    files.project.parent.mkdir(parents=True, exist_ok=True)
    note = {"model_path": str(Path(model_path).resolve()),
            "project_path": str(project_path) if project_path else None, "saved_at": time.time()}
    api.atomic_write_bytes(files.note, json.dumps(note, indent=1).encode("utf-8"))
    api.save_project(project, files.project)
    return files


def left_behind(exclude: set[AutosaveFiles] = frozenset()) -> list[dict]:
    """Notes of the autosaves in the folder (``exclude``: this session's own), oldest first; each
    note as :meth:`AutosaveFiles.read_note` gives it, for models that still exist."""
    folder = autosave_dir()
    if not folder.is_dir():
        return []
    notes = []
    for project in sorted(folder.glob(f"*{api.PROJECT_SUFFIX}")):
        files = AutosaveFiles(project, project.with_suffix(".json"))
        note = files.read_note()
        if files not in exclude and note.get("model_path") and Path(note["model_path"]).is_file():
            notes.append(note)
    return sorted(notes, key=lambda n: n.get("saved_at") or 0)


def ask_restore(parent: QWidget | None, name: str, saved_at: float | None) -> str:
    """Ask whether to restore the autosaved edits of ``name``: :data:`RESTORE` or :data:`DISCARD`."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(saved_at)) if saved_at else "an earlier session"
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Restore unsaved edits?")
    box.setText(f"Workbench did not exit cleanly: {name} has edits autosaved at {when} that were never saved.")
    box.setInformativeText("Restore them (Ctrl+Z undoes the restore), or discard them for good?")
    restore = box.addButton("Restore", QMessageBox.ButtonRole.AcceptRole)
    box.addButton("Discard", QMessageBox.ButtonRole.DestructiveRole)
    box.setDefaultButton(restore)
    box.exec()
    return RESTORE if box.clickedButton() is restore else DISCARD


class Autosaver(QObject):
    """Autosaves the window's document every :data:`INTERVAL_S` s while it is dirty.

    ``window.current_project()`` gives the project to write; the window calls :meth:`discard` after a
    clean save, a discard or a quit.
    """

    def __init__(self, window, interval_s: float = INTERVAL_S):
        super().__init__(window)
        self._window = window
        self.timer = QTimer(self, interval=int(interval_s * 1000))
        self.timer.timeout.connect(self.save_now)
        self.timer.start()
        self.last_error: str | None = None
        #: autosaves this session wrote or restored (only these are removed by :meth:`discard`, so a
        #: crash's autosave of a model is never removed before it has been offered)
        self.owned: set[AutosaveFiles] = set()

    def files(self) -> AutosaveFiles | None:
        path = self._window.doc.model_path
        return AutosaveFiles.for_model(path) if path is not None else None

    def save_now(self) -> Path | None:
        """Write the autosave if the document has unsaved edits; returns its path (None: nothing to save).

        A failure is logged and kept in :attr:`last_error` (the app goes on; the next tick retries)."""
        doc = self._window.doc
        self._window.sync_data_spec()  # the Calibration panel as shown, a path typed without Enter too
        if not doc.modified:
            return None
        try:
            files = write_autosave(self._window.current_project(), doc.model_path, doc.project_path)
        except (WorkbenchError, OSError) as exc:
            self.last_error = str(exc)
            log.warning("autosave failed: %s", exc)
            return None
        self.last_error = None
        self.owned.add(files)
        return files.project

    def adopt(self, files: AutosaveFiles) -> None:
        """Take over an autosave restored from an earlier session (removed like one written now)."""
        self.owned.add(files)

    def discard(self) -> None:
        """Remove the autosave of the open model (after a clean save, a discard or a quit)."""
        files = self.files()
        if files is not None and files in self.owned:
            files.remove()
            self.owned.discard(files)

    def stop(self) -> None:
        self.timer.stop()
