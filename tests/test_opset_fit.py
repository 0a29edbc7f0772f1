"""Plans whose dtypes need an opset the model cannot reach: the plan excludes and reports those units.

The tiny model calls a model-local function (``local::MyRelu``), which onnxruntime runs but
``onnx.version_converter`` drops model-local functions from its result (``upgrade_opset``
reports that as a failed conversion), so opset 13 -> 21 fails.
uint16 activations (a16w8, or autotune's ``promote_to="uint16"``) need opset 21.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import op_counts, run

from workbench.core import api
from workbench.core.errors import ModelError
from workbench.core.model.load import prepare_proto, upgrade_opset
from workbench.core.tuning.autotune import promote


def _function_model() -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    fn = helper.make_function("local", "MyRelu", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                              [helper.make_opsetid("", 13)])
    inits = [numpy_helper.from_array((rng.standard_normal((8, 8)) * 0.3).astype(np.float32), n) for n in ("W1", "W2")]
    nodes = [helper.make_node("MatMul", ["X", "W1"], ["H"], name="mm1"),
             helper.make_node("MyRelu", ["H"], ["R"], name="act", domain="local"),
             helper.make_node("MatMul", ["R", "W2"], ["Y"], name="mm2")]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "g", [vi("X", TensorProto.FLOAT, [2, 8])], [vi("Y", TensorProto.FLOAT, [2, 8])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)],
                             functions=[fn])


@pytest.fixture
def setup(tmp_path):
    path = tmp_path / "fn.onnx"
    onnx.save(_function_model(), str(path))
    xs = np.random.default_rng(4).standard_normal((8, 2, 8)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", X=xs)
    return api.open_model(path), str(tmp_path / "calib.npz"), xs


def test_the_model_really_cannot_be_upgraded(setup):
    model, _, _ = setup
    with pytest.raises(ModelError, match="cannot convert from opset 13 to opset 21: .*drops the model-local functions local::MyRelu"):
        upgrade_opset(model.proto, 21)


def _counts(res):
    ops = op_counts(res.proto)
    return ops["QuantizeLinear"], ops["DequantizeLinear"]


def test_promoted_uint16_unit_is_excluded_in_the_plan_and_float_in_the_model(setup):
    model, data, xs = setup
    recipe = promote(api.make_recipe("cpu-u8s8"), ["mm2"], "uint16")
    res = api.quantize(model, recipe, data=data)
    assert res.plan.units["mm2"].excluded and not res.plan.units["mm1"].excluded
    assert res.plan.min_opset == 13 and model.opset == 13
    issues = [i for i in res.issues if i.node == "mm2"]
    assert len(issues) == 1 and "needs opset 21, the model reaches 13" in issues[0].message
    assert any(i.node == "" and "converts only to opset 13" in i.message for i in res.issues)
    # plan: mm1 quantized (X with a uint8 Q/DQ; W1 one DQ; its output H, read only by the float mm2,
    # stays float: MatMulIntegerToFloat); mm2 float -> exactly that is written
    assert set(res.plan.activations) == {"X"} and res.plan.units["mm1"].float_outputs == ["H"]
    assert _counts(res) == (1, 2)
    assert not any("upgrade failed" in i.message for i in res.issues)  # the writer had nothing to skip
    mm2 = next(n for n in res.proto.graph.node if n.name == "mm2")
    assert mm2.input[1] == "W2"  # float weight, as the plan says
    for x in xs[:2]:
        ref, got = run(model.proto, {"X": x})["Y"], run(res.proto, {"X": x})["Y"]
        assert np.abs(got - ref).max() <= 0.05 * np.abs(ref).max()


def test_a16w8_on_an_unconvertible_model_excludes_every_unit(setup):
    model, data, _ = setup
    plan = api.plan(model, api.make_recipe("a16w8"))
    assert {n: u.excluded for n, u in plan.units.items()} == {"mm1": True, "mm2": True}
    assert sorted(i.node for i in plan.issues if i.node and "needs opset 21" in i.message) == ["mm1", "mm2"]
    res = api.quantize(model, api.make_recipe("a16w8"), data=data)
    assert _counts(res) == (0, 0)


def test_convertible_model_keeps_the_plan(setup):
    model, _, _ = setup
    plain = prepare_proto(helper.make_model(helper.make_graph(
        [n for n in _function_model().graph.node if n.op_type == "MatMul"][:1], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("H", TensorProto.FLOAT, [2, 8])], list(_function_model().graph.initializer)[:1]),
        opset_imports=[helper.make_opsetid("", 13)]))
    plan = api.plan(plain, api.make_recipe("a16w8"))
    assert plan.min_opset == 21 and not plan.units["mm1"].excluded


def test_writer_upgrades_with_weights_held_out_of_its_lean_copy(tmp_path):
    """The writer's copy leaves weights over 1 MiB out; the 13 -> 21 conversion must still see them
    (it failed with 'Input W is undefined' and a16w8 wrote a float model while the plan said quantized)."""
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((512, 640)) * 0.05).astype(np.float32)  # 1.25 MiB
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")], "g",
                          [vi("X", TensorProto.FLOAT, [2, 512])], [vi("Y", TensorProto.FLOAT, [2, 640])],
                          [numpy_helper.from_array(w, "W")])
    model = prepare_proto(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    xs = rng.standard_normal((4, 2, 512)).astype(np.float32)
    np.savez(tmp_path / "c.npz", X=xs)
    res = api.quantize(model, api.make_recipe("a16w8"), data=str(tmp_path / "c.npz"))
    assert not res.plan.units["mm"].excluded and not any("upgrade failed" in i.message for i in res.issues)
    assert _counts(res) == (1, 2)  # X uint16 Q/DQ, the int8 weight's DQ; Y, a graph output, stays float
    assert next(o.version for o in res.proto.opset_import if o.domain == "") == 21
    assert [i.name for i in res.proto.graph.input] == ["X"]  # no stand-in input left behind
    x = {"X": xs[0]}  # a calibrated sample: no clipping, only rounding
    ref, got = run(model.proto, x)["Y"], run(res.proto, x)["Y"]
    assert np.abs(got - ref).max() <= 0.02 * np.abs(ref).max()


def test_each_opset_conversion_is_tried_once_per_graph_facts(setup, monkeypatch):
    """The recipe choice plans a model many times with one GraphFacts: the whole-model conversion to an
    opset (and its failure) is tried once, and every plan still excludes and reports the same units."""
    from workbench.core.planning import opset_fit
    from workbench.core.planning.plan import GraphFacts

    model, _, _ = setup
    calls = []
    real = opset_fit.upgrade_opset
    monkeypatch.setattr(opset_fit, "upgrade_opset", lambda proto, target, **kw: (calls.append(target),
                                                                                 real(proto, target, **kw))[1])
    facts = GraphFacts(model.proto)
    plans = [api.plan(model, api.make_recipe("a16w8"), facts=facts) for _ in range(3)]
    assert calls == [21]
    assert "cannot convert from opset 13 to opset 21" in facts.opset_conversions[21]
    for p in plans:
        assert {n: u.excluded for n, u in p.units.items()} == {"mm1": True, "mm2": True}
        assert any(i.node == "" and "converts only to opset 13" in i.message for i in p.issues)
