"""Crash-safe autosave of the open project, offered back after an abnormal exit.

While the document has unsaved edits, :class:`Autosaver` writes the project (recipe with its
overrides, data source, samples, calibration cache, results: what File > Save Project writes) every
:data:`INTERVAL_S` seconds to ``<user data dir>/workbench/autosave/<key>.wbproj``, atomically
(temporary file + rename, :func:`workbench.core.api.save_project`), with a small
``<key>.json`` beside it naming the model, the project file the edits belong to and the process that
wrote it. ``<key>`` is the sha1 of the model's absolute path; a second window (or app) with unsaved edits of
the same model writes ``<key>-1`` (then ``-2``...), never another session's autosave.

A clean save, a discard, or a quit that did not keep the edits removes the autosave. One that is
still there when the model is opened again, and that no running window or app writes (:func:`in_use`),
means a session did not exit cleanly: the window asks Restore / Discard (:func:`ask_restore`); Restore puts
back every field a project saves (:class:`RestoreCommand`). The autosave of a model file that moved is
offered at its new place (:func:`adopt_moved`). An autosave that cannot be restored as it is (unreadable, or
restored only in part) is never deleted: :func:`keep_aside` gives it a name of its own in the same folder,
where at most :data:`KEPT_PER_MODEL` per model are kept, for :data:`KEPT_DAYS` days (:func:`prune_kept`).

A failed autosave (a folder that cannot be written) is said once in the window's status line and stays
shown as an "Autosave failed" mark in the status bar, its tooltip saying where and what to do, until an
autosave succeeds again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import psutil
from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QUndoCommand
from PySide6.QtWidgets import QLabel, QMessageBox, QWidget

from workbench.core import api
from workbench.core.errors import WorkbenchError

log = logging.getLogger(__name__)

#: seconds between two autosaves while the document is dirty
INTERVAL_S = 30
#: answers of :func:`ask_restore`
RESTORE, DISCARD = "restore", "discard"
#: autosaves kept aside (:func:`keep_aside`): at most this many per model, newest kept ...
KEPT_PER_MODEL = 5
#: ... and none older than this many days (:func:`prune_kept`; the one just kept always stays)
KEPT_DAYS = 30


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
    def for_model(cls, model_path: str | Path, slot: int = 0) -> AutosaveFiles:
        """The autosave of ``model_path``: ``<key>`` for ``slot`` 0, ``<key>-<slot>`` for the autosave of a
        second window (or app) with unsaved edits of the same model."""
        folder, key = autosave_dir(), _key(model_path) + (f"-{slot}" if slot else "")
        return cls(folder / f"{key}{api.PROJECT_SUFFIX}", folder / f"{key}.json")

    @classmethod
    def of_model(cls, model_path: str | Path) -> list[AutosaveFiles]:
        """The autosaves of ``model_path`` in the folder (every slot; kept-aside ones are not), by name."""
        key = _key(model_path)
        found = [*autosave_dir().glob(f"{key}{api.PROJECT_SUFFIX}"), *autosave_dir().glob(f"{key}-*{api.PROJECT_SUFFIX}")]
        return [cls(p, p.with_suffix(".json")) for p in sorted(found)]

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


def _this_process() -> dict:
    """``pid`` and ``started`` (its creation time, Unix seconds) of this process, as notes record them."""
    return {"pid": os.getpid(), "started": psutil.Process().create_time()}


def write_autosave(project, model_path: Path, project_path: Path | None,
                   files: AutosaveFiles | None = None) -> AutosaveFiles:
    """Write ``project`` (a :class:`~workbench.core.pipeline.project.Project`) as the autosave of
    ``model_path`` (to ``files``, default its slot 0); both files atomically, the note naming this process.
    Raises ExportError when the folder is not writable."""
    files = files or AutosaveFiles.for_model(model_path)
    files.project.parent.mkdir(parents=True, exist_ok=True)
    note = {"model_path": str(Path(model_path).resolve()),
            "project_path": str(project_path) if project_path else None, "saved_at": time.time(),
            **_this_process()}
    api.atomic_write_bytes(files.note, json.dumps(note, indent=1).encode("utf-8"))
    api.save_project(project, files.project)
    return files


def keep_aside(files: AutosaveFiles, *, move: bool) -> Path:
    """Keep the autosaved project of ``files`` under a name no later autosave writes to, in the same
    folder (its model and data paths are relative to it): ``<key>.kept-YYYYmmdd-HHMMSS.wbproj``.
    ``move``: rename it (and remove its note, so it is offered no more); else copy it. Returns where it is
    now (its own path when it could not be renamed or copied)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = files.project.with_name(f"{files.project.stem}.kept-{stamp}{api.PROJECT_SUFFIX}")
    n = 1
    while target.exists():
        n += 1
        target = files.project.with_name(f"{files.project.stem}.kept-{stamp}-{n}{api.PROJECT_SUFFIX}")
    try:
        if move:
            os.replace(files.project, target)
            files.note.unlink(missing_ok=True)
        else:
            target.write_bytes(files.project.read_bytes())
    except OSError as exc:
        log.warning("could not keep the autosave %s aside: %s", files.project, exc)
        return files.project
    prune_kept(spare=target)
    return target


def kept_files() -> list[Path]:
    """The autosaves kept aside in :func:`autosave_dir` (``<key>.kept-<stamp>.wbproj``), by name."""
    folder = autosave_dir()
    return sorted(folder.glob(f"*.kept-*{api.PROJECT_SUFFIX}")) if folder.is_dir() else []


def _kept_at(path: Path) -> float:
    """When ``path`` was kept aside (Unix seconds): the stamp of its name, else its modification time."""
    stamp = path.name.split(".kept-", 1)[-1][:15]
    try:
        return time.mktime(time.strptime(stamp, "%Y%m%d-%H%M%S"))
    except ValueError:
        try:
            return path.stat().st_mtime
        except OSError:
            return time.time()


def prune_kept(spare: Path | None = None, now: float | None = None) -> list[Path]:
    """Delete kept-aside autosaves older than :data:`KEPT_DAYS` days and, per model, all but the newest
    :data:`KEPT_PER_MODEL`; never ``spare`` (the one just kept). Returns the files deleted (a file that cannot
    be deleted is logged and left)."""
    now = time.time() if now is None else now
    by_model: dict[str, list[tuple[float, Path]]] = {}
    for path in kept_files():
        by_model.setdefault(path.name.split(".kept-", 1)[0], []).append((_kept_at(path), path))
    gone = []
    for kept in by_model.values():
        kept.sort(key=lambda item: (item[0], item[1].name), reverse=True)  # newest first
        for rank, (at, path) in enumerate(kept):
            if path == spare or (rank < KEPT_PER_MODEL and now - at <= KEPT_DAYS * 86400):
                continue
            try:
                path.unlink()
            except OSError as exc:
                log.warning("could not delete the old kept-aside autosave %s: %s", path, exc)
                continue
            gone.append(path)
    return gone


def kept_text() -> str:
    """One sentence saying where the kept-aside autosaves are ("" when there are none)."""
    kept = kept_files()
    if not kept:
        return ""
    return (f"{len(kept)} earlier autosave{'s' if len(kept) != 1 else ''} that could not be restored as written "
            f"{'are' if len(kept) != 1 else 'is'} kept in {autosave_dir()} (File > Apply Project to Model applies one; "
            f"kept {KEPT_DAYS} days, at most {KEPT_PER_MODEL} per model).")


def _follow_files(project, old_dir: Path, new_dir: Path) -> None:
    """Point the data and eval files of ``project`` (an autosave, its paths relative to :func:`autosave_dir`)
    that were inside ``old_dir`` and are now missing at the same place inside ``new_dir`` (the model's folder
    moved with them), where they exist."""
    def follow(value):
        if not isinstance(value, str) or not value:
            return value
        path = Path(os.path.normpath(autosave_dir().resolve() / value))
        if path.exists() or not path.is_relative_to(old_dir):
            return value
        moved = new_dir / path.relative_to(old_dir)
        return str(moved) if moved.exists() else value

    if isinstance(project.data, dict) and "path" in project.data:
        project.data["path"] = follow(project.data["path"])
    if isinstance(project.evaluation, dict):
        for key in ("data", "metric"):  # a built-in metric's name is no file: left as it is
            if key in project.evaluation:
                project.evaluation[key] = follow(project.evaluation[key])


def adopt_moved(model_path: str | Path, sha256: str) -> AutosaveFiles | None:
    """The autosave of a model that moved: one whose model is no longer at the path its note names and had
    the sha256 ``sha256`` of the model now at ``model_path`` (the newest, when several), renamed to
    ``model_path``'s own autosave with its model path rewritten (written first, the old files removed after:
    a crash in between leaves two copies, never none). None when there is none, or ``model_path`` has an
    autosave of its own, or the renamed one cannot be written (logged; the old one is then left as it was)."""
    target = AutosaveFiles.for_model(model_path)
    if not sha256 or target.exists() or not autosave_dir().is_dir():
        return None
    found = []
    for path in autosave_dir().glob(f"*{api.PROJECT_SUFFIX}"):
        files = AutosaveFiles(path, path.with_suffix(".json"))
        note = files.read_note()
        if (".kept-" in path.name or not note.get("model_path") or Path(note["model_path"]).exists()
                or in_use(files)):
            continue
        try:
            project = api.load_project(path, check_model=False)
        except WorkbenchError:
            continue
        if project.model.sha256 == sha256:
            found.append((note.get("saved_at") or 0, path.name, files, note, project))
    if not found:
        return None
    _at, _name, files, note, project = max(found, key=lambda f: (f[0], f[1]))
    project.model.path = str(Path(model_path).resolve())
    _follow_files(project, Path(note["model_path"]).parent, Path(project.model.path).parent)
    try:
        api.save_project(project, target.project)  # data and eval paths: relative to the same folder, unchanged
        api.atomic_write_bytes(target.note, json.dumps({**note, "model_path": project.model.path, "moved_from":
                                                        note["model_path"]}, indent=1).encode("utf-8"))
    except (WorkbenchError, OSError) as exc:
        log.warning("could not move the autosave %s to %s: %s", files.project, target.project, exc)
        target.remove()
        return None
    files.remove()
    return target


class ProjectPathCommand(QUndoCommand):
    """Point the document at another project file (``doc.project_path``, where Ctrl+S saves) as part of
    an undoable edit: a restored autosave names the project its edits belong to, and undoing the
    restore must point the window back at what was open. ``on_change()`` runs after each switch (the
    window title)."""

    def __init__(self, document, path: Path | None, on_change, text: str = "Project file of the autosave"):
        super().__init__(text)
        self._doc, self._on_change = document, on_change
        self._before, self._after = document.project_path, path

    def _set(self, path: Path | None) -> None:
        self._doc.project_path = path
        self._on_change()

    def redo(self) -> None:
        self._set(self._after)

    def undo(self) -> None:
        self._set(self._before)


class RestoreCommand(QUndoCommand):
    """Adopt an autosaved project as one edit: every field a project saves (recipe; data source, sample
    counts and evaluation settings; allow_code and export section; calibration cache; results and sweep).
    Undo puts back what the model opened with.

    ``show_settings(settings)`` shows :class:`~workbench.qt.document.Settings` in the window's panels and
    the document; ``settings`` are the project's, its paths absolute. :attr:`notes` say which saved parts
    were unreadable and skipped."""

    def __init__(self, document, show_settings, project, settings, text: str = "Restore autosaved edits"):
        super().__init__(text)
        self._doc, self._show_settings = document, show_settings
        self._project, self._settings = project, settings
        self._before = self._state()
        self._after: tuple | None = None  # the restored state once shown (a redo puts back the same)
        self.notes: list[str] = []

    def _state(self) -> tuple:
        doc = self._doc
        return doc.recipe.model_copy(deep=True), doc.settings, doc.saved_state()

    def _set(self, state: tuple) -> None:
        recipe, settings, saved = state
        self._doc.set_recipe(recipe.model_copy(deep=True))
        self._show_settings(settings)  # before the saved state: other data drops the calibration cache
        self._doc.set_saved_state(saved)

    def redo(self) -> None:
        if self._after is not None:
            self._set(self._after)
            return
        doc, project = self._doc, self._project
        doc.open_latency_kept(project.latency_kept)  # the units its latency check kept float stay its
        doc.set_recipe(project.recipe.model_copy(deep=True))
        self._show_settings(self._settings)
        doc.allow_code, doc.export = project.allow_code, project.export
        self.notes = doc.restore_results(project.results, project.calibration)
        self._after = self._state()

    def undo(self) -> None:
        self._set(self._before)


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
        if (files not in exclude and note.get("model_path") and Path(note["model_path"]).is_file()
                and not in_use(files)):
            notes.append(note)
    return sorted(notes, key=lambda n: n.get("saved_at") or 0)


def in_use(files: AutosaveFiles, me: Autosaver | None = None) -> bool:
    """Whether ``files`` are the autosave of a session still running (not left by one that ended): another
    window of this process whose autosaver has it (not ``me``), or another process, still running, that
    wrote its note (its pid and creation time; a pid reused by another process does not count)."""
    note = files.read_note()
    pid, started = note.get("pid"), note.get("started")
    if not isinstance(pid, int) or not isinstance(started, (int, float)):
        return False
    if pid == os.getpid():
        return any(files in a.owned for a in list(_RUNNING) if a is not me)
    try:
        return abs(psutil.Process(pid).create_time() - started) < 1.0
    except (psutil.Error, OSError, ValueError):
        return False


def to_offer(model_path: str | Path, me: Autosaver) -> AutosaveFiles | None:
    """The autosave of ``model_path`` to offer back (Restore / Discard): one left by a session that ended
    (the oldest slot first), never one another running window or app is still writing, nor ``me``'s own."""
    for files in AutosaveFiles.of_model(model_path):
        if files not in me.owned and not in_use(files, me):
            return files
    return None


def others_text(exclude: set[AutosaveFiles] = frozenset(), open_model: Path | None = None) -> str:
    """The window's once-per-session note on the autosave folder ("" when there is nothing to say): the
    autosaves of other models left by a session that did not exit cleanly (:func:`left_behind`; each model named
    with its folder where its file name alone is another's or ``open_model``'s), and where the kept-aside ones
    are, after old ones are deleted (:func:`prune_kept`)."""
    prune_kept()
    others = told_apart([Path(n["model_path"]) for n in left_behind(exclude)], open_model)
    said = []
    if others:
        names = ", ".join(others[:3]) + (" ..." if len(others) > 3 else "")
        said.append(f"Unsaved edits of {names} were autosaved by a session that did not exit cleanly: open that "
                    "model to restore them.")
    return " ".join([*said, kept_text()]).strip()


def told_apart(paths: list[Path], open_model: Path | None = None) -> list[str]:
    """The file names of ``paths``, each as ``FOLDER/NAME`` where its name alone is also another's or
    ``open_model``'s: opening ppocrv4_rec/model.onnx read "Unsaved edits of model.onnx were autosaved ...: open that
    model to restore them" of nudenet_320n/model.onnx."""
    names = [p.name for p in paths] + ([open_model.name] if open_model is not None else [])
    return [f"{p.parent.name}/{p.name}" if names.count(p.name) > 1 else p.name for p in paths]


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


#: the autosavers of this process's windows still running (:func:`in_use`)
_RUNNING: weakref.WeakSet[Autosaver] = weakref.WeakSet()


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
        #: why the last autosave failed (one line: where, and what to do), None after a success
        self.last_error: str | None = None
        #: autosaves this session wrote or restored (only these are removed by :meth:`discard`, so a
        #: crash's autosave of a model is never removed before it has been offered)
        self.owned: set[AutosaveFiles] = set()
        #: (model path, the files its autosave goes to): the first slot no other session writes
        self._chosen: tuple[Path, AutosaveFiles] | None = None
        _RUNNING.add(self)
        #: the status bar's "Autosave failed" mark (its tooltip: where and what to do), shown while failing
        self.failed_mark = QLabel("Autosave failed")
        self.failed_mark.setVisible(False)
        status_bar = getattr(window, "statusBar", None)
        if status_bar is not None:
            status_bar().addPermanentWidget(self.failed_mark)

    def files(self) -> AutosaveFiles | None:
        """Where this window autosaves its model: the first slot that is free or its own (never an autosave
        another window or app writes, nor one a crash left and not yet offered)."""
        path = self._window.doc.model_path
        if path is None:
            return None
        if self._chosen is not None and self._chosen[0] == path:
            chosen = self._chosen[1]
            if chosen.project.parent == autosave_dir() and (chosen in self.owned or not chosen.exists()):
                return chosen
        slot = 0
        while (files := AutosaveFiles.for_model(path, slot)).exists() and files not in self.owned:
            slot += 1
        self._chosen = (path, files)
        return files

    def save_now(self) -> Path | None:
        """Write the autosave if the document has unsaved edits; returns its path (None: nothing to save).

        A failure is logged and kept in :attr:`last_error`; the first of a run of failures is said in
        the window's status line, and the status bar's :attr:`failed_mark` stays until an autosave
        succeeds (the app goes on; the next tick retries)."""
        doc = self._window.doc
        self._window.sync_data_spec()  # the Calibration panel as shown, a path typed without Enter too
        if not doc.modified:
            return None
        try:
            files = write_autosave(self._window.current_project(), doc.model_path, doc.project_path, self.files())
        except (WorkbenchError, OSError) as exc:
            log.warning("autosave failed: %s", exc)
            self._failed(exc)
            return None
        self.last_error = None
        self.failed_mark.setVisible(False)
        self.owned.add(files)
        return files.project

    def _failed(self, exc: Exception) -> None:
        """Tell the user once per run of failures where autosave failed and what to do; keep the mark."""
        folder = autosave_dir()
        if isinstance(exc, WorkbenchError):
            why = exc.message.rstrip(".")
        else:
            why = f"{getattr(exc, 'filename', None) or folder}: {exc.strerror or exc}"
        text = (f"Autosave failed ({why}): your unsaved edits are not protected against a crash. Save the project "
                f"(Ctrl+S), or make {folder} a folder you can write to.")
        first = self.last_error is None
        self.last_error = text
        self.failed_mark.setToolTip(text)
        self.failed_mark.setVisible(True)
        if first:
            self._window.set_status(text)

    def adopt(self, files: AutosaveFiles) -> None:
        """Take over an autosave restored from an earlier session (removed like one written now, and where
        this window's next autosaves go)."""
        self.owned.add(files)
        if self._window.doc.model_path is not None:
            self._chosen = (self._window.doc.model_path, files)

    def discard(self) -> None:
        """Remove the autosave of the open model (after a clean save, a discard or a quit); with no
        unsaved edits left, a failed autosave is no longer worth a mark."""
        self.last_error = None
        self.failed_mark.setVisible(False)
        files = self.files()
        if files is not None and files in self.owned:
            files.remove()
            self.owned.discard(files)

    def stop(self) -> None:
        self.timer.stop()
        _RUNNING.discard(self)
