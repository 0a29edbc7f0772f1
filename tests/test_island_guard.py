"""Element-wise islands (units reaching no quantized Conv/MatMul/Gemm) stay float by default.

The tiny model mirrors silero_vad_16k_op15's tail: a Conv path to the output and, beside it, a
recurrent state ``Concat(h, c) -> Add(+z) -> stateN`` with h in [-1, 1] and c in [-25, 25].
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import op_counts, run

from workbench.core import api
from workbench.core.planning.island_guard import float_islands
from workbench.core.recipe.spec import NodeSettings


def _state_model() -> onnx.ModelProto:
    rng = np.random.default_rng(6)
    inits = [numpy_helper.from_array((rng.standard_normal((4, 4, 3)) * 0.4).astype(np.float32), "W"),
             numpy_helper.from_array(np.zeros((1, 1, 4), np.float32), "Z")]
    nodes = [helper.make_node("Conv", ["X", "W"], ["C"], name="conv", pads=[1, 1]),
             helper.make_node("Relu", ["C"], ["Y"], name="relu"),
             helper.make_node("Tanh", ["Hin"], ["H"], name="tanh"),
             helper.make_node("Concat", ["H", "Cin"], ["S"], name="concat", axis=0),
             helper.make_node("Add", ["S", "Z"], ["stateN"], name="add")]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "g", [vi("X", TensorProto.FLOAT, [1, 4, 8]), vi("Hin", TensorProto.FLOAT, [1, 1, 4]),
                                       vi("Cin", TensorProto.FLOAT, [1, 1, 4])],
                          [vi("Y", TensorProto.FLOAT, [1, 4, 8]), vi("stateN", TensorProto.FLOAT, [2, 1, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _feeds(n: int = 8):
    rng = np.random.default_rng(7)
    return [{"X": rng.standard_normal((1, 4, 8)).astype(np.float32),
             "Hin": rng.standard_normal((1, 1, 4)).astype(np.float32) * 2,
             "Cin": rng.uniform(-25, 25, (1, 1, 4)).astype(np.float32)} for _ in range(n)]


def _quantize(tmp_path, **kw):
    path = tmp_path / "state.onnx"
    onnx.save(_state_model(), str(path))
    model = api.open_model(path)
    feeds = _feeds()
    np.savez(tmp_path / "calib.npz", **{k: np.stack([f[k] for f in feeds]) for k in feeds[0]})
    guard = kw.pop("guard", True)
    res = api.quantize(model, api.make_recipe("cpu-u8s8", **kw), data=str(tmp_path / "calib.npz"), guard=guard)
    return model, res, feeds


def test_plan_finds_the_state_island():
    from workbench.core.model.load import prepare_proto

    model = prepare_proto(_state_model())
    found = float_islands(api.plan(model, api.make_recipe("cpu-u8s8")))
    assert found == {"concat": ["add"], "add": ["concat"]}


def test_state_island_stays_float_and_written_model_agrees(tmp_path):
    model, res, feeds = _quantize(tmp_path)
    assert res.plan.units["concat"].excluded and res.plan.units["add"].excluded
    assert not res.plan.units["conv"].excluded
    kept = {i.node for i in res.issues if i.message.startswith("kept in float: it reaches no quantized")}
    assert kept == {"concat", "add"}
    ops = op_counts(res.proto)
    # X and Y (Relu folded) get Q/DQ; W one DQ: nothing on the state path
    assert (ops["QuantizeLinear"], ops["DequantizeLinear"]) == (2, 3)
    assert set(res.plan.activations) == {"X", "Y"}
    for f in feeds:
        assert np.array_equal(run(res.proto, f)["stateN"], run(model.proto, f)["stateN"])


def test_guard_off_or_a_named_node_quantizes_the_island(tmp_path):
    model, raw, feeds = _quantize(tmp_path, guard=False)
    assert not raw.plan.units["concat"].excluded and not raw.plan.units["add"].excluded
    assert op_counts(raw.proto)["QuantizeLinear"] == 6  # X, Y, H, Cin, S, stateN (Z is a constant)
    h_err = np.abs(run(raw.proto, feeds[0])["stateN"][0] - run(model.proto, feeds[0])["stateN"][0]).max()
    assert h_err > 0.02  # h on c's grid: step 50/255
    _, named, _ = _quantize(tmp_path, overrides={"add": NodeSettings()})
    assert not named.plan.units["add"].excluded and named.plan.units["concat"].excluded


def test_model_without_compute_units_is_quantized_as_asked(tmp_path):
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("Add", ["A", "B"], ["Y"], name="add")], "g",
                          [vi("A", TensorProto.FLOAT, [4]), vi("B", TensorProto.FLOAT, [4])],
                          [vi("Y", TensorProto.FLOAT, [4])])
    from workbench.core.model.load import prepare_proto

    model = prepare_proto(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    assert float_islands(api.plan(model, api.make_recipe("cpu-u8s8"))) == {}


def test_guarded_plan_shows_what_quantize_keeps_float():
    """api.plan(guard=True) (what the app shows before calibration) excludes the island as quantize does."""
    from workbench.core.model.load import prepare_proto

    model = prepare_proto(_state_model())
    recipe = api.make_recipe("cpu-u8s8")
    plain, guarded = api.plan(model, recipe), api.plan(model, recipe, guard=True)
    assert not plain.units["concat"].excluded and not plain.units["add"].excluded
    assert guarded.units["concat"].excluded and guarded.units["add"].excluded and not guarded.units["conv"].excluded
    assert set(guarded.activations) == {"X", "Y"}
    assert {i.node for i in guarded.issues if i.message.startswith("kept in float")} == {"concat", "add"}


def test_a_rule_for_every_node_names_none():
    """A ``"*"`` rule sets how every node quantizes (the recipe choice's MSE observer); it does not
    name nodes the guards and the latency fallback must leave alone, as a named rule does."""
    from workbench.core.planning.island_guard import named_by_recipe
    from workbench.core.recipe.recipe import Recipe

    every = Recipe.model_validate({"rules": [{"name": "*", "activation": {"observer": "mse"}}]})
    some = Recipe.model_validate({"rules": [{"name": "/model.[012]/*", "activation": {"dtype": "uint16"}}]})
    assert not named_by_recipe(every, "/model.1/Add", "Add")
    assert named_by_recipe(some, "/model.1/Add", "Add") and not named_by_recipe(some, "/model.5/Add", "Add")
