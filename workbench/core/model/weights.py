"""Weights as initializers: Constant nodes lifted, initializers removed from graph inputs.

Uses the onnx_ir passes ``LiftConstantsToInitializersPass`` (every tensor-valued Constant, any
size, in every graph; a Constant that is a graph output stays) and
``RemoveInitializersFromInputsPass``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import onnx

from workbench.core.graph.walk import iter_graphs

if TYPE_CHECKING:
    import onnx_ir as ir

log = logging.getLogger(__name__)

_TENSOR_ATTRS = {"value", "value_float", "value_floats", "value_int", "value_ints"}


def count_constants(proto: onnx.ModelProto) -> int:
    """Number of liftable Constant nodes (tensor-valued) in all graphs."""
    n = 0
    for _, g in iter_graphs(proto.graph):
        n += sum(1 for node in g.node if node.op_type == "Constant" and node.domain in ("", "ai.onnx")
                 and len(node.attribute) == 1 and node.attribute[0].name in _TENSOR_ATTRS)
    return n


def initializers_listed_as_inputs(proto: onnx.ModelProto) -> list[str]:
    """Names of main-graph initializers that are also listed in ``graph.input``."""
    inits = {t.name for t in proto.graph.initializer}
    return [vi.name for vi in proto.graph.input if vi.name in inits]


def lift_weights(proto: onnx.ModelProto) -> tuple[onnx.ModelProto, int, list[str]]:
    """Lift Constant nodes to initializers and drop initializers from the graph inputs.

    Returns
    -------
    proto : onnx.ModelProto
        A new model (the argument is not modified).
    lifted : int
        Number of Constant nodes turned into initializers.
    dropped_inputs : list of str
        Initializers that were also graph inputs and were removed from ``graph.input``.
    """
    before = count_constants(proto)
    dropped = initializers_listed_as_inputs(proto)
    if not before and not dropped:
        return proto, 0, []
    import onnx_ir as ir  # 0.4 s (it loads sympy): only for models that hold Constant weights
    from onnx_ir.passes.common import RemoveInitializersFromInputsPass

    try:
        model = ir.from_proto(proto)
        if before:
            _lift(model)
        if dropped:
            RemoveInitializersFromInputsPass()(model)
        out = ir.to_proto(model)
    except Exception as exc:  # noqa: BLE001 - onnx_ir rejects some malformed graphs; keep the model as is
        log.warning("lifting constants skipped: %s", exc)
        return proto, 0, []
    return out, before - count_constants(out), dropped


def _lift(model: ir.Model) -> None:
    from onnx_ir.passes.common import LiftConstantsToInitializersPass

    try:
        LiftConstantsToInitializersPass(lift_all_constants=True, size_limit=0)(model)
    except ValueError:  # e.g. a sparse_value Constant: lift only the tensor-valued ones
        LiftConstantsToInitializersPass(lift_all_constants=False, size_limit=0)(model)
