"""The recipe choice on a model whose outputs are all integers (a classifier ending in ArgMax) scores the
float tensor the ArgMax reads (it printed "output SQNR ... dB: preset 0.0, mse 0.0": nothing measured);
with no float tensor behind the outputs at all, it is skipped and says why."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.tuning import recipe_choice

ROWS = 40


def _classifier(tmp_path, head: str = "ArgMax"):
    """x [N, 3, 8, 8] -> Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm (logits) -> ArgMax -> cls (int64)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(8, 3, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.normal(size=(10, 8)).astype(np.float32), "G"),
             numpy_helper.from_array(rng.normal(size=(10,)).astype(np.float32), "b"),
             numpy_helper.from_array(np.array(1, np.int64), "one")]
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "G", "b"], ["logits"], name="fc", transB=1),
             helper.make_node("ArgMax", ["logits"], ["idx"], name="argmax", axis=1, keepdims=0),
             helper.make_node("Add", ["idx", "one"], ["cls"], name="plus_one")]  # an integer op after it
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("cls", TensorProto.INT64, ["N"])], inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    x = rng.random((ROWS, 3, 8, 8)).astype(np.float32)
    x[:, 0] *= 5
    return path, x


def _logits(proto: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """The input of node 'argmax' of ``proto`` on ``x`` (onnxruntime CPU, default optimisations)."""
    m = onnx.ModelProto()
    m.CopyFrom(proto)
    tensor = next(n.input[0] for n in m.graph.node if n.name == "argmax")
    m.graph.output.extend([helper.make_tensor_value_info(tensor, TensorProto.FLOAT, None)])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run([tensor], {"x": x})[0].astype(np.float64)


def test_argmax_classifier_scored_on_its_logits(tmp_path):
    path, x = _classifier(tmp_path)
    np.savez(tmp_path / "calib.npz", x=x)
    model = api.open_model(str(path))
    recipe = api.make_recipe("cpu-u8s8")
    choice = api.choose_recipe(model, recipe, str(tmp_path / "calib.npz"))
    assert choice.skipped is None and choice.scored_on == ["logits"]
    held = choice.held_out
    assert held == 10
    # the preset's score, independently: MinMax ranges of the other rows, SQNR of the ArgMax input on the held-out rows
    np.savez(tmp_path / "first.npz", x=x[:ROWS - held])
    q = api.quantize(model, recipe, data=str(tmp_path / "first.npz")).proto
    f, g = _logits(model.proto, x[ROWS - held:]), _logits(q, x[ROWS - held:])
    expected = 10 * math.log10(np.square(f).sum() / np.square(f - g).sum())
    assert 20 < expected < 80
    assert choice.scores["preset"] == pytest.approx(expected, abs=0.01)
    assert "SQNR of logits (the outputs are integers)" in choice.summary()


def test_score_points_walks_back_through_integer_nodes(tmp_path):
    path, _ = _classifier(tmp_path)
    graph = api.open_model(str(path)).proto.graph
    assert recipe_choice.score_points(graph) == [("argmax", 0, TensorProto.FLOAT)]


def test_no_float_tensor_behind_the_outputs_skips(tmp_path):
    nodes = [helper.make_node("Add", ["i", "one"], ["j"], name="add"),
             helper.make_node("Mul", ["j", "one"], ["k"], name="mul")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("i", TensorProto.INT64, ["N", 4])],
                          [helper.make_tensor_value_info("k", TensorProto.INT64, ["N", 4])],
                          [numpy_helper.from_array(np.array(1, np.int64), "one")])
    assert recipe_choice.score_points(g) == []
    path = tmp_path / "ints.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    np.savez(tmp_path / "c.npz", i=np.arange(40 * 4, dtype=np.int64).reshape(40, 4))
    choice = api.choose_recipe(api.open_model(str(path)), api.make_recipe("cpu-u8s8"), str(tmp_path / "c.npz"))
    assert choice.skipped == recipe_choice.CHOICE_NO_FLOAT and "no float output to compare" in choice.summary()
    assert choice.scores == {}


def test_float_outputs_still_read_as_outputs(tmp_path):
    path, _ = _classifier(tmp_path)
    m = onnx.load(str(path))
    m.graph.output.extend([helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])])
    assert recipe_choice.score_points(m.graph) is None
