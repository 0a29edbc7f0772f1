"""The calibration file that sits beside a model, by name (the app opens it with the model; the CLI
names it when ``--data`` is missing)."""

from __future__ import annotations

from pathlib import Path


def data_beside(model_path: str | Path) -> Path | None:
    """``<stem>_calib.npz``, else ``calib.npz``, in the model's folder: the first that is a regular
    file, or None (no file is read)."""
    model_path = Path(model_path)
    for name in (f"{model_path.stem}_calib.npz", "calib.npz"):
        candidate = model_path.parent / name
        if candidate.is_file():
            return candidate
    return None
