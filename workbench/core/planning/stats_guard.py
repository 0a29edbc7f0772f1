"""Reduction statistics (means, variances, norms) are kept out of per-tensor quantization.

A decomposed LayerNorm / RMSNorm computes per-row statistics (``ReduceMean(x)``,
``ReduceMean((x - mu)^2) + eps``, ``Sqrt``). Their per-tensor range is set by the largest row
(an outlier channel makes it ~1e4), so the variance of ordinary rows rounds to 0 and the
normalised output explodes (onnxruntime issue #16219; case 14). The planner therefore leaves
element-wise units that touch such tensors in float when they are quantized only because of the
preset's op types, and warns when the recipe asks for them explicitly.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import numpy_helper

from workbench.core.graph.index import GraphIndex
from workbench.core.io.external import tensor_array

#: Ops whose output is a per-row statistic of their input.
REDUCTIONS = frozenset({"ReduceMean", "ReduceSum", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceProd"})
#: Element-wise ops whose output is a statistic when every non-constant input is one (so a scale
#: computed from a shape, e.g. ``1 / Sqrt(head_dim)``, is not).
ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "Max", "Min", "Clip", "Sqrt", "Reciprocal"})


def _is_square(node: onnx.NodeProto, ix: GraphIndex) -> bool:
    if node.op_type != "Pow" or len(node.input) < 2 or node.input[1] not in ix.initializers:
        return False
    e = tensor_array(ix.initializers[node.input[1]])
    return e.size == 1 and float(np.asarray(e).ravel()[0]) == 2.0


def statistics_tensors(ix: GraphIndex) -> set[str]:
    """Tensors of the graph that are reductions, squares, or element-wise functions of them only."""
    stats: set[str] = set()
    for node in ix.graph.node:
        if node.op_type in REDUCTIONS or _is_square(node, ix):
            stats.update(o for o in node.output if o)
        elif node.op_type in ELEMENTWISE:
            live = [i for i in node.input if i and i not in ix.initializers]
            if live and all(i in stats for i in live):
                stats.update(o for o in node.output if o)
    return stats


def describe(tensor: str, ix: GraphIndex, stats: set[str]) -> str:
    """What statistic ``tensor`` (one of :func:`statistics_tensors`) is, for a plan message: "a reduction
    statistic (mean / variance / norm)", "a square (an energy or variance term)", or, for an element-wise
    function of them, what its inputs are."""
    seen: set[str] = set()
    todo = [tensor]
    kinds = set()
    while todo:
        t = todo.pop()
        node = ix.producer.get(t)
        if t in seen or node is None:
            continue
        seen.add(t)
        if node.op_type in REDUCTIONS:
            kinds.add("reduction")
        elif _is_square(node, ix):
            kinds.add("square")
        else:
            todo.extend(i for i in node.input if i in stats)
    if kinds == {"square"}:
        return "a square (an energy or variance term)"
    if kinds == {"reduction"}:
        return "a reduction statistic (mean / variance / norm)"
    return "a reduction statistic or square (mean / variance / norm / energy)"


def explicit(recipe, sources: dict[str, str], op_type: str) -> bool:
    """True if the recipe asks for this node's activations itself (not just the preset's op types)."""
    src = sources.get("activation", "")
    return not src.startswith(("preset", "not quantized")) or (
        recipe.op_types is not None and op_type in recipe.op_types)


#: Constants at least this large are "masking" values (float32 min / max, -1e30 ...).
HUGE = 1e30
#: Ops through which a masking value flows on to its output.
_CARRY = frozenset({"Add", "Sub", "Mul", "Div", "Where", "Cast", "Expand", "Unsqueeze", "Squeeze", "Reshape",
                    "Concat", "Slice", "Gather", "Tile", "Transpose", "Min", "Max", "Neg", "Identity"})


def _is_huge(a: np.ndarray) -> bool:
    return bool(a.size) and float(np.maximum(a.max(), -a.min())) >= HUGE  # NaN compares False


def _has_inf(a: np.ndarray) -> bool:
    return bool(a.size) and bool(np.isinf(a.max()) or np.isinf(a.min()))  # +-inf, NaN left to the writer


def float_extremes(ix: GraphIndex) -> dict[str, tuple[float, float]]:
    """Main-graph float initializer -> (min, max) of its values (NaN when it holds a NaN), empty
    ones left out: each weight read once (memory-mapped when kept on disk) for the guards below."""
    out = {}
    for name, init in ix.initializers.items():
        if init.data_type == onnx.TensorProto.FLOAT:
            a = tensor_array(init)
            if a.size:
                out[name] = (float(a.min()), float(a.max()))
    return out


def _huge(lo: float, hi: float) -> bool:
    return max(hi, -lo) >= HUGE  # NaN compares False


def _infinite(lo: float, hi: float) -> bool:
    return math.isinf(lo) or math.isinf(hi)


def _carried(ix: GraphIndex, extremes: dict[str, tuple[float, float]], test, test_array) -> set[str]:
    """Float constants (initializers by their ``extremes``, ConstantOfShape values by
    ``test_array``) for which the test holds, and the tensors computed from them by :data:`_CARRY` ops."""
    found = {name for name, (lo, hi) in extremes.items() if test(lo, hi)}
    for node in ix.graph.node:
        if node.op_type == "ConstantOfShape":
            val = [a.t for a in node.attribute if a.name == "value"]
            if val and test_array(numpy_helper.to_array(val[0]).astype(np.float32, copy=False)):
                found.update(node.output)
        elif node.op_type in _CARRY and any(i in found for i in node.input):
            found.update(o for o in node.output if o)
    return found


def masking_values(ix: GraphIndex, extremes: dict[str, tuple[float, float]] | None = None) -> dict[str, float]:
    """Tensors that carry a huge constant (see :func:`masking_tensors`) -> the largest |value| of
    the huge constants they are computed from (3.4e38 for a float32-min mask). Read from the graph
    alone, so a mask is found even when the calibration data never pads (an all-ones
    ``attention_mask`` leaves the calibrated range at 0). ``extremes``: :func:`float_extremes` of
    ``ix`` when already computed."""
    extremes = float_extremes(ix) if extremes is None else extremes
    values: dict[str, float] = {name: max(hi, -lo) for name, (lo, hi) in extremes.items() if _huge(lo, hi)}
    for node in ix.graph.node:
        if node.op_type == "ConstantOfShape":
            val = [a.t for a in node.attribute if a.name == "value"]
            a = numpy_helper.to_array(val[0]).astype(np.float32, copy=False) if val else np.zeros(0)
            if _is_huge(a):
                values.update({o: float(np.maximum(a.max(), -a.min())) for o in node.output if o})
        elif node.op_type in _CARRY:
            carried = [values[i] for i in node.input if i in values]
            if carried:
                values.update({o: max(carried) for o in node.output if o})
    return values


def masking_tensors(ix: GraphIndex) -> set[str]:
    """Tensors that carry a huge constant (an additive attention mask built from float32 min).

    Quantizing such a tensor per tensor maps every ordinary value to zero (the range is ~1e38),
    so the scores the mask is added to are lost; this is why onnxruntime's default int8 recipe
    breaks BERT-style models (minilm: cosine to float 0.33).
    """
    return set(masking_values(ix))


def infinite_tensors(ix: GraphIndex, extremes: dict[str, tuple[float, float]] | None = None) -> set[str]:
    """Tensors that hold +-inf by construction: float constants with an infinite value (a causal
    mask of ``-inf``) and what :data:`_CARRY` ops compute from them. No integer grid holds them,
    so the units on them stay float (:class:`~workbench.core.pipeline.plan_passes.NonFiniteGuard`).
    ``extremes``: :func:`float_extremes` of ``ix`` when already computed."""
    return _carried(ix, float_extremes(ix) if extremes is None else extremes, _infinite, _has_inf)
