"""The status line's one line when a file could not be opened: the file's name, why, and what to do, as the
error dialog says them ("Could not open nosuch.onnx: no such file; check the path or pick it with File > Open
(Ctrl+O)."). It read only "Could not open nosuch.onnx." while the dialog alone said why."""

from __future__ import annotations

from pathlib import Path

from workbench.core.errors import WorkbenchError

#: what to do about a file that is not where it was asked for
PICK_IT = "check the path or pick it with File > Open (Ctrl+O)"
#: what to do about a recent file that is gone
OPEN_WHERE_IT_IS = "open it where it is now with File > Open (Ctrl+O)"


def _clause(text: str, path: Path) -> str:
    """``text`` as a clause after a colon: its leading path or file name and its end stop dropped, its first
    letter lower case unless it starts a name (an upper case second letter, "ONNX")."""
    text = text.strip()
    for prefix in (f"{path}: ", f"{path.name}: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    text = text.rstrip(". ")
    if text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    return text


def missing_line(path: Path) -> str:
    """The line for ``path`` when no file is there."""
    return f"Could not open {path.name}: no such file; {PICK_IT}."


def gone_recent_line(path: Path) -> str:
    """The line for a recent file that no longer exists (it was removed from the list)."""
    return (f"Could not open {path.name}: it no longer exists (moved, renamed or deleted) and was removed from "
            f"the recent files; {OPEN_WHERE_IT_IS}.")


def not_opened_line(path: Path, exc: BaseException) -> str:
    """The line for ``path``, whose open failed with ``exc``."""
    if not path.exists():
        return missing_line(path)
    if not isinstance(exc, WorkbenchError):
        return f"Could not open {path.name}: internal error ({type(exc).__name__}); the log has the details."
    why, hint = _clause(exc.message, path), _clause(exc.hint or "", path)
    return f"Could not open {path.name}: {why}" + (f"; {hint}." if hint else ".")
