"""QONNX writer, reader and QDQ <-> QONNX conversion, checked against the qonnx package.

Numbers: qonnx's own executor (``qonnx.core.onnx_exec.execute_onnx``) and op implementations
are the reference for QONNX semantics, onnxruntime for QDQ. Fast tests build tiny models; the
corpus tests (slow) quantize real models through the API.
"""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import onnx
import onnx.reference
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import calib_qparams, op_counts, run
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.core.onnx_exec import execute_onnx

from workbench.core import api
from workbench.core.errors import ExportError, RecipeError
from workbench.core.model.load import prepare_proto
from workbench.core.planning.plan import build_plan
from workbench.core.qonnx.convert import conversion_report, convert, qdq_to_qonnx, qonnx_to_qdq
from workbench.core.qonnx.export import write_qonnx
from workbench.core.qonnx.reader import DOMAIN, float_grid, int_quant, scale_layout
from workbench.core.qonnx.writer import with_static_shapes
from workbench.core.recipe.spec import PartialSpec, Rule
from workbench.core.writers.registry import write_model

RNG = np.random.default_rng(0)


# -- helpers ---------------------------------------------------------------------------------------


def qonnx_run(proto: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``proto`` in qonnx's executor with the feeds' shapes fixed (qonnx needs static shapes)."""
    static = with_static_shapes(proto, {k: list(v.shape) for k, v in feeds.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return execute_onnx(ModelWrapper(static, fix_missing_initializer_valueinfo=False), feeds)


def tiny_conv(opset: int = 17) -> onnx.ModelProto:
    """x[N,3,6,6] -> Conv(4x3x3x3, bias) -> Relu -> MatMul(W[4*4*4... flattened]) -> y."""
    w = RNG.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32)
    b = RNG.normal(0, 0.1, (4,)).astype(np.float32)
    w2 = RNG.normal(0, 0.2, (64, 5)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "w2"], ["y"], name="mm")]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
                           numpy_helper.from_array(w2, "w2")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def quantized(proto: onnx.ModelProto, recipe, n: int = 8):
    model = prepare_proto(proto)
    plan = build_plan(model, recipe)
    feeds = [{"x": RNG.normal(0, 1, (1, 3, 6, 6)).astype(np.float32)} for _ in range(n)]
    qp = calib_qparams(model, plan, feeds)
    return model, plan, qp


def _x(n: int = 3) -> dict[str, np.ndarray]:
    return {"x": RNG.normal(0, 1, (n, 3, 6, 6)).astype(np.float32)}


# -- numerics: our QONNX semantics vs the qonnx package ---------------------------------------------


@pytest.mark.parametrize("bits,signed,narrow", [(8, False, False), (8, True, True), (3, True, False),
                                                (6, False, False), (4, True, False), (2, False, True)])
@pytest.mark.parametrize("rounding", ["ROUND", "FLOOR", "HALF_UP", "DOWN"])
def test_int_quant_equals_qonnx_reference(bits, signed, narrow, rounding):
    from qonnx.custom_op.general.quant import quant as qonnx_quant

    scale = np.float32(0.05)
    x = np.concatenate([RNG.normal(0, 4, 500), (np.arange(-40, 40) + 0.5) * 0.05]).astype(np.float32)  # ties
    zp = np.float32(3 if not signed else 0)
    ref = qonnx_quant(x, scale, zp, np.float32(bits), signed, narrow, rounding)
    np.testing.assert_array_equal(int_quant(x, scale, zp, bits, signed, narrow, rounding), ref)


def test_float_grid_equals_float8_cast_and_qonnx():
    from qonnx.custom_op.general.floatquant import float_quant

    x = np.concatenate([RNG.normal(0, 30, 2000), RNG.normal(0, 0.01, 500), [0.0, 1e-9, 447.9, 460.0, 1e6, -1e6],
                        [2.0**-9 * 1.5, 2.0**-8 * 1.25, 17.0, 18.0, 19.0]]).astype(np.float32)
    ours = float_grid(x, 4, 3, 7, 448.0)
    cast = np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    np.testing.assert_array_equal(ours, cast)
    np.testing.assert_array_equal(ours, float_quant(x.copy(), np.float32(1), 4, 3, 7, max_val=448.0))
    big = (x * 100).astype(np.float32)
    cast2 = np.clip(big, -57344, 57344).astype(ml_dtypes.float8_e5m2).astype(np.float32)
    np.testing.assert_array_equal(float_grid(big, 5, 2, 15, 57344.0), cast2)


def test_scale_layouts():
    assert scale_layout(np.float32(2), (3, 4)).kind == "tensor"
    per_axis = scale_layout(np.arange(1, 4, dtype=np.float32).reshape(3, 1, 1, 1), (3, 2, 5, 5))
    assert per_axis.kind == "axis" and per_axis.axis == 0 and per_axis.values.tolist() == [1, 2, 3]
    blocks = np.repeat(np.arange(1, 7, dtype=np.float32).reshape(2, 3), 4, axis=0)[:7]  # K=7, block 4, N=3
    lay = scale_layout(blocks, (7, 3))
    assert (lay.kind, lay.axis, lay.block_size, lay.values.shape) == ("block", 0, 4, (2, 3))
    assert scale_layout(RNG.random((2, 3)).astype(np.float32), (5, 3)) is None  # does not broadcast


# -- QDQ -> QONNX -> QDQ on tiny models ------------------------------------------------------------


@pytest.mark.parametrize("preset,opset", [("cpu-u8s8", 17), ("s8s8", 17), ("a16w8", 21), ("fp8-e4m3", 19),
                                          ("w4-block", 21)])
def test_tiny_presets_qonnx_matches_qdq_and_round_trips(preset, opset):
    model, plan, qp = quantized(tiny_conv(opset), api.make_recipe(preset))
    qdq = write_model(model, plan, qp).proto
    qx = write_qonnx(model, plan, qp).proto
    onnx.checker.check_model(qx)
    n_dq = op_counts(qdq)["DequantizeLinear"]
    counts = op_counts(qx)
    assert counts["Quant"] + counts["FloatQuant"] == n_dq and counts["QuantizeLinear"] == 0
    assert any(o.domain == DOMAIN for o in qx.opset_import)
    feeds = _x()
    want = run(qdq, feeds)["y"]
    np.testing.assert_array_equal(qonnx_run(qx, feeds)["y"], want)
    back = qonnx_to_qdq(qdq_to_qonnx(qdq))
    assert op_counts(back) == op_counts(qdq)
    np.testing.assert_array_equal(run(back, feeds)["y"], want)
    np.testing.assert_array_equal(run(back, feeds, optimize=True)["y"], run(qdq, feeds, optimize=True)["y"])


def test_annotations_and_float_weights_kept():
    model, plan, qp = quantized(tiny_conv(), api.make_recipe("cpu-u8s8", reduce_range=False))
    qx = write_qonnx(model, plan, qp).proto
    ann = {a.tensor_name: {e.key: e.value for e in a.quant_parameter_tensor_names}
           for a in qx.graph.quantization_annotation}
    grids = sorted(v["QUANT_DATATYPE"] for v in ann.values())
    # bias, 2 weights; x, relu out, flatten out (y, the Gemm's graph output, stays float)
    assert grids == ["INT32", "INT8", "INT8"] + ["UINT8"] * 3
    assert all(v["finn_datatype"].startswith("SCALEDINT<") for v in ann.values())
    inits = {i.name: numpy_helper.to_array(i) for i in qx.graph.initializer}
    quant_inputs = [inits[n.input[0]] for n in qx.graph.node if n.op_type == "Quant" and n.input[0] in inits]
    w = numpy_helper.to_array(model.proto.graph.initializer[0])
    assert any(a.shape == w.shape and np.array_equal(a, w) for a in quant_inputs)  # the original floats


# -- QONNX-only dtypes -----------------------------------------------------------------------------


def _qonnx_recipe(w_dtype: str, a_dtype: str, **kw):
    rules = [Rule(op_type=op, weight=PartialSpec(dtype=w_dtype, reduce_range=False, **kw),
                  activation=PartialSpec(dtype=a_dtype)) for op in ("Conv", "MatMul")]
    return api.make_recipe("cpu-u8s8", target="qonnx", rules=rules)


def test_qonnx_only_dtypes_need_target_qonnx():
    with pytest.raises(RecipeError, match="only in QONNX"):
        api.make_recipe("cpu-u8s8", rules=[Rule(op_type="Conv", weight=PartialSpec(dtype="int3"))])
    model = prepare_proto(tiny_conv())
    plan = build_plan(model, _qonnx_recipe("int3", "uint6"))
    infos = [i for i in plan.issues if "only in QONNX" in i.message]
    assert {i.node for i in infos} == {"conv", "mm"} and {i.severity for i in infos} == {"info"}


def test_int3_weights_uint6_activations_exact_in_qonnx():
    model, plan, qp = quantized(tiny_conv(), _qonnx_recipe("int3", "uint6"))
    qx = write_qonnx(model, plan, qp).proto
    inits = {i.name: numpy_helper.to_array(i) for i in qx.graph.initializer}
    bw = sorted(float(inits[n.input[3]]) for n in qx.graph.node if n.op_type == "Quant")
    assert bw == [3.0, 3.0, 6.0, 6.0, 6.0, 6.0, 32.0]  # 2 weights; x, relu out, flatten out, y; bias
    feeds = _x()
    # numpy reference: the same graph with every Quant applied by int_quant (our QONNX semantics)
    by_out = {n.output[0]: n for n in qx.graph.node if n.op_type == "Quant"}
    by_in = {n.input[0]: n for n in qx.graph.node if n.op_type == "Quant" and n.input[0] not in inits}

    def fq(n, v):
        signed = bool(helper.get_attribute_value(next(a for a in n.attribute if a.name == "signed")))
        return int_quant(v, inits[n.input[1]], inits[n.input[2]], int(inits[n.input[3]]), signed, False)

    def const(t):
        return fq(by_out[t], inits[by_out[t].input[0]])

    names = {n.name: n for n in qx.graph.node}
    conv, mm = names["conv"], names["mm"]
    conv_ref = onnx.reference.ReferenceEvaluator(helper.make_model(helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"])], "g",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in ("x", "w", "b")],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)])))
    c = conv_ref.run(None, {"x": fq(by_in["x"], feeds["x"]), "w": const(conv.input[1]), "b": const(conv.input[2])})[0]
    r = fq(by_in["r"], np.maximum(c, 0))
    f = fq(by_in["f"], r.reshape(3, -1))
    y = fq(by_in[mm.output[0]], f @ const(mm.input[1]))
    got = qonnx_run(qx, feeds)["y"]
    np.testing.assert_allclose(got, y, rtol=0, atol=1e-6 * float(np.ptp(y)))
    assert len(np.unique(got)) <= 64  # 6-bit output grid
    report = conversion_report(qx, "qdq")
    assert len(report) == 4 and all("bit width 6" in why for _, why in report)
    with pytest.raises(ExportError, match="cannot be converted to qdq"):
        qonnx_to_qdq(qx)
    partial = qonnx_to_qdq(qx, partial=True)  # weights become int8 DequantizeLinear, exact
    assert op_counts(partial)["DequantizeLinear"] == 3 and op_counts(partial)["Quant"] == 4


def test_bipolar_weights():
    model, plan, qp = quantized(tiny_conv(), _qonnx_recipe("bipolar", "uint8", granularity="per_channel"))
    qx = write_qonnx(model, plan, qp).proto
    assert op_counts(qx)["BipolarQuant"] == 2
    w = numpy_helper.to_array(next(i for i in model.proto.graph.initializer if i.name == "w"))
    bq = next(n for n in qx.graph.node if n.op_type == "BipolarQuant" and n.output[0] in
              next(m for m in qx.graph.node if m.name == "conv").input)
    inits = {i.name: numpy_helper.to_array(i) for i in qx.graph.initializer}
    assert np.array_equal(inits[bq.input[0]], w)  # float weights kept
    scale = np.abs(w).mean(axis=(1, 2, 3))
    np.testing.assert_array_equal(inits[bq.input[1]].reshape(-1), scale.astype(np.float32))
    ctx = ModelWrapper(with_static_shapes(qx, {"x": [2, 3, 6, 6]}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = execute_onnx(ctx, _x(2), return_full_exec_context=True)
    want = np.where(w >= 0, 1, -1) * scale.reshape(4, 1, 1, 1).astype(np.float32)
    np.testing.assert_array_equal(full[bq.output[0]], want)
    assert conversion_report(qx, "qdq") == []  # bipolar constants are exact in int8 storage
    back = qonnx_to_qdq(qx)
    np.testing.assert_allclose(run(back, _x(2))["y"].shape, (2, 5))


# -- reports ---------------------------------------------------------------------------------------


def test_report_qdq_to_qonnx_names_integer_kernels():
    model = prepare_proto(tiny_conv())
    plan = build_plan(model, api.make_recipe("dynamic-u8"))
    dyn = write_model(model, plan).proto
    report = conversion_report(dyn, "qonnx")
    ops = {n.name: n.op_type for n in dyn.graph.node}
    assert {ops[n] for n, _ in report} >= {"DynamicQuantizeLinear", "MatMulInteger"}
    assert all("QONNX" in why for _, why in report)
    with pytest.raises(ExportError, match="cannot be converted to qonnx"):
        qdq_to_qonnx(dyn)
    assert op_counts(qdq_to_qonnx(dyn, partial=True))["DynamicQuantizeLinear"] >= 1


def _qonnx_node_model(node: onnx.NodeProto, inits: list[onnx.TensorProto]) -> onnx.ModelProto:
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])


@pytest.mark.parametrize("op,attrs,inputs,reason", [
    ("Quant", {"signed": 1, "narrow": 1}, (0.1, 0.0, 8.0), "narrow"),
    ("Quant", {"signed": 1, "narrow": 0, "rounding_mode": "FLOOR"}, (0.1, 0.0, 8.0), "rounding_mode FLOOR"),
    ("Quant", {"signed": 0, "narrow": 0}, (0.1, 2.5, 8.0), "zero point is not a constant integer"),
    ("Quant", {"signed": 0, "narrow": 0}, (0.1, 0.0, 5.0), "bit width 5"),
    ("BipolarQuant", {}, (0.1,), "sign"),
    ("Trunc", {}, (0.1, 0.0, 8.0, 4.0), "no QDQ form"),
])
def test_report_qonnx_to_qdq_reasons(op, attrs, inputs, reason):
    inits = [numpy_helper.from_array(np.float32(v), f"p{i}") for i, v in enumerate(inputs)]
    node = helper.make_node(op, ["x"] + [f"p{i}" for i in range(len(inputs))], ["y"], name="n", domain=DOMAIN, **attrs)
    report = conversion_report(_qonnx_node_model(node, inits), "qdq")
    assert len(report) == 1 and report[0][0] == "n" and reason in report[0][1]


def test_qonnx_activation_8bit_converts_to_q_dq_and_matches():
    inits = [numpy_helper.from_array(np.float32(v), n) for n, v in (("s", 0.02), ("z", 7.0), ("b", 8.0))]
    node = helper.make_node("Quant", ["x", "s", "z", "b"], ["y"], name="q", domain=DOMAIN, signed=0, narrow=0,
                            rounding_mode="ROUND")
    m = _qonnx_node_model(node, inits)
    x = {"x": RNG.normal(0, 2, (2, 3)).astype(np.float32)}
    back = convert(m, "qdq")
    assert op_counts(back) == {"QuantizeLinear": 1, "DequantizeLinear": 1}
    assert not any(o.domain == DOMAIN for o in back.opset_import)
    np.testing.assert_array_equal(run(back, x)["y"], qonnx_run(m, x)["y"])
    with pytest.raises(ExportError, match="Unknown conversion target"):
        conversion_report(m, "tflite")


# -- API and CLI -----------------------------------------------------------------------------------


def test_cli_convert_prints_report_and_refuses(tmp_path, capsys):
    from workbench.cli import main

    model, plan, qp = quantized(tiny_conv(), _qonnx_recipe("int3", "uint6"))
    src = tmp_path / "m.qonnx.onnx"
    onnx.save(write_qonnx(model, plan, qp).proto, src)
    assert main(["convert", str(src), str(tmp_path / "out.onnx"), "--to", "qdq"]) == 2
    out = capsys.readouterr()
    assert out.out.count("cannot convert") == 4 and "bit width 6" in out.out and "nothing written" in out.err
    assert not (tmp_path / "out.onnx").exists()
    assert main(["convert", str(src), str(tmp_path / "out.onnx"), "--to", "qdq", "--partial"]) == 0
    capsys.readouterr()
    assert op_counts(onnx.load(tmp_path / "out.onnx"))["DequantizeLinear"] == 3
    qdq = tmp_path / "m.qdq.onnx"
    model, plan, qp = quantized(tiny_conv(), api.make_recipe("cpu-u8s8"))
    onnx.save(write_model(model, plan, qp).proto, qdq)
    assert main(["convert", str(qdq), str(tmp_path / "q.onnx"), "--to", "qonnx"]) == 0
    # x, relu out, flatten out, 2 weights, bias (y stays float)
    assert "wrote" in capsys.readouterr().out and op_counts(onnx.load(tmp_path / "q.onnx"))["Quant"] == 6


def test_api_export_formats(tmp_path):
    model, plan, qp = quantized(tiny_conv(), _qonnx_recipe("int3", "uint6"))
    res = write_model(model, plan, qp)
    result = api.QuantizeResult(res.proto, plan, None, qp, res.tensor_map, [], plan.recipe)
    with pytest.raises(ExportError, match="QONNX-only"):
        api.export(result, tmp_path / "a.onnx")
    with pytest.raises(ExportError, match="Unknown export format"):
        api.export(result, tmp_path / "a.onnx", format="tflite")
    p1 = api.export(result, tmp_path / "b.onnx", format="qonnx", model=model)
    p2 = api.export(result, tmp_path / "c.onnx", format="qonnx")  # converted from the int8-carried QDQ
    feeds = _x()
    np.testing.assert_array_equal(qonnx_run(onnx.load(p1), feeds)["y"], qonnx_run(onnx.load(p2), feeds)["y"])


# -- corpus (slow) ---------------------------------------------------------------------------------


#: (model, file, calibration samples); qonnx's cleanup_model and inference_cost on these models:
#: tests/test_qonnx_tools.py.
CORPUS_MODELS = [("digits_cnn", "model_opset17.onnx", 32),
                 ("digits_transformer", "model_opset17.onnx", 32),
                 ("ppocr_mobile_v2_cls", "model.onnx", 8)]


def _corpus_result(corpus, name, file, recipe=None, samples=None):
    model = api.open_model(corpus / name / file)
    result = api.quantize(model, recipe or api.make_recipe("cpu-u8s8"), data=str(corpus / name / "calib.npz"),
                          samples=samples)
    ev = np.load(corpus / name / "eval.npz")
    return model, result, ev


@pytest.mark.slow
@pytest.mark.parametrize("name,file,samples", CORPUS_MODELS)
def test_corpus_qonnx_matches_qdq_in_onnxruntime(corpus, tmp_path, name, file, samples):
    model, result, ev = _corpus_result(corpus, name, file, samples=samples)
    path = api.export(result, tmp_path / "m.qonnx.onnx", format="qonnx", model=model)
    qx = onnx.load(path)
    onnx.checker.check_model(qx)
    inp = model.inputs[0].name
    feeds = {inp: ev[inp][:2]}
    want = run(result.proto, feeds)
    got = qonnx_run(qx, feeds)
    for k, v in want.items():
        diff = float(np.max(np.abs(got[k] - v)))
        print(f"{name}: {k} max |QONNX(qonnx) - QDQ(onnxruntime)| = {diff:.3g}, output range {np.ptp(v):.3g}")
        assert diff <= 1e-5 * float(np.ptp(v))
    back = qonnx_to_qdq(qdq_to_qonnx(result.proto))  # round trip of the QDQ export, bit for bit
    assert op_counts(back) == op_counts(result.proto)
    for k, v in run(back, feeds).items():
        assert v.tobytes() == want[k].tobytes()


@pytest.mark.slow
def test_corpus_digits_cnn_w4_a6_accuracy_in_qonnx(corpus, tmp_path):
    rules = [Rule(op_type=op, weight=PartialSpec(dtype="int4", reduce_range=False)) for op in ("Conv", "Gemm")]
    rules.append(Rule(name="*", activation=PartialSpec(dtype="uint6")))  # every unit, pools included
    recipe = api.make_recipe("cpu-u8s8", target="qonnx", rules=rules)
    model, result, ev = _corpus_result(corpus, "digits_cnn", "model_opset17.onnx", recipe)
    qx = onnx.load(api.export(result, tmp_path / "w4a6.onnx", format="qonnx", model=model))
    inits = {i.name: float(numpy_helper.to_array(i)) for i in qx.graph.initializer if not i.dims}
    bits = sorted({inits[n.input[3]] for n in qx.graph.node if n.op_type == "Quant"})
    assert bits == [4.0, 6.0, 32.0]
    logits = qonnx_run(qx, {"input": ev["input"]})["logits"]
    acc = float(np.mean(np.argmax(logits, axis=1) == ev["gt_label"]))
    float_acc = float(np.mean(np.argmax(run(model.proto, {"input": ev["input"]})["logits"], 1) == ev["gt_label"]))
    print(f"digits_cnn W4A6 QONNX accuracy {acc:.4f} (float {float_acc:.4f}, n={len(ev['gt_label'])})")
    assert acc > 0.8


@pytest.mark.slow
def test_corpus_digits_cnn_qdq_qonnx_qdq_bit_exact(corpus):
    model, result, ev = _corpus_result(corpus, "digits_cnn", "model_opset17.onnx")
    assert conversion_report(result.proto, "qonnx") == []
    qx = qdq_to_qonnx(result.proto)
    assert conversion_report(qx, "qdq") == []
    back = qonnx_to_qdq(qx)
    assert op_counts(back) == op_counts(result.proto)
    feeds = {"input": ev["input"]}
    for optimize in (False, True):
        a, b = run(result.proto, feeds, optimize)["logits"], run(back, feeds, optimize)["logits"]
        assert a.tobytes() == b.tobytes()


def test_report_float8_nonzero_zero_point():
    q = numpy_helper.from_array(np.array([1, 2, 3], np.float32).astype(ml_dtypes.float8_e4m3fn), "q")
    z = numpy_helper.from_array(np.array(1, np.float32).astype(ml_dtypes.float8_e4m3fn), "z")
    s = numpy_helper.from_array(np.float32(0.5), "s")
    g = helper.make_graph([helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq")], "g", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], [q, s, z])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    assert conversion_report(m, "qonnx") == [("dq", "non-zero zero point on float8e4m3fn: FloatQuant has none.")]
    m.graph.initializer[2].CopyFrom(numpy_helper.from_array(np.array(0, np.float32).astype(ml_dtypes.float8_e4m3fn), "z"))
    qx = qdq_to_qonnx(m)
    assert op_counts(qx) == {"FloatQuant": 1}
    np.testing.assert_array_equal(qonnx_run(qx, {})["y"], run(m, {})["y"])


def _one_element_scale_model() -> onnx.ModelProto:
    """x -> Q/DQ -> Conv(DQ int8 weight, DQ int32 bias) -> Q/DQ -> y, every scale and zero point of shape [1]
    as onnxruntime's quantize_static writes its biases' scales (a [1] scale is per-tensor)."""
    w = RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    b = RNG.integers(-3000, 3000, (4,)).astype(np.int32)
    arr = {"xs": np.array([0.02], np.float32), "xz": np.array([128], np.uint8), "ws": np.array([0.004], np.float32),
           "bs": np.array([0.02 * 0.004], np.float32), "ys": np.array([0.05], np.float32),
           "yz": np.array([120], np.uint8), "wq": w, "bq": b}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="x_q"),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="x_dq"),
             helper.make_node("DequantizeLinear", ["wq", "ws"], ["wd"], name="w_dq"),
             helper.make_node("DequantizeLinear", ["bq", "bs"], ["bd"], name="b_dq"),
             helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], name="conv"),
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["cq"], name="c_q"),
             helper.make_node("DequantizeLinear", ["cq", "ys", "yz"], ["y"], name="c_dq")]
    g = helper.make_graph(nodes, "ort_style", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 4, 4])],
                          [numpy_helper.from_array(v, k) for k, v in arr.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_one_element_scales_convert_as_per_tensor():
    # a [1] scale on the int32 bias of shape [4] was read as per-axis (axis 1): 'cannot reshape array of
    # size 1 into shape (4,)', a traceback from convert --to qonnx on any quantize_static QDQ file
    m = _one_element_scale_model()
    assert conversion_report(m, "qonnx") == []
    q = convert(m, "qonnx")
    assert op_counts(q) == {"Quant": 4, "Conv": 1}
    x = _x(2)
    np.testing.assert_array_equal(qonnx_run(q, x)["y"], run(m, x)["y"])
    back = convert(q, "qdq")
    np.testing.assert_array_equal(run(back, x)["y"], run(m, x)["y"])
