"""MX block formats (OCP Microscaling v1.0): shared exponents, numpy simulation vs onnx.reference,
QDQ export at opset 24 and the digits_mlp accuracy of MXFP8 / MXFP4 weights."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from pydantic import ValidationError

from workbench.core.formats.mx import block_absmax, e8m0_bits, mx_qparams, shared_exponent
from workbench.core.formats.numerics import compute_qparams, mx_fake_quantize, sqnr_db
from workbench.core.formats.qparams import QParams
from workbench.core.formats.qtypes import MX_DTYPES, RECIPE_DTYPES
from workbench.core.inspection.quant_reader import read_quant_params
from workbench.core.model.load import load_model, prepare_proto
from workbench.core.planning.plan import build_plan
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import PartialSpec, QuantSpec, Rule
from workbench.core.writers.mx import ORT_CANNOT_RUN, mx_tensors, ort_can_run
from workbench.core.writers.registry import write_model


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


def test_shared_exponent_follows_the_spec_formula():
    # floor(log2(absmax)) - emax_elem; emax: E4M3 8, E5M2 15, E2M3 2, E3M2 4, E2M1 2, INT8 0
    absmax = np.array([1.0, 1.99, 2.0, 448.0, 0.75, 2.0**-130], np.float32)
    assert shared_exponent(absmax, "mxfp8e4m3").tolist() == [-8, -8, -7, 0, -9, -127]
    assert shared_exponent(absmax, "mxfp8e5m2").tolist() == [-15, -15, -14, -7, -16, -127]
    assert shared_exponent(absmax, "mxfp4").tolist() == [-2, -2, -1, 6, -3, -127]
    assert shared_exponent(np.float32(0), "mxfp6e3m2") == -127  # an all-zero block
    assert shared_exponent(np.float32(3e38), "mxint8") == 127
    qp = compute_qparams(np.float32(-6.0), np.float32(5.0), "mxint8")  # INT8: implicit 2^-6 in the scale
    assert qp.scale == np.float32(2.0 ** (2 - 6)) and qp.qtype == "mxint8"
    assert e8m0_bits(np.array([2.0**-127, 1.0, 2.0**127], np.float32)).tolist() == [0, 127, 254]


def test_mx_element_rounding_by_hand():
    # one block of 32 (E2M1 grid 0, .5, 1, 1.5, 2, 3, 4, 6): absmax 5 -> X = 2^(2-2) = 1
    x = np.zeros((1, 32), np.float32)
    x[0, :6] = [5.0, 2.5, -0.25, 0.74, 1.25, -7.0 / 1.4]
    y = mx_fake_quantize(x, "mxfp4", axis=1)
    # 5 -> 4 (tie to even mantissa), 2.5 -> 2, -0.25 -> -0 (tie), 0.74 -> 0.5, 1.25 -> 1, -5 -> -4
    assert y[0, :6].tolist() == [4.0, 2.0, -0.0, 0.5, 1.0, -4.0]
    # E4M3: absmax 500 -> X = 2^(8-8) = 1; 500 > 448 saturates to the max normal
    x[0, 0] = 500.0
    assert mx_fake_quantize(x, "mxfp8e4m3", axis=1)[0, 0] == 448.0
    # a short last block and blocks along axis 0
    w = np.random.RandomState(0).randn(70, 3).astype(np.float32)
    assert block_absmax(w, 0).shape == (3, 3)
    np.testing.assert_array_equal(block_absmax(w, 0)[2], np.abs(w[64:]).max(axis=0))


def test_mx_dtypes_are_recipe_dtypes_and_need_blocks():
    assert set(MX_DTYPES) == {"mxfp8e4m3", "mxfp8e5m2", "mxfp6e2m3", "mxfp6e3m2", "mxfp4", "mxint8"}
    assert set(MX_DTYPES) <= set(RECIPE_DTYPES)
    QuantSpec(dtype="mxfp4", granularity="per_block", block_size=32)
    with pytest.raises(ValidationError, match="MX block format"):
        QuantSpec(dtype="mxfp4", granularity="per_channel")


def _dq_model(x_init, s_init, shape, axis):
    node = helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=axis, block_size=32,
                            output_dtype=TensorProto.FLOAT)
    g = helper.make_graph([node], "dq", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                          [x_init, s_init])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 24)])
    m.ir_version = 11
    onnx.checker.check_model(m, full_check=True)
    return m


@pytest.mark.parametrize("dtype", MX_DTYPES)
def test_numpy_simulation_equals_onnx_reference_dequantize(dtype):
    rs = np.random.RandomState(1)
    w = (rs.randn(5, 75) * np.exp(rs.randn(5, 1) * 3)).astype(np.float32)  # 3 blocks, the last short
    w[0, :32] = 0.0  # an all-zero block
    qp = mx_qparams(w, dtype, axis=1)
    elements, scale = mx_tensors(qp, w)
    m = _dq_model(numpy_helper.from_array(elements, "x"), numpy_helper.from_array(scale, "s"), [5, 75], 1)
    ref = ReferenceEvaluator(m).run(None, {})[0]
    sim = mx_fake_quantize(w, dtype, axis=1)
    np.testing.assert_array_equal(_bits(ref), _bits(sim))
    assert np.all(sim[0, :32] == 0) and sqnr_db(w, sim) > {4: 10, 6: 18}.get(qp.qt.bits, 20)


def _mx_recipe(dtype: str) -> Recipe:
    return Recipe(preset="w4-block", rules=[Rule(op_type="Gemm", weight=PartialSpec(dtype=dtype))])


def test_export_a_tiny_gemm_and_report_onnxruntime():
    rs = np.random.RandomState(2)
    w, b = rs.randn(8, 64).astype(np.float32), rs.randn(8).astype(np.float32)
    g = helper.make_graph([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, name="fc")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    model = prepare_proto(m)
    plan = build_plan(model, _mx_recipe("mxfp4"))
    assert plan.min_opset == 24
    res = write_model(model, plan)
    dq = [n for n in res.proto.graph.node if n.op_type == "DequantizeLinear"]
    assert len(dq) == 1 and len(dq[0].input) == 2  # no zero point
    attrs = {a.name: a.i for a in dq[0].attribute}
    assert attrs == {"axis": 1, "block_size": 32, "output_dtype": TensorProto.FLOAT}
    inits = {i.name: i for i in res.proto.graph.initializer}
    assert inits[dq[0].input[0]].data_type == TensorProto.FLOAT4E2M1
    assert inits[dq[0].input[1]].data_type == TensorProto.FLOAT8E8M0 and list(inits[dq[0].input[1]].dims) == [8, 2]
    (rp,) = read_quant_params(res.proto)  # the reader recovers the MX parameters
    assert (rp.dtype, rp.axis, rp.block_size, rp.role, rp.zero_point) == ("float4e2m1", 1, 32, "weight", None)
    np.testing.assert_array_equal(rp.scale.astype(np.float32), mx_qparams(w, "mxfp4", axis=1).scale)
    ok, _ = ort_can_run(res.proto)
    msgs = [i.message for i in res.issues]
    assert ok or any(ORT_CANNOT_RUN in s for s in msgs)
    x = rs.randn(2, 64).astype(np.float32)
    y = ReferenceEvaluator(res.proto).run(None, {"x": x})[0]
    wq = mx_fake_quantize(w, "mxfp4", axis=1)
    np.testing.assert_array_equal(_bits(y), _bits(np.dot(x, wq.T) + b))


def _forward(x: np.ndarray, weights: dict[str, np.ndarray], biases: dict[str, np.ndarray]) -> np.ndarray:
    """digits_mlp in numpy exactly as onnx.reference's Gemm computes it (``dot(A, B.T) + C``)."""
    h = x
    for i, k in enumerate(("net.0", "net.2", "net.4")):
        h = np.dot(h, weights[f"{k}.weight"].T) + biases[f"{k}.bias"]
        if i < 2:
            h = np.maximum(h, 0)
    return h


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["mxfp8e4m3", "mxfp4"])
def test_digits_mlp_mx_weights_bit_exact_and_accuracy(corpus, dtype):
    folder = corpus / "digits_mlp"
    model = load_model(folder / "model_opset17.onnx")
    ev = np.load(folder / "eval.npz")
    plan = build_plan(model, _mx_recipe(dtype))
    res = write_model(model, plan)
    proto = res.proto
    dq_outs = {w: res.tensor_map[w] for w in ("net.0.weight", "net.2.weight", "net.4.weight")}
    proto.graph.output.extend([helper.make_tensor_value_info(t, TensorProto.FLOAT, None) for t in dq_outs.values()])
    ref = ReferenceEvaluator(proto)
    outs = ref.run(["logits", *dq_outs.values()], {"input": ev["input"]})
    floats = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(folder / "model_opset17.onnx")).graph.initializer}
    sim_w = {w: mx_fake_quantize(floats[w], dtype, axis=1) for w in dq_outs}  # Gemm transB=1: axis 1 is K
    for w, got in zip(dq_outs, outs[1:], strict=True):
        np.testing.assert_array_equal(_bits(got), _bits(sim_w[w]))
    sim_logits = _forward(ev["input"], sim_w, {k: v for k, v in floats.items() if k.endswith("bias")})
    np.testing.assert_array_equal(_bits(outs[0]), _bits(sim_logits))
    acc = float((outs[0].argmax(1) == ev["gt_label"]).mean())
    float_acc = float((_forward(ev["input"], floats, floats).argmax(1) == ev["gt_label"]).mean())
    sq = min(sqnr_db(floats[w], sim_w[w]) for w in dq_outs)
    print(f"\ndigits_mlp {dtype} weights: accuracy {acc:.4f} (float {float_acc:.4f}), "
          f"worst weight SQNR {sq:.1f} dB, bit-exact vs onnx.reference: weights and logits")
    assert float_acc == pytest.approx(0.9756, abs=1e-4)
    assert acc >= float_acc - (0.01 if dtype == "mxfp8e4m3" else 0.03)
    ok, _ = ort_can_run(res.proto)
    assert ok or any(ORT_CANNOT_RUN in i.message for i in res.issues)


def test_qparams_json_round_trip_keeps_mx():
    qp = mx_qparams(np.random.RandomState(3).randn(4, 64).astype(np.float32), "mxfp6e3m2", axis=1)
    back = QParams.from_json(qp.to_json())
    assert back.qtype == "mxfp6e3m2" and back.block_size == 32 and back.axis == 1
    np.testing.assert_array_equal(back.scale, qp.scale)
    assert back.zero_point.dtype == np.dtype(ml_dtypes.float6_e3m2fn)


@pytest.mark.slow
def test_error_analysis_runs_mx_models_in_onnxruntime(corpus):
    """session.make_session swaps MX DequantizeLinear for its exact float values (analysis, autotune)."""
    from workbench.core.runtime.mx_simulation import simulation_proto
    from workbench.core.runtime.session import make_session

    model = load_model(corpus / "digits_mlp" / "model_opset17.onnx")
    ev = np.load(corpus / "digits_mlp" / "eval.npz")
    for dtype in ("mxint8", "mxfp6e3m2"):
        res = write_model(model, build_plan(model, _mx_recipe(dtype)))
        sim = simulation_proto(res.proto)
        assert sum(n.op_type == "DequantizeLinear" for n in sim.graph.node) == 0
        w_dq = res.tensor_map["net.2.weight"]
        ref = ReferenceEvaluator(res.proto).run([w_dq, "logits"], {"input": ev["input"]})
        assert not any(i.data_type == TensorProto.FLOAT8E8M0 for i in sim.graph.initializer)
        got = ReferenceEvaluator(sim).run([w_dq], {"input": ev["input"][:1]})[0]
        np.testing.assert_array_equal(_bits(got), _bits(ref[0]))
        logits = make_session(res.proto, optimize=False).run(["logits"], {"input": ev["input"]})[0]
        np.testing.assert_allclose(logits, ref[1], rtol=1e-5, atol=1e-5)  # onnxruntime's own Gemm
        print(f"\ndigits_mlp {dtype}: accuracy {float((logits.argmax(1) == ev['gt_label']).mean()):.4f} (onnxruntime)")


def test_observer_path_and_plan_issues():
    from workbench.core.calibration.observers import make_observer

    w = np.random.RandomState(4).randn(16, 96).astype(np.float32)
    obs = make_observer(QuantSpec(dtype="mxfp8e5m2", granularity="per_block", block_size=32), axis=1)
    obs.update(w)
    qp, want = obs.qparams(), mx_qparams(w, "mxfp8e5m2", axis=1)
    assert (qp.qtype, qp.axis, qp.block_size) == ("mxfp8e5m2", 1, 32)
    np.testing.assert_array_equal(qp.scale, want.scale)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 96])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])],
                          [numpy_helper.from_array(w.T.copy(), "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    mx16 = PartialSpec(dtype="mxint8", block_size=16)
    plan = build_plan(prepare_proto(m), Recipe(preset="w4-block", rules=[Rule(op_type="MatMul", weight=mx16)]))
    assert [i.severity for i in plan.issues if "OCP MX" in i.message] == ["warning"]
    act = PartialSpec(dtype="mxfp4", granularity="per_block", block_size=32)
    plan = build_plan(prepare_proto(m), Recipe(preset="s8s8", rules=[Rule(op_type="MatMul", activation=act)]))
    assert plan.activations == {} and any("run time" in i.message for i in plan.issues)
