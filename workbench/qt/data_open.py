"""A calibration data file (.npz / .npy) opened or dropped where a model goes (a drop on the window, File > Open
with "All files", ``workbench calib.npz``).

With a float model open it becomes that model's calibration data, as the Calibration panel's *Browse...* would
set it (one undoable edit). Otherwise it is refused in the app's terms: the error read the CLI's hint
"Give it as data (--data calib.npz) and a .onnx model in its place.", an option the app does not have.
"""

from __future__ import annotations

from pathlib import Path

from workbench.core import api
from workbench.core.errors import WorkbenchError

#: File suffixes the Calibration panel's "Array file" source reads.
DATA_SUFFIXES = (".npz", ".npy")


def is_data_file(path: Path) -> bool:
    """Whether ``path`` names a NumPy data file (by its suffix, any case)."""
    return path.suffix.lower() in DATA_SUFFIXES


def data_spec(path: Path) -> dict:
    """The Calibration panel's data spec of ``path``: ``{"kind": "npz" | "npy", "path": str}``."""
    return {"kind": path.suffix.lower().lstrip("."), "path": str(path)}


def not_a_model(path: Path, open_model: str | None) -> WorkbenchError:
    """The error for ``path`` opened with no float model to take it (``open_model``: the name of the quantized
    file that is open, else None)."""
    first = ("open its float .onnx model first (File > Open)" if open_model is None else
             f"{open_model} is a quantized file, which is not calibrated: open the float .onnx model first")
    return WorkbenchError(f"{path} is calibration data (a NumPy {path.suffix.lower()} file), not a model.",
                          hint=f"To calibrate on it, {first}, then open or drop this file again, or choose it in "
                               "the Calibration panel (Browse...).")


def taken_words(path: Path, model: str) -> str:
    """The status line once ``path`` is the calibration data of ``model`` (a file name)."""
    return (f"{path.name} is now the calibration data of {model} (Calibration panel; Ctrl+Z undoes): "
            "Run > Calibrate (F5) calibrates on it.")


def data_mismatch(spec: dict | None, model) -> WorkbenchError | None:
    """Why the array file of ``spec`` (kind ``npz`` / ``npy``) does not fit ``model``'s inputs (a missing input
    name, a wrong rank, fixed dim or dtype), checked as the CLI checks ``--data``: by opening the data source,
    which reads the arrays' headers only. None when it fits, or when ``spec`` is no existing array file (other
    kinds, a Python reader's code, are checked when a job reads them)."""
    if not spec or spec.get("kind") not in ("npz", "npy") or not Path(spec.get("path", "")).is_file():
        return None
    try:
        api.open_data_source(spec, model)
    except WorkbenchError as exc:
        return exc
    return None


def refused_words(path: Path, exc: WorkbenchError) -> str:
    """The status line when ``path`` was not taken as calibration data because of ``exc`` (one line: the file,
    the input, what is wrong, what to do, and that the previous data stays)."""
    hint = f" {exc.hint}" if exc.hint else ""
    return f"{path.name} not taken, the previous calibration data stays: {exc.message}{hint}"
