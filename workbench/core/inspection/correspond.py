"""Whether two models are versions of one another: same graph inputs and outputs.

A float model and a file quantized from it keep the graph's input and output names, their count
and their ranks (quantizers insert Q/DQ inside the graph, not at its interface). Comparing or
evaluating two unrelated models would otherwise report "0 nodes matched" or blame the data.
"""

from __future__ import annotations

import onnx

from workbench.core.errors import ModelError


def _interface(values, skip: set[str]) -> dict[str, int | None]:
    """name -> rank (None when the file gives no shape) of graph inputs/outputs, initializers left out."""
    out = {}
    for v in values:
        if v.name in skip:
            continue
        t = v.type.tensor_type
        out[v.name] = len(t.shape.dim) if t.HasField("shape") else None
    return out


def interface_mismatch(a: onnx.ModelProto, b: onnx.ModelProto) -> str | None:
    """How the graph inputs/outputs of ``a`` and ``b`` differ (names, count or ranks), None when they agree.

    Returns
    -------
    str or None
        E.g. ``"inputs ['x'] vs ['input.1']"`` or ``"input 'x' has rank 4 vs 2"``.
    """
    for kind in ("input", "output"):
        sa = _interface(getattr(a.graph, kind), {i.name for i in a.graph.initializer})
        sb = _interface(getattr(b.graph, kind), {i.name for i in b.graph.initializer})
        if sorted(sa) != sorted(sb):
            return f"{kind}s {sorted(sa)} vs {sorted(sb)}"
        for name, rank in sa.items():
            if rank is not None and sb[name] is not None and rank != sb[name]:
                return f"{kind} {name!r} has rank {rank} vs {sb[name]}"
    return None


def check_models_correspond(a: onnx.ModelProto, b: onnx.ModelProto, label_a: str, label_b: str,
                            *, hint: str) -> None:
    """Refuse two models whose graph inputs/outputs differ (:func:`interface_mismatch`).

    Raises
    ------
    ModelError
        One line naming both models and the first difference.
    """
    why = interface_mismatch(a, b)
    if why is not None:
        raise ModelError(f"{label_a} and {label_b} do not correspond: graph {why}.", hint=hint)
