"""Persistent app settings through QSettings: recent files and the last folder used."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

ORGANIZATION = "Workbench"
APPLICATION = "Workbench"
MAX_RECENT = 10


def _settings() -> QSettings:
    return QSettings(ORGANIZATION, APPLICATION)


def recent_files() -> list[str]:
    """Most recent first; files that no longer exist are dropped."""
    value = _settings().value("recent_files", [])
    if isinstance(value, str):
        value = [value]
    return [p for p in (value or []) if Path(p).exists()]


def add_recent_file(path: str | Path) -> list[str]:
    path = str(Path(path).resolve())
    files = [path] + [p for p in recent_files() if p != path]
    files = files[:MAX_RECENT]
    _settings().setValue("recent_files", files)
    return files


def clear_recent_files() -> None:
    _settings().setValue("recent_files", [])


def last_dir() -> str:
    return str(_settings().value("last_dir", str(Path.home())))


def set_last_dir(path: str | Path) -> None:
    p = Path(path)
    _settings().setValue("last_dir", str(p if p.is_dir() else p.parent))


def theme() -> str:
    """The chosen theme: "system" (default), "light" or "dark"."""
    value = str(_settings().value("theme", "system"))
    return value if value in ("system", "light", "dark") else "system"


def set_theme(mode: str) -> None:
    _settings().setValue("theme", mode)


def executor() -> str:
    """Where the app's sensitivity sweep runs its tasks: "inline" (default) or "ray" / "ray:ADDRESS"."""
    return str(_settings().value("executor", "inline")) or "inline"


def set_executor(spec: str) -> None:
    _settings().setValue("executor", spec)


def window_state() -> tuple[bytes | None, bytes | None]:
    """Saved (geometry, dock/toolbar state) of the main window, or Nones."""
    s = _settings()
    geometry, state = s.value("window/geometry"), s.value("window/state")
    return (bytes(geometry) if geometry else None, bytes(state) if state else None)


def save_window_state(geometry: bytes, state: bytes) -> None:
    s = _settings()
    s.setValue("window/geometry", geometry)
    s.setValue("window/state", state)
