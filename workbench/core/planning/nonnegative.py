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
from workbench.core.wording import count, plural

#: Ops whose output is >= 0 for every input (Softmax / Sigmoid in [0, 1], Relu in [0, inf)).
NON_NEGATIVE_OPS = frozenset({"Softmax", "Sigmoid", "Relu"})


def non_negative_tensors(ix: GraphIndex) -> set[str]:
    """Outputs of :data:`NON_NEGATIVE_OPS` in the graph of ``ix``."""
    return {n.output[0] for n in ix.graph.node if n.op_type in NON_NEGATIVE_OPS and n.output and n.output[0]}


def widen(activations: dict[str, QuantSpec], ix: GraphIndex) -> list[PlanIssue]:
    """Replace, in place, the symmetric signed spec of every non-negative tensor by the asymmetric
    spec of the same dtype (zero point at the bottom of the grid); one info issue for all of them
    (on the first tensor's producer; the message names up to five)."""
    nonneg = non_negative_tensors(ix)
    changed = []
    for t, spec in list(activations.items()):
        if t not in nonneg or not spec.symmetric or not spec.qtype.signed or spec.qtype.is_float:
            continue
        activations[t] = spec.model_copy(update={"symmetric": False})
        changed.append(t)
    if not changed:
        return []
    first = ix.producer[changed[0]]
    names = ", ".join(f"{t!r} ({ix.producer[t].op_type})" for t in changed[:5]) + (" ..." if len(changed) > 5 else "")
    dtypes = sorted({activations[t].dtype for t in changed})
    grid = f"{dtypes[0]} grid" if len(dtypes) == 1 else f"grid of their dtype ({' / '.join(dtypes)})"
    return [PlanIssue(first.name, "info", f"{count(len(changed), 'non-negative tensor')} {plural(len(changed), 'uses', 'use')} the whole {grid} "
                      f"over [0, max] (zero point at its bottom) instead of the symmetric one, which would leave "
                      f"half of it unused: {names}", code=IssueCode.NON_NEGATIVE_GRID)]
