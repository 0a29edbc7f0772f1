"""Non-negative activations on a symmetric signed grid use the whole grid.

A symmetric int8 spec (the ``s8s8`` preset) maps ``[-absmax, absmax]`` onto ``[-127, 127]`` with
zero point 0. For a tensor that is non-negative by construction (a Softmax output, the attention
probabilities multiplied into V; a Relu or Sigmoid output) the negative half of that grid is never
used, so the tensor keeps 7 of its 8 bits: a Softmax output gets steps of 1/127 where uint8 has
1/255, and P·V loses accuracy (issue 16: s8s8 gave 11.4 % error on an attention block where the
uint8 default gave 8.5 %). Such tensors are therefore planned asymmetric over ``[0, max]``: int8
with zero point -128 (``q = round(x / scale) - 128``, scale ``max / 255``), which onnxruntime's
int8 kernels (QLinearMatMul, QLinearConv) accept like any zero point. The dtype stays the
preset's; what changes is reported per tensor.
"""

from __future__ import annotations

from workbench.core.graph.index import GraphIndex
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.recipe.spec import QuantSpec

#: Ops whose output is >= 0 for every input (Softmax / Sigmoid in [0, 1], Relu in [0, inf)).
NON_NEGATIVE_OPS = frozenset({"Softmax", "Sigmoid", "Relu"})


def non_negative_tensors(ix: GraphIndex) -> set[str]:
    """Outputs of :data:`NON_NEGATIVE_OPS` in the graph of ``ix``."""
    return {n.output[0] for n in ix.graph.node if n.op_type in NON_NEGATIVE_OPS and n.output and n.output[0]}


def widen(activations: dict[str, QuantSpec], ix: GraphIndex) -> list[PlanIssue]:
    """Replace, in place, the symmetric signed spec of every non-negative tensor by the asymmetric
    spec of the same dtype (zero point at the bottom of the grid); one info issue per tensor."""
    issues = []
    nonneg = non_negative_tensors(ix)
    for t, spec in list(activations.items()):
        if t not in nonneg or not spec.symmetric or not spec.qtype.signed or spec.qtype.is_float:
            continue
        activations[t] = spec.model_copy(update={"symmetric": False})
        producer = ix.producer[t]
        issues.append(PlanIssue(producer.name, "info", f"tensor {t!r} is non-negative ({producer.op_type} output): "
                                f"{spec.dtype} with its zero point at the bottom of the grid over [0, max] instead of "
                                "symmetric, which would leave half the grid unused", code=IssueCode.NON_NEGATIVE_GRID))
    return issues



