"""Which recipe roles (weight, activation, bias) can take effect on one node, by the planner's rules.

The inspector shows only these, so a Concat or an Add never offers weight settings. The rules are
those of :func:`workbench.core.planning.plan.build_plan`:

* a pass-through op that is not a weight op (Reshape, Transpose, MaxPool, ...) has no settings of
  its own: its output reuses its input's scale and zero_point (onnxruntime's DropQDQ rule);
* Relu / Clip, unless the recipe quantizes their op type, are folded into the unit before them;
* ``weight`` applies to a Conv / ConvTranspose / MatMul / Gemm whose weight input is a float32
  initializer (a MatMul of two activations has no weight); ``bias`` to such a node whose bias
  input is a constant;
* ``activation`` applies to every other node of the main graph in a static recipe; a dynamic or
  weight-only recipe (and every node inside an If / Loop / Scan body) quantizes weights only.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from workbench.core.graph import op_families as U
from workbench.core.model.load import PreparedModel
from workbench.core.recipe.recipe import Recipe


@dataclass(frozen=True)
class NodeRoles:
    """``roles``: the roles that apply, in :data:`workbench.core.recipe.spec.ROLES` order (may be
    empty); ``note``: why a role does not apply ("" when nothing needs saying); ``weight_rank``:
    the number of dimensions of the float32 weight initializer when ``weight`` applies (a weight
    ``axis`` must lie in ``-weight_rank .. weight_rank - 1``), else 0; ``no_weight``: a weight op
    (Conv, MatMul, Gemm, ...) without a constant float32 weight (a MatMul of two activations), so a
    selection can count them."""

    roles: tuple[str, ...]
    note: str = ""
    weight_rank: int = 0
    no_weight: bool = False


def node_roles(model: PreparedModel, recipe: Recipe, name: str) -> NodeRoles:
    """The roles of node ``name`` that ``recipe`` can quantize in ``model``.

    Raises
    ------
    KeyError
        No node of ``model`` (any graph) is called ``name``.
    """
    node = model.node(name)
    op = node.op_type
    if op in U.PASS_THROUGH_OPS and op not in U.WEIGHT_OPS:
        return NodeRoles((), f"{op} passes its input through: its output reuses the input's scale and "
                             "zero_point, so it has no settings of its own.")
    if op in U.FOLD_OPS and op not in recipe.quantized_op_types():
        return NodeRoles((), f"{op} is folded into the unit of the node before it (onnxruntime removes it "
                             "before a QuantizeLinear): set that node instead.")
    weight, bias, rank = _weight_and_bias(model, node)
    static = recipe.preset_obj().mode == "static" and model.node_graph(name) == ""
    roles = tuple(r for r, on in (("weight", weight), ("activation", static), ("bias", bias and static)) if on)
    if op in U.WEIGHT_OPS and not weight:
        return NodeRoles(roles, f"{op} has no constant float32 weight: weight settings do not apply.", no_weight=True)
    if not roles:
        return NodeRoles((), f"{op} has no weight, and this recipe quantizes weights only.")
    return NodeRoles(roles, weight_rank=rank)


def _weight_and_bias(model: PreparedModel, node: onnx.NodeProto) -> tuple[bool, bool, int]:
    """(weight applies, bias applies, the weight's rank or 0)."""
    fam = U.WEIGHT_OPS.get(node.op_type)
    if fam is None or len(node.input) <= fam.weight_index:
        return False, False, 0
    inits = {t.name: t for _path, g in model.iter_graphs() for t in g.initializer}
    w = inits.get(node.input[fam.weight_index])
    weight = w is not None and w.data_type == onnx.TensorProto.FLOAT
    b = node.input[fam.bias_index] if fam.bias_index is not None and len(node.input) > fam.bias_index else ""
    return weight, weight and bool(b) and b in inits, len(w.dims) if weight else 0
