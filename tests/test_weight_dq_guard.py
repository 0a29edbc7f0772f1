"""The weight-DQ-only guard: a static unit whose activations stay float (here inside an If branch)
is kept float instead of being written as DequantizeLinear(int8 weight) -> float MatMul."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import run

from workbench.core import api
from workbench.core.issues import IssueCode
from workbench.core.model.load import prepare_proto
from workbench.core.recipe.recipe import NodeSettings, Recipe


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _branch_model() -> onnx.ModelProto:
    """If(cond) with a MatMul in each branch on a tensor computed inside that branch (Neg / Abs of X)."""
    rng = np.random.default_rng(0)
    w = [numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), n) for n in ("W1", "W2")]

    def branch(tag, op, weight):
        return helper.make_graph([helper.make_node(op, ["X"], [f"{tag}_in"], name=f"{tag}_pre"),
                                  helper.make_node("MatMul", [f"{tag}_in", weight], [f"{tag}_out"], name=f"{tag}_mm")],
                                 tag, [], [_vi(f"{tag}_out", [3, 4])])

    nodes = [helper.make_node("If", ["cond"], ["Y"], name="branch", then_branch=branch("then", "Neg", "W1"),
                              else_branch=branch("else", "Abs", "W2"))]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, []), _vi("X", [3, 4])],
                          [_vi("Y", [3, 4])], w)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _feeds(n=4):
    rng = np.random.default_rng(1)
    return [{"cond": np.array(i % 2 == 0), "X": rng.standard_normal((3, 4)).astype(np.float32)} for i in range(n)]


def _branch_ops(proto):
    node = next(n for n in proto.graph.node if n.op_type == "If")
    return {a.name: sorted(n.op_type for n in a.g.node) for a in node.attribute}


def test_weight_only_static_units_stay_float(tmp_path):
    proto = _branch_model()
    unguarded = api.plan(prepare_proto(proto), Recipe(preset="cpu-u8s8"))
    live = {n: u for n, u in unguarded.units.items() if not u.excluded}
    assert set(live) == {"then_mm", "else_mm"} and all(not u.inputs and not u.outputs for u in live.values())
    model = prepare_proto(proto)
    data = _feeds_source(tmp_path)
    raw = api.quantize(model, Recipe(preset="cpu-u8s8"), data=data, guard=False)
    assert _branch_ops(raw.proto)["then_branch"] == ["DequantizeLinear", "MatMul", "Neg"]
    res = api.quantize(model, Recipe(preset="cpu-u8s8"), data=data)
    kept = sorted(i.node for i in res.issues if i.code == IssueCode.WEIGHT_DQ_ONLY)
    assert kept == ["else_mm", "then_mm"]
    assert all(u.excluded for u in res.plan.units.values())
    assert _branch_ops(res.proto) == {"then_branch": ["MatMul", "Neg"], "else_branch": ["Abs", "MatMul"]}
    for f in _feeds():
        np.testing.assert_array_equal(run(res.proto, f)["Y"], run(proto, f)["Y"])


def test_a_named_unit_keeps_its_int8_weight(tmp_path):
    proto = _branch_model()
    model = prepare_proto(proto)
    recipe = Recipe(preset="cpu-u8s8", overrides={"then_mm": NodeSettings()})
    res = api.quantize(model, recipe, data=_feeds_source(tmp_path))
    assert sorted(i.node for i in res.issues if i.code == IssueCode.WEIGHT_DQ_ONLY) == ["else_mm"]
    assert _branch_ops(res.proto)["then_branch"] == ["DequantizeLinear", "MatMul", "Neg"]
    # the dynamic preset quantizes weights only by design: not touched
    dyn = api.quantize(model, Recipe(preset="dynamic-u8"))
    assert not [i for i in dyn.issues if i.code == IssueCode.WEIGHT_DQ_ONLY]


def _feeds_source(tmp_path):
    path = tmp_path / "calib.npz"
    feeds = _feeds()
    np.savez(path, cond=np.stack([f["cond"] for f in feeds]), X=np.stack([f["X"] for f in feeds]))
    return str(path)
