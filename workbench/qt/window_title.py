"""The main window's title: the open project's or model's file name, with its folder when the name
alone says nothing.

Exporters and model zoos name the file after what it is, not what it holds ("model.onnx",
"model_opset17.onnx", "model.q.onnx" in a folder named after the model); every corpus model is a
``model.onnx`` in its own folder, so the title read "model.onnx - Workbench" for all of them. A
generic name is shown with its parent folder: "nudenet_320n/model.onnx - Workbench".
"""

from __future__ import annotations

import re
from pathlib import Path

APP = "Workbench"
#: first word of a file stem that says nothing of the model ("model_opset17", "model.q", "net-fp16")
GENERIC_STEMS = frozenset({"model", "models", "net", "network", "graph", "export", "exported", "inference",
                           "main", "onnx", "project", "default", "untitled", "weights"})


def is_generic(path: Path) -> bool:
    """Whether ``path``'s file name tells nothing of the model: its stem's first word (split at
    ``.``, ``_``, ``-``) is one of :data:`GENERIC_STEMS`, case-insensitive."""
    first = re.split(r"[._\-]", path.name, maxsplit=1)[0]
    return first.lower() in GENERIC_STEMS


def shown_name(path: str | Path) -> str:
    """``path``'s file name, as ``"folder/name"`` when the name is generic (:func:`is_generic`) and it
    has a parent folder."""
    path = Path(path)
    parent = path.parent.name
    return f"{parent}/{path.name}" if parent and is_generic(path) else path.name


def file_stem(path: str | Path) -> str:
    """What a file saved from the model ``path`` is named after: its stem, or its folder's name when the file
    name is generic (:func:`is_generic`): "nudenet_320n" for ``nudenet_320n/model.onnx`` (a save dialog
    proposed "model.qdq.onnx" and "model.wbproj", which named no model once saved elsewhere)."""
    path = Path(path)
    return path.parent.name if path.parent.name and is_generic(path) else path.stem


def window_title(path: str | Path | None, modified: bool = False) -> str:
    """``"name[ *] - Workbench"`` for the open file ``path`` (:func:`shown_name`; `` *``: unsaved
    edits), ``"Workbench"`` without one."""
    if not path:
        return APP
    return f"{shown_name(path)}{' *' if modified else ''} - {APP}"
