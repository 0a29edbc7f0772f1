"""QDQ writer: onnxruntime (optimizations off) equals onnx.reference on our output, exact Q/DQ
counts, integer weights / int32 biases equal to the numerics module, names, metadata, saving."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator
from qdq_helpers import op_counts, quantize_tiny, run, tiny_model

from workbench.core.errors import ExportError
from workbench.core.formats.numerics import compute_qparams, quantize
from workbench.core.io.save import save_model
from workbench.core.writers.registry import write_model

# kind -> (QuantizeLinear count, DequantizeLinear count)
COUNTS = {
    "conv": (2, 4),      # X, Relu out | X, Relu out, W, B  (Relu folded into the Conv unit)
    "matmul": (1, 2),    # X | X, W  (Y is read by no quantized unit: float, MatMulIntegerToFloat)
    "gemm": (1, 3),      # X | X, W, B  (Y float: QGemm with a float output)
    "add": (3, 3),       # X, Z, Y
    "concat": (3, 3),
    "maxpool": (4, 8),   # X, c1, pool (alias), Y | + W1, B1, W2, B2
}


def assert_same_qdq(actual, desired, lsb=None, rtol=1e-6):
    """Equal within ``rtol``; with ``lsb`` (the output scale), a value may instead differ by exactly
    one LSB on at most 1% of elements: float accumulation order in Conv / MatMul differs between
    runtimes, and a sum that lands on a rounding boundary then quantizes one step apart."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    tol = rtol * np.abs(desired) + 1e-7
    bad = np.abs(actual - desired) > tol
    if lsb is not None and bad.any():
        one = np.isclose(np.abs(actual - desired), lsb, rtol=1e-3)
        assert np.all(one[bad]), f"differences other than 1 LSB: {np.abs(actual - desired)[bad & ~one][:5]}"
        assert bad.mean() <= 0.01, f"{bad.sum()} of {bad.size} elements differ by 1 LSB"
        return
    assert not bad.any(), f"max difference {np.abs(actual - desired).max()}"


def _out_lsb(proto, name="Y"):
    dq = [n for n in proto.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == name]
    if not dq:
        return None
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    return float(inits[dq[0].input[1]])


def _ref(proto, feeds):
    sess = ReferenceEvaluator(proto)
    names = [o.name for o in proto.graph.output]
    return dict(zip(names, sess.run(None, feeds), strict=True))


@pytest.mark.parametrize("kind", sorted(COUNTS))
def test_ort_equals_reference_and_counts(kind):
    proto, feeds = tiny_model(kind)
    model, plan, res = quantize_tiny(proto, feeds)
    onnx.checker.check_model(res.proto)
    counts = op_counts(res.proto)
    assert (counts["QuantizeLinear"], counts["DequantizeLinear"]) == COUNTS[kind]
    ort_out = run(res.proto, feeds, optimize=False)
    ref_out = _ref(res.proto, feeds)
    for name, ref in ref_out.items():
        assert_same_qdq(ort_out[name], ref, _out_lsb(res.proto, name))
    # and the fake-quantized model stays close to float
    f = run(model.proto, feeds)["Y"]
    q = ort_out["Y"]
    assert np.abs(f - q).max() < 0.05 * np.abs(f).max()


def test_alias_reuses_scale_initializers():
    proto, feeds = tiny_model("maxpool")
    _, plan, res = quantize_tiny(proto, feeds)
    assert plan.aliases == {"p": "c1"}
    assert "p" not in plan.activations
    q = {n.input[0]: n for n in res.proto.graph.node if n.op_type == "QuantizeLinear"}
    assert q["p"].input[1:] == q["c1"].input[1:]


def test_weights_and_bias_match_numerics():
    proto, feeds = tiny_model("conv")
    model, plan, res = quantize_tiny(proto, feeds)
    inits = {i.name: numpy_helper.to_array(i) for i in res.proto.graph.initializer}
    w = numpy_helper.to_array(proto.graph.initializer[0])
    b = numpy_helper.to_array(proto.graph.initializer[1])
    spec = plan.units["conv"].quant_inputs[0].spec
    wq = compute_qparams(w.min(axis=(1, 2, 3)), w.max(axis=(1, 2, 3)), "int8", symmetric=True,
                         reduce_range=spec.reduce_range, axis=0)
    np.testing.assert_array_equal(inits["W_quantized"], quantize(w, wq))
    np.testing.assert_array_equal(inits["W_scale"], wq.scale)
    x_scale = inits["X_scale"]
    bias_scale = (x_scale * wq.scale).astype(np.float32)
    np.testing.assert_array_equal(inits["B_scale"], bias_scale)
    assert inits["B_quantized"].dtype == np.int32
    np.testing.assert_array_equal(inits["B_quantized"], np.rint(b / bias_scale).astype(np.int32))
    assert "W" not in inits and "B" not in inits  # float originals dropped


def test_tensor_map_and_metadata():
    proto, feeds = tiny_model("maxpool")
    _, plan, res = quantize_tiny(proto, feeds)
    produced = {o for n in res.proto.graph.node for o in n.output}
    for t in ("X", "c1", "p", "Y"):
        assert res.tensor_map[t] in produced
    assert res.tensor_map["Y"] == "Y"  # graph output keeps its name
    meta = {p.key: p.value for p in res.proto.metadata_props}
    assert json.loads(meta["workbench.recipe"]) == json.loads(plan.recipe.to_json())
    assert meta["workbench.mode"] == "static" and meta["workbench.version"]


def test_shared_weight_one_integer_initializer_two_dq():
    proto, feeds = tiny_model("matmul")
    n2 = onnx.helper.make_node("MatMul", ["X", "W"], ["Y2"], name="mm2")
    proto.graph.node.append(n2)
    proto.graph.output.append(onnx.helper.make_tensor_value_info("Y2", onnx.TensorProto.FLOAT, [3, 8]))
    _, _, res = quantize_tiny(proto, feeds)
    names = [i.name for i in res.proto.graph.initializer]
    assert names.count("W_quantized") == 1
    w_dq = [n for n in res.proto.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "W_quantized"]
    assert len(w_dq) == 2 and len({n.output[0] for n in w_dq}) == 2
    out = run(res.proto, feeds)
    np.testing.assert_array_equal(out["Y"], out["Y2"])


def test_missing_qparams_is_an_error():
    from workbench.core.model.load import prepare_proto
    from workbench.core.planning.plan import build_plan
    from workbench.core.recipe.recipe import Recipe

    proto, _ = tiny_model("conv")
    model = prepare_proto(proto)
    plan = build_plan(model, Recipe(preset="cpu-u8s8"))
    with pytest.raises(ExportError, match="'X' has no calibrated qparams"):
        write_model(model, plan, {})


def test_opset_upgrade_for_16_bit_activations():
    proto, feeds = tiny_model("conv", opset=13)
    _, plan, res = quantize_tiny(proto, feeds, preset="a16w8")
    assert plan.min_opset == 21
    assert [o.version for o in res.proto.opset_import if o.domain == ""] == [21]
    zp = [i for i in res.proto.graph.initializer if i.name == "X_zero_point"][0]
    assert zp.data_type == onnx.TensorProto.UINT16
    ort_out, ref_out = run(res.proto, feeds), _ref(res.proto, feeds)
    assert_same_qdq(ort_out["Y"], ref_out["Y"], _out_lsb(res.proto))


def test_fp8_relu_written_as_max_and_matches_reference():
    proto, feeds = tiny_model("conv", opset=19)
    _, plan, res = quantize_tiny(proto, feeds, preset="fp8-e4m3")
    counts = op_counts(res.proto)
    assert counts["Max"] == 1 and counts["Relu"] == 0
    assert any("written as Max" in i.message for i in res.issues)
    ort_plain = run(res.proto, feeds)["Y"]
    ort_opt = run(res.proto, feeds, optimize=True)["Y"]
    assert_same_qdq(ort_plain, _ref(res.proto, feeds)["Y"])
    np.testing.assert_allclose(ort_opt, ort_plain, rtol=1e-5, atol=1e-5)
    assert ort_opt.min() >= 0


def test_dynamic_matches_reference():
    for kind in ("matmul", "gemm", "conv"):
        proto, feeds = tiny_model(kind, opset=13)
        model, plan, res = quantize_tiny(proto, feeds, preset="dynamic-u8")
        counts = op_counts(res.proto)
        assert counts["DynamicQuantizeLinear"] == 1
        assert counts["ConvInteger" if kind == "conv" else "MatMulInteger"] == 1
        ort_out = run(res.proto, feeds)["Y"]
        np.testing.assert_allclose(ort_out, _ref(res.proto, feeds)["Y"], rtol=1e-5, atol=1e-5)
        f = run(model.proto, feeds)["Y"]
        assert np.abs(f - ort_out).max() < 0.05 * np.abs(f).max()


def test_weight_only_int4_blocks():
    proto, feeds = tiny_model("matmul", opset=13)
    model, plan, res = quantize_tiny(proto, feeds, preset="w4-block")
    dq = [n for n in res.proto.graph.node if n.op_type == "DequantizeLinear"]
    assert len(dq) == 1 and op_counts(res.proto)["QuantizeLinear"] == 0
    attrs = {a.name: a.i for a in dq[0].attribute}
    assert attrs == {"axis": 0, "block_size": 32} or attrs == {"axis": 0, "block_size": 16}
    w = [i for i in res.proto.graph.initializer if i.name == "W_quantized"][0]
    assert w.data_type == onnx.TensorProto.INT4
    np.testing.assert_allclose(run(res.proto, feeds)["Y"], _ref(res.proto, feeds)["Y"], rtol=1e-5, atol=1e-5)


def test_save_model_atomic_and_external_data_does_not_grow(tmp_path):
    proto, feeds = tiny_model("conv")
    _, _, res = quantize_tiny(proto, feeds)
    path = tmp_path / "q.onnx"
    save_model(res.proto, path, external=True)
    size = os.path.getsize(tmp_path / "q.onnx.data")
    save_model(res.proto, path, external=True)
    assert os.path.getsize(tmp_path / "q.onnx.data") == size
    assert sorted(os.listdir(tmp_path)) == ["q.onnx", "q.onnx.data"]
    np.testing.assert_array_equal(run(str(path), feeds)["Y"], run(res.proto, feeds)["Y"])
    save_model(res.proto, tmp_path / "small.onnx")
    assert not (tmp_path / "small.onnx.data").exists()
    with pytest.raises(ExportError, match="does not exist"):
        save_model(res.proto, tmp_path / "nope" / "x.onnx")


def test_weight_observer_from_recipe_is_used():
    from workbench.core.formats.numerics import sqnr_db
    from workbench.core.recipe.spec import PartialSpec, Rule

    proto, feeds = tiny_model("conv", opset=13)
    model, _, minmax = quantize_tiny(proto, feeds)
    _, _, mse = quantize_tiny(proto, feeds, rules=[Rule(op_type="Conv", weight=PartialSpec(observer="mse"))])
    s_minmax = [numpy_helper.to_array(i) for i in minmax.proto.graph.initializer if i.name == "W_scale"][0]
    s_mse = [numpy_helper.to_array(i) for i in mse.proto.graph.initializer if i.name == "W_scale"][0]
    assert np.all(s_mse <= s_minmax) and np.any(s_mse < s_minmax)  # MSE clips the weight tails
    f = run(model.proto, feeds)["Y"]
    assert sqnr_db(f, run(mse.proto, feeds)["Y"]) > sqnr_db(f, run(minmax.proto, feeds)["Y"])


def test_fp8_clip_written_as_min_max_so_onnxruntime_loads_it():
    proto, feeds = tiny_model("conv", opset=19)
    proto.graph.initializer.extend([numpy_helper.from_array(np.float32(0), "lo"),
                                    numpy_helper.from_array(np.float32(1), "hi")])
    relu = [n for n in proto.graph.node if n.op_type == "Relu"][0]
    relu.op_type = "Clip"
    relu.input.extend(["lo", "hi"])
    model, _, res = quantize_tiny(proto, feeds, preset="fp8-e4m3")
    counts = op_counts(res.proto)
    assert counts["Clip"] == 0 and counts["Max"] == 1 and counts["Min"] == 1
    plain = run(res.proto, feeds)["Y"]
    assert_same_qdq(plain, _ref(res.proto, feeds)["Y"])
    fused = run(res.proto, feeds, optimize=True)["Y"]  # ClipQuantFusion used to throw here
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    assert 0 <= fused.min() and fused.max() <= 1


def test_failed_opset_upgrade_leaves_units_float_per_node(monkeypatch):
    import workbench.core.model.load as model_mod
    from workbench.core.errors import ModelError

    def fail(proto, target, **kw):
        raise ModelError("no adapter for Conv")

    monkeypatch.setattr(model_mod, "upgrade_opset", fail)
    proto, feeds = tiny_model("maxpool", opset=13)
    model, plan, res = quantize_tiny(proto, feeds, preset="a16w8")  # uint16 needs opset 21
    onnx.checker.check_model(res.proto)
    per_node = sorted(i.node for i in res.issues if "left in float" in i.message)
    assert per_node == ["conv1", "conv2"]
    assert any("no adapter for Conv" in i.message for i in res.issues)
    assert op_counts(res.proto)["QuantizeLinear"] == 0
    np.testing.assert_allclose(run(res.proto, feeds)["Y"], run(model.proto, feeds)["Y"], rtol=1e-5, atol=1e-6)


def test_save_model_goes_external_above_the_threshold(tmp_path, monkeypatch):
    import workbench.core.io.save as save_mod

    proto, feeds = tiny_model("maxpool")
    monkeypatch.setattr(save_mod, "EXTERNAL_THRESHOLD", 100)  # stands in for 2 GiB
    save_model(proto, tmp_path / "m.onnx")
    assert (tmp_path / "m.onnx.data").exists()
    m = onnx.load(str(tmp_path / "m.onnx"), load_external_data=False)
    assert any(i.data_location == onnx.TensorProto.EXTERNAL for i in m.graph.initializer)
    np.testing.assert_array_equal(run(str(tmp_path / "m.onnx"), feeds)["Y"], run(proto, feeds)["Y"])
    assert proto.graph.initializer[0].HasField("raw_data")  # the caller's proto is untouched


def test_dynamic_conv_per_channel_uses_one_zero_point():
    from workbench.core.recipe.spec import PartialSpec, Rule

    proto, feeds = tiny_model("conv", opset=13)
    rules = [Rule(op_type="Conv", weight=PartialSpec(granularity="per_channel", reduce_range=True))]
    model, _, res = quantize_tiny(proto, feeds, preset="dynamic-u8", rules=rules)
    inits = {i.name: numpy_helper.to_array(i) for i in res.proto.graph.initializer}
    assert inits["W_scale"].shape == (8, 1, 1) and inits["W_zero_point"].shape == ()
    got = run(res.proto, feeds)["Y"]
    np.testing.assert_allclose(got, _ref(res.proto, feeds)["Y"], rtol=1e-5, atol=1e-5)
    f = run(model.proto, feeds)["Y"]
    assert np.abs(f - got).max() < 0.03 * np.abs(f).max()
