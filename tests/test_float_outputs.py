"""MatMul / Gemm outputs that no quantized unit reads stay float (onnxruntime runs the unit as
MatMulIntegerToFloat or QGemm with a float output), and written models declare only the value_info
the float model declared (onnxruntime then fuses both models alike)."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from qdq_helpers import calib_qparams, optimized_op_counts

from workbench.core import api
from workbench.core.model.load import prepare_proto
from workbench.core.planning.plan import build_plan
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import NodeSettings
from workbench.core.writers.registry import write_model

RNG = np.random.default_rng(21)


def _w(name, shape, scale=0.3):
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _mlp(opset=21):
    """X[N,8] -> mm1 -> Relu -> mm2 -> Sin -> Reshape -> mm3 -> Y; mm2's output reaches mm3 only
    through the float Sin, mm1's through the quantized mm2."""
    shape = numpy_helper.from_array(np.array([-1, 6], np.int64), "shape")
    nodes = [helper.make_node("MatMul", ["X", "W1"], ["h1"], name="mm1"),
             helper.make_node("Relu", ["h1"], ["r1"], name="relu"),
             helper.make_node("MatMul", ["r1", "W2"], ["h2"], name="mm2"),
             helper.make_node("Sin", ["h2"], ["s"], name="sin"),
             helper.make_node("Reshape", ["s", "shape"], ["s2"], name="reshape"),
             helper.make_node("MatMul", ["s2", "W3"], ["Y"], name="mm3")]
    g = helper.make_graph(nodes, "mlp", [_vi("X", ["N", 8])], [_vi("Y", ["N", 4])],
                          [_w("W1", (8, 16)), _w("W2", (16, 6)), _w("W3", (6, 4)), shape])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _feeds(n=6):
    return [{"X": RNG.standard_normal((4, 8)).astype(np.float32)} for _ in range(n)]


def _quantize(proto, recipe=None):
    model = prepare_proto(proto)
    plan = build_plan(model, recipe or Recipe(preset="cpu-u8s8"))
    return model, plan, write_model(model, plan, calib_qparams(model, plan, _feeds()))


def test_outputs_read_only_by_float_ops_stay_float():
    _, plan, res = _quantize(_mlp())
    u = plan.units
    # mm1's output (folded Relu) is read by mm2: quantized; mm2's goes to the float Sin, mm3's is the graph output
    assert (u["mm1"].outputs, u["mm1"].float_outputs) == (["r1"], [])
    assert (u["mm2"].outputs, u["mm2"].float_outputs) == ([], ["h2"])
    assert (u["mm3"].outputs, u["mm3"].float_outputs) == ([], ["Y"])
    assert [n for n in ("mm1", "mm2", "mm3") if u[n].writes_float] == ["mm1", "mm2", "mm3"]
    assert set(plan.activations) == {"X", "r1", "s2"}
    # the kept-float outputs are their own names in both models (per-unit error still compares them)
    assert res.tensor_map["h2"] == "h2" and res.tensor_map["Y"] == "Y"
    ops = collections.Counter(n.op_type for n in res.proto.graph.node)
    assert (ops["QuantizeLinear"], ops["DequantizeLinear"]) == (3, 6)  # X, r1, s2 | + W1, W2, W3
    fused = optimized_op_counts(res.proto)
    assert fused["MatMulIntegerToFloat"] == 2 and fused["QLinearMatMul"] == 1 and fused["MatMul"] == 0


def test_fused_float_outputs_equal_the_reference():
    """onnxruntime's fused model (MatMulIntegerToFloat) computes what onnx.reference computes on the
    QDQ graph, to float32 accumulation order."""
    _, _, res = _quantize(_mlp())
    ref = ReferenceEvaluator(res.proto)
    sess = ort.InferenceSession(res.proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for feed in _feeds(3):
        want, got = ref.run(None, feed)[0], sess.run(None, feed)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def test_a_pass_through_chain_to_a_quantized_reader_keeps_the_pair():
    """mm2 -> Reshape -> mm3 (quantized): the Reshape aliases mm2's output, so it keeps its pair."""
    proto = _mlp()
    proto.graph.node[3].op_type = "Identity"  # the Sin becomes a pass-through op
    _, plan, _ = _quantize(proto)
    assert plan.units["mm2"].outputs == ["h2"] and plan.units["mm2"].float_outputs == []
    assert plan.aliases.get("s2") == "h2"


def test_excluding_the_reader_makes_the_producer_write_float():
    model = prepare_proto(_mlp())
    recipe = Recipe(preset="cpu-u8s8", overrides={"mm2": NodeSettings(exclude=True)})
    plan = build_plan(model, recipe)
    assert plan.units["mm1"].float_outputs == ["r1"] and "r1" not in plan.activations


def test_16_bit_activations_write_float_too_and_float8_does_not():
    _, plan, _ = _quantize(_mlp(), Recipe(preset="a16w8"))
    assert plan.units["mm3"].float_outputs == ["Y"]
    _, plan, _ = _quantize(_mlp(), Recipe(preset="fp8-e4m3"))
    assert all(not u.float_outputs for u in plan.units.values())


def test_written_model_declares_only_the_float_models_value_info():
    proto = _mlp()
    proto.graph.value_info.append(_vi("h1", ["N", 16]))  # the one shape the model declares
    model, _, res = _quantize(proto)
    inferred = {vi.name for vi in model.proto.graph.value_info}
    assert {"h1", "r1", "h2", "s"} <= inferred  # preparation infers every shape
    assert model.declared_value_info == frozenset({"h1"})
    assert [vi.name for vi in res.proto.graph.value_info] == ["h1"]


@pytest.mark.slow
def test_minilm_runs_matmul_integer_to_float_without_skip_layernorm(corpus, tmp_path):
    """The recipe the CLI chooses for minilm_l6_v2 (Conv/MatMul/Gemm only): every projection writes
    float (MatMulIntegerToFloat), and onnxruntime does not fuse SkipLayerNormalization, which the
    float model does not get either (its CPU kernel is slower than Add + LayerNormalization here)."""
    folder = corpus / "minilm_l6_v2"
    model = api.open_model(folder / "model.onnx")
    recipe = api.make_recipe("cpu-u8s8").model_copy(update={"op_types": ["MatMul"]})
    res = api.quantize(model, recipe, data=str(folder / "calib.npz"), samples=8)
    assert sum(u.writes_float for u in res.plan.units.values()) == 48
    # the float file declares no shapes: only those of its lifted Constant nodes (now initializers) remain
    assert {vi.name for vi in res.proto.graph.value_info} <= {i.name for i in model.proto.graph.initializer}
    fused, float_ops = optimized_op_counts(res.proto), optimized_op_counts(str(folder / "model.onnx"))
    assert fused["SkipLayerNormalization"] == float_ops["SkipLayerNormalization"] == 0
    # 6 layers x (Q, K, V, attention output, 2 feed-forward) projections, the score MatMul of each layer
    assert fused["MatMulIntegerToFloat"] == 42 and fused["QLinearMatMul"] == 6
    onnx.checker.check_model(res.proto)
