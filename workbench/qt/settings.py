"""Persistent app settings through QSettings: recent files, the last folder of each kind of file dialog,
the theme, the sweep executor and the window layout."""

from __future__ import annotations

import json
import os
from pathlib import Path

import platformdirs
from PySide6.QtCore import QSettings

import workbench

ORGANIZATION = "Workbench"
APPLICATION = "Workbench"
MAX_RECENT = 10


def _settings() -> QSettings:
    return QSettings(ORGANIZATION, APPLICATION)


def recent_files(*, existing: bool = True) -> list[str]:
    """Most recent first; files that no longer exist are dropped (kept with ``existing=False``: File > Open
    Recent lists them as not found)."""
    value = _settings().value("recent_files", [])
    if isinstance(value, str):
        value = [value]
    return [p for p in (value or []) if not existing or Path(p).exists()]


def forget_recent_file(path: str) -> list[str]:
    """Remove ``path`` (as stored) from the recent files; returns the list left, missing files included."""
    files = [p for p in recent_files(existing=False) if p != path]
    _settings().setValue("recent_files", files)
    return files


def add_recent_file(path: str | Path) -> list[str]:
    """Put ``path`` (resolved) first in the recent files, at most :data:`MAX_RECENT` kept; returns the list. Files
    that no longer exist stay listed (File > Open Recent and the welcome page show them as not found; choosing one
    removes it, :func:`forget_recent_file`): opening a file dropped every missing entry without a word."""
    path = str(Path(path).resolve())
    files = [path] + [p for p in recent_files(existing=False) if p != path]
    files = files[:MAX_RECENT]
    _settings().setValue("recent_files", files)
    return files


def clear_recent_files() -> None:
    _settings().setValue("recent_files", [])


#: what a file dialog is for -> the folder it starts in is the last one used for that (:func:`last_folder`)
FOLDER_PURPOSES = ("model", "project", "export", "data")
#: the purposes whose dialogs save files: the last folder any of them used is where a save dialog of
#: another starts before it has one of its own (:func:`start_path`)
SAVE_PURPOSES = ("project", "export")


def last_folder(purpose: str, fallback: str | Path | None = None) -> str:
    """The folder the last file dialog for ``purpose`` (one of :data:`FOLDER_PURPOSES`) ended in, if it still
    exists; else ``fallback`` (e.g. the open model's folder), else the home folder. Raises ValueError for an
    unknown purpose."""
    if purpose not in FOLDER_PURPOSES:
        raise ValueError(f"unknown file dialog purpose {purpose!r}; one of {', '.join(FOLDER_PURPOSES)}")
    keys = (f"last_folder/{purpose}", "last_dir") if purpose == "model" else (f"last_folder/{purpose}",)
    s = _settings()
    for key in keys:  # "last_dir": where the open dialog started before the folders were kept per purpose
        value = s.value(key)
        if value and Path(str(value)).is_dir():
            return str(value)
    return str(fallback) if fallback not in (None, "") else str(Path.home())


def remember_folder(purpose: str, path: str | Path) -> None:
    """Keep the folder of ``path`` (a file, or a folder itself) as where the next ``purpose`` dialog starts;
    a path whose folder does not exist is ignored. Raises ValueError for an unknown purpose."""
    if purpose not in FOLDER_PURPOSES:
        raise ValueError(f"unknown file dialog purpose {purpose!r}; one of {', '.join(FOLDER_PURPOSES)}")
    p = Path(path).expanduser().absolute()
    folder = p if p.is_dir() else p.parent
    if folder.is_dir():
        _settings().setValue(f"last_folder/{purpose}", str(folder))
        if purpose in SAVE_PURPOSES:
            _settings().setValue("last_folder/save", str(folder))


def _writable(folder) -> bool:
    """Whether files can be saved in ``folder``, and its mode lets someone write there: root may write into a
    read-only folder (a shared corpus, ``dr-xr-xr-x``) but a save dialog does not start there."""
    if not folder or not Path(str(folder)).is_dir() or not os.access(str(folder), os.W_OK | os.X_OK):
        return False
    return bool(Path(str(folder)).stat().st_mode & 0o222)


def user_folder() -> Path:
    """The user's documents folder (platformdirs) when it exists, else the home folder."""
    documents = Path(platformdirs.user_documents_dir())
    return documents if documents.is_dir() else Path.home()


def in_package(folder: str | Path) -> bool:
    """Whether ``folder`` is inside the installed workbench package (the bundled example's folder)."""
    package = Path(workbench.__file__).resolve().parent
    return Path(str(folder)).resolve().is_relative_to(package)


def start_path(purpose: str, name: str, fallback: str | Path | None = None) -> str:
    """Where a save dialog for ``purpose`` starts: ``name`` (a file name, no folder) in the first writable
    folder of: the last one a ``purpose`` dialog used, the last one any save dialog used
    (:data:`SAVE_PURPOSES`: Save Project As after an Export starts where the export went), ``fallback``
    (e.g. the open model's folder), the user's documents or home folder (:func:`user_folder`). A read-only
    model folder (a shared corpus) is skipped: a save there fails; so is any folder inside the installed
    package (the bundled example's, writable when installed as root): files saved there are lost with
    the next install."""
    s = _settings()
    for folder in (s.value(f"last_folder/{purpose}"), s.value("last_folder/save"), fallback, user_folder()):
        if _writable(folder) and not in_package(str(folder)):
            return str(Path(str(folder)) / name)
    return str(user_folder() / name)


def last_dir() -> str:
    """The folder the last Open dialog for a model or project ended in (:func:`last_folder` ``("model")``)."""
    return last_folder("model")


def set_last_dir(path: str | Path) -> None:
    remember_folder("model", path)


def theme() -> str:
    """The chosen theme: "system" (default), "light" or "dark"."""
    value = str(_settings().value("theme", "system"))
    return value if value in ("system", "light", "dark") else "system"


def set_theme(mode: str) -> None:
    _settings().setValue("theme", mode)


def executor() -> str:
    """Where the app's sensitivity sweep runs its tasks: "threads" (default: the sweep's own, one thread
    per core), "inline" (one thread) or "ray" / "ray:ADDRESS"."""
    return str(_settings().value("executor", "threads")) or "threads"


def set_executor(spec: str) -> None:
    _settings().setValue("executor", spec)


#: calibration rows the sensitivity sweep measures unless set (the first ones)
SWEEP_ROWS = 8


def sweep_rows() -> int:
    """How many of the first calibration rows the app's sensitivity sweep measures (the Sensitivity panel's
    Rows box; :data:`SWEEP_ROWS` unless set, at least 1)."""
    try:
        return max(1, int(_settings().value("sweep/rows", SWEEP_ROWS)))
    except (TypeError, ValueError):
        return SWEEP_ROWS


def set_sweep_rows(rows: int) -> None:
    _settings().setValue("sweep/rows", int(rows))


def window_state() -> tuple[bytes | None, bytes | None]:
    """Saved (geometry, dock/toolbar state) of the main window, or Nones."""
    s = _settings()
    geometry, state = s.value("window/geometry"), s.value("window/state")
    return (bytes(geometry) if geometry else None, bytes(state) if state else None)


def save_window_state(geometry: bytes, state: bytes) -> None:
    s = _settings()
    s.setValue("window/geometry", geometry)
    s.setValue("window/state", state)


#: projects whose view (colour mode) is kept, most recent last
_VIEWS_KEPT = 50


def project_colour(path: str | Path) -> str | None:
    """The colour mode the project at ``path`` was saved with in this app ("op", "dtype", "error", "own noise",
    or ``"sensitivity:<figure>"``: the sweep's figure, e.g. ``"sensitivity:only_quant_db"``); None: none kept."""
    return _project_views().get(str(Path(path).resolve()))


def set_project_colour(path: str | Path, mode: str) -> None:
    """Keep ``mode`` as the colour mode of the project at ``path`` (the last :data:`_VIEWS_KEPT` projects)."""
    views = _project_views()
    key = str(Path(path).resolve())
    views.pop(key, None)
    views[key] = mode
    _settings().setValue("project_colour", json.dumps(dict(list(views.items())[-_VIEWS_KEPT:])))


def project_rank(path: str | Path) -> str | None:
    """What the Errors bars ranked by ("local", "accumulated") when the project at ``path`` was saved in this app;
    None: none kept."""
    return _project_views("project_rank").get(str(Path(path).resolve()))


def set_project_rank(path: str | Path, rank: str) -> None:
    """Keep ``rank`` as the Errors bars' ranking of the project at ``path`` (the last :data:`_VIEWS_KEPT` projects)."""
    views = _project_views("project_rank")
    key = str(Path(path).resolve())
    views.pop(key, None)
    views[key] = rank
    _settings().setValue("project_rank", json.dumps(dict(list(views.items())[-_VIEWS_KEPT:])))


def _project_views(name: str = "project_colour") -> dict[str, str]:
    try:
        value = json.loads(str(_settings().value(name, "{}") or "{}"))
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
