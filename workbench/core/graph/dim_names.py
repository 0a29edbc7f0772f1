"""What a symbolic dimension's ``dim_param`` says: a name a person gave a size, or only that it is unknown.

One rule for every view of a shape (the canvas's output shapes, :func:`workbench.core.graph.layout.graph_structure`;
the inspector's node facts, :mod:`workbench.core.inspection.node_facts`) and for the dims the shape checks
take as shared (:func:`workbench.core.model.shapes.shared_dim_name`):

* a name (``batch``, ``seq_len``, Paddle's ``p2o.DynamicDimension.0``: letters, digits, ``_``, ``.`` and
  ``:``, not starting with a digit) is shown as it is, and dimensions of the same name share a size;
* a placeholder that only says the size is unknown (``""``, ``?``, ``-1``, ``dynamic``, ``none``,
  ``unknown``, in any case), a name shape inference made up (``unk__3``) and an expression inference derived
  (nudenet's ``floor(floor(height/2 - 1/2)/2) + 1``) show as ``?``, each an unknown of its own.
"""

from __future__ import annotations

import re

import onnx

#: Names exporters write for a dimension they know nothing about (compared in lower case: "None", "Dynamic").
PLACEHOLDER_DIMS = frozenset({"", "?", "-1", "none", "dynamic", "unknown"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:]*")


def named_dim(param: str | None) -> bool:
    """True when ``param`` (a ``dim_param``) is a name a person gave a size; False for a placeholder, a
    generated ``unk__N`` and an expression (see the module docstring)."""
    if not param or param.lower() in PLACEHOLDER_DIMS or (param.startswith("unk__") and param[5:].isdigit()):
        return False
    return _NAME.fullmatch(param) is not None


def dim_of(d: onnx.TensorShapeProto.Dimension) -> int | str | None:
    """A dimension as shown: its size (int, 0 or more), its name (:func:`named_dim`), or None (unknown:
    no value, a negative size such as exporters' -1, a placeholder, ``unk__N`` or an expression)."""
    if d.HasField("dim_value"):
        return d.dim_value if d.dim_value >= 0 else None
    return d.dim_param if named_dim(d.dim_param) else None
