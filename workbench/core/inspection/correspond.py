"""Whether two models are versions of one another: same graph inputs and outputs.

A float model and a file quantized from it keep the graph's input and output names, their count
and their ranks (quantizers insert Q/DQ inside the graph, not at its interface). Comparing or
evaluating two unrelated models would otherwise report "0 nodes matched" or blame the data. Outputs
renamed by another tool (same count, other names) may be matched by position, with a note.
"""

from __future__ import annotations

import onnx

from workbench.core.errors import ModelError
from workbench.core.graph.outputs import pair_outputs, renamed_note


def _interface(values, skip: set[str]) -> dict[str, int | None]:
    """name -> rank (None when the file gives no shape) of graph inputs/outputs, initializers left out."""
    out = {}
    for v in values:
        if v.name in skip:
            continue
        t = v.type.tensor_type
        out[v.name] = len(t.shape.dim) if t.HasField("shape") else None
    return out


def output_names(a: onnx.ModelProto, b: onnx.ModelProto) -> list[tuple[str, str]]:
    """(output of ``a``, output of ``b``) pairs (:func:`workbench.core.graph.outputs.pair_outputs`):
    by name, else by position when both have as many (outputs renamed by another tool), else none."""
    return pair_outputs([o.name for o in a.graph.output], [o.name for o in b.graph.output])


def renamed_outputs_note(a: onnx.ModelProto, b: onnx.ModelProto) -> str | None:
    """The note ``evaluate`` gives when the outputs are matched by position, None when names match."""
    return renamed_note([o.name for o in a.graph.output], [o.name for o in b.graph.output])


def interface_mismatch(a: onnx.ModelProto, b: onnx.ModelProto, *, outputs_by_position: bool = False) -> str | None:
    """How the graph inputs/outputs of ``a`` and ``b`` differ (names, count or ranks), None when they agree.

    ``outputs_by_position``: outputs of other names but the same count are compared by position
    (:func:`output_names`), as ``evaluate`` matches them.

    Returns
    -------
    str or None
        E.g. ``"inputs ['x'] vs ['input.1']"`` or ``"input 'x' has rank 4 vs 2"``.
    """
    for kind in ("input", "output"):
        sa = _interface(getattr(a.graph, kind), {i.name for i in a.graph.initializer})
        sb = _interface(getattr(b.graph, kind), {i.name for i in b.graph.initializer})
        pairs = [(n, n) for n in sa] if sorted(sa) == sorted(sb) else []
        if not pairs and kind == "output" and outputs_by_position:
            pairs = output_names(a, b)
        if not pairs and (sa or sb):
            return f"{kind}s {sorted(sa)} vs {sorted(sb)}"
        for na, nb in pairs:
            if sa[na] is not None and sb[nb] is not None and sa[na] != sb[nb]:
                return f"{kind} {na!r} has rank {sa[na]} vs {sb[nb]}"
    return None


def check_models_correspond(a: onnx.ModelProto, b: onnx.ModelProto, label_a: str, label_b: str,
                            *, hint: str, outputs_by_position: bool = False) -> None:
    """Refuse two models whose graph inputs/outputs differ (:func:`interface_mismatch`).

    Raises
    ------
    ModelError
        One line naming both models and the first difference.
    """
    why = interface_mismatch(a, b, outputs_by_position=outputs_by_position)
    if why is not None:
        raise ModelError(f"{label_a} and {label_b} do not correspond: graph {why}.", hint=hint)
