"""The noise split on QDQ files of other tools: Relu / Clip removed by onnxruntime, float weights
carried through Q -> DQ (QAT / onnxruntime style), integer outputs, which float weight is a
dequantized constant's source, and memory."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.analysis import weight_error
from workbench.core.analysis.noise_split import (
    activations_only,
    has_qdq_pairs,
    noise_split,
    removed_activations,
    weights_only,
)

RNG = np.random.default_rng(11)


def run(proto: onnx.ModelProto, feed: dict) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feed)


def fake_quant(x: np.ndarray, scale, zp, qmin: int, qmax: int) -> np.ndarray:
    """DequantizeLinear(QuantizeLinear(x)) in float32, rounding half to even (as the operators do)."""
    scale = np.float32(scale) if np.ndim(scale) == 0 else np.asarray(scale, np.float32)
    q = np.clip(np.round(x.astype(np.float32) / scale) + zp, qmin, qmax)
    return ((q - zp) * scale).astype(np.float32)


def model(nodes, inputs, outputs, inits, opset=17) -> onnx.ModelProto:
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, inits),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 8
    return m


class _Reader:
    def __init__(self, name: str, x: np.ndarray):
        self.it = iter([{name: x[i:i + 1]} for i in range(len(x))])

    def get_next(self):
        return next(self.it, None)


def mlp(act: onnx.NodeProto, extra_inits=()) -> onnx.ModelProto:
    """x [N, 8] -> MatMul(w1) -> ``act`` (h -> a) -> MatMul(w2) -> y [N, 4]."""
    w1 = RNG.normal(size=(8, 16)).astype(np.float32)
    w2 = RNG.normal(size=(16, 4)).astype(np.float32)
    return model([helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"), act,
                  helper.make_node("MatMul", ["a", "w2"], ["y"], name="mm2")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
                 [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"), *extra_inits])


@pytest.mark.parametrize("act", [
    helper.make_node("Relu", ["h"], ["a"], name="relu"),
    helper.make_node("Clip", ["h", "lo", "hi"], ["a"], name="relu6"),
])
def test_weights_only_clips_where_onnxruntime_removed_the_activation(tmp_path, act):
    """quantize_static drops the Relu / Clip(0, 6) and lets the uint8 range clip: the weights-only
    model equals the float model (activation kept) with onnx's dequantized weights, in numpy."""
    from onnxruntime.quantization import QuantFormat, quantize_static

    bounds = [numpy_helper.from_array(np.array(0.0, np.float32), "lo"), numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
    fp = mlp(act, bounds if act.op_type == "Clip" else ())
    onnx.save(fp, tmp_path / "f.onnx")
    x = (RNG.normal(size=(32, 8)) * 2).astype(np.float32)
    quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), _Reader("x", x[:16]),
                    quant_format=QuantFormat.QDQ, per_channel=False)
    qp = onnx.load(tmp_path / "q.onnx")
    assert act.op_type not in [n.op_type for n in qp.graph.node]  # removed by onnxruntime
    assert removed_activations(qp, fp) == {"a": (0.0, None) if act.op_type == "Relu" else (0.0, 6.0)}
    inits = {t.name: numpy_helper.to_array(t) for t in qp.graph.initializer}
    dq = {}
    for w in ("w1", "w2"):  # int8 symmetric per-tensor weights: (q - 0) * scale
        dq[w] = (inits[f"{w}_quantized"].astype(np.float32) * inits[f"{w}_scale"]).astype(np.float32)
    hi = 6.0 if act.op_type == "Clip" else np.inf
    expected = np.clip(x @ dq["w1"], 0.0, hi) @ dq["w2"]
    got = run(weights_only(qp, fp), {"x": x})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert (x @ dq["w1"] < 0).any() and (act.op_type == "Relu" or (x @ dq["w1"] > 6).any())


def test_split_of_onnxruntimes_digits_cnn_puts_most_noise_on_the_activations(corpus, tmp_path):
    """digits_cnn through quantize_static (QDQ, per-tensor): its Relus are gone. The weights-only figure
    equals the float model run with the file's dequantized weights (was -6 dB: '100 % weights'), and
    the two parts' noise powers add up to the whole within 1 dB."""
    from onnxruntime.quantization import QuantFormat, quantize_static

    folder = corpus / "digits_cnn"
    src = folder / "model_opset17.onnx"
    with np.load(folder / "calib.npz") as npz:
        x = npz["input"][:16]
    quantize_static(str(src), str(tmp_path / "q.onnx"), _Reader("input", x), quant_format=QuantFormat.QDQ)
    fm, qp = api.open_model(src), api.open_model(tmp_path / "q.onnx").proto
    assert "Relu" not in [n.op_type for n in qp.graph.node] and "Relu" in [n.op_type for n in fm.proto.graph.node]
    split = noise_split(fm, qp, str(folder / "eval.npz"), samples=16)
    # independently: the float model whose weights hold the file's dequantized values
    with np.load(folder / "eval.npz") as npz:
        rows = npz["input"][:16]
    fq = onnx.ModelProto()
    fq.CopyFrom(fm.proto)
    producer = {o: n for n in qp.graph.node for o in n.output}
    q_inits = {t.name: numpy_helper.to_array(t) for t in qp.graph.initializer}
    f_nodes = {n.name: n for n in fq.graph.node}
    f_inits = {t.name: t for t in fq.graph.initializer}
    for n in qp.graph.node:
        for i, name in enumerate(n.input):
            d = producer.get(name)
            if d is None or d.op_type != "DequantizeLinear" or d.input[0] not in q_inits or n.name not in f_nodes:
                continue
            q, s = q_inits[d.input[0]].astype(np.float64), q_inits[d.input[1]].astype(np.float64)
            z = q_inits[d.input[2]].astype(np.float64) if len(d.input) > 2 else 0.0
            shape = [-1] + [1] * (q.ndim - 1) if s.size > 1 else []
            value = ((q - np.reshape(z, shape)) * np.reshape(s, shape)).astype(np.float32)
            f_inits[f_nodes[n.name].input[i]].CopyFrom(numpy_helper.from_array(value, f_nodes[n.name].input[i]))
    ref, wq = run(fm.proto, {"input": rows})[0], run(fq, {"input": rows})[0]
    expected = 10 * math.log10(float(np.sum(ref.astype(np.float64) ** 2) / np.sum((ref - wq).astype(np.float64) ** 2)))
    assert split.weights_db == pytest.approx(expected, abs=0.01)
    summed = -10 * math.log10(10 ** (-split.weights_db / 10) + 10 ** (-split.activations_db / 10))
    assert abs(summed - split.all_db) < 1.0 and split.weights_share < 0.5


def qat_model(weight_via_cast: bool) -> tuple[onnx.ModelProto, np.ndarray, float, float]:
    """x -> Q/DQ (uint8) -> MatMul(DQ(Q(W))) -> y, W a Constant node (float16 through Cast when
    ``weight_via_cast``), as QAT exports and onnxruntime's files of Constant weights hold it."""
    w = RNG.normal(size=(6, 3)).astype(np.float32)
    sx, sw = 0.02, float(np.abs(w).max() / 127)
    const = numpy_helper.from_array(w.astype(np.float16) if weight_via_cast else w, "wc")
    nodes = [helper.make_node("Constant", [], ["w_const"], value=const)]
    if weight_via_cast:
        nodes.append(helper.make_node("Cast", ["w_const"], ["w_f"], to=TensorProto.FLOAT))
    w_in = "w_f" if weight_via_cast else "w_const"
    nodes += [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="xq"),
              helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"], name="xd"),
              helper.make_node("QuantizeLinear", [w_in, "sw", "zw"], ["wq"], name="wq"),
              helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["wd"], name="wd"),
              helper.make_node("MatMul", ["xd", "wd"], ["y"], name="mm")]
    inits = [numpy_helper.from_array(np.array(sx, np.float32), "sx"), numpy_helper.from_array(np.array(128, np.uint8), "zx"),
             numpy_helper.from_array(np.array(sw, np.float32), "sw"), numpy_helper.from_array(np.array(0, np.int8), "zw")]
    m = model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], inits)
    w_used = w.astype(np.float16).astype(np.float32) if weight_via_cast else w
    return m, w_used, sx, sw


@pytest.mark.parametrize("via_cast", [False, True])
def test_float_weights_through_q_dq_are_weights(via_cast):
    qp, w, sx, sw = qat_model(via_cast)
    x = RNG.normal(size=(10, 6)).astype(np.float32)
    assert has_qdq_pairs(qp)
    xd = fake_quant(x, sx, 128, 0, 255)
    wd = fake_quant(w, sw, 0, -128, 127)
    np.testing.assert_allclose(run(weights_only(qp), {"x": x})[0], x @ wd, rtol=1e-5, atol=1e-6)
    fp = onnx.ModelProto()
    fp.CopyFrom(qp)  # the float model is not needed: the file holds its own float weight
    a_model, unmatched = activations_only(qp, fp)
    assert unmatched == []
    np.testing.assert_allclose(run(a_model, {"x": x})[0], xd @ w, rtol=1e-5, atol=1e-6)


def test_has_qdq_pairs_on_onnxruntimes_ppocr_cls(corpus, tmp_path):
    """onnxruntime's QDQ file of ppocr_mobile_v2_cls holds its weights as Constant nodes through
    QuantizeLinear -> DequantizeLinear (lifted to initializers when opened): a QDQ model."""
    from onnxruntime.quantization import QuantFormat, quantize_static

    folder = corpus / "ppocr_mobile_v2_cls"
    with np.load(folder / "calib.npz") as npz:
        x = npz["x"][:2]
    quantize_static(str(folder / "model.onnx"), str(tmp_path / "q.onnx"), _Reader("x", x), quant_format=QuantFormat.QDQ)
    for qp in (onnx.load(tmp_path / "q.onnx"), api.open_model(tmp_path / "q.onnx").proto):
        assert has_qdq_pairs(qp)


def argmax_model(tmp_path, outputs: list[str]):
    w = RNG.normal(size=(4, 3)).astype(np.float32)
    types = {"h": TensorProto.FLOAT16, "k": TensorProto.INT64}
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul"),
               helper.make_node("ArgMax", ["y"], ["k"], name="argmax", axis=1),
               helper.make_node("Cast", ["y"], ["h"], name="cast", to=TensorProto.FLOAT16)],
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
              [helper.make_tensor_value_info(o, types[o], ["N", 3] if o == "h" else ["N", 1]) for o in outputs],
              [numpy_helper.from_array(w, "w")])
    onnx.save(m, tmp_path / "m.onnx")
    np.savez(tmp_path / "d.npz", x=RNG.normal(size=(16, 4)).astype(np.float32))
    fm = api.open_model(tmp_path / "m.onnx")
    return fm, api.quantize(fm, api.make_recipe("cpu-u8s8"), data=str(tmp_path / "d.npz")), str(tmp_path / "d.npz")


def test_integer_outputs_are_left_out(tmp_path):
    """float16 scores and int64 labels: the figures are those of the scores alone (the labels went into
    the sums); labels only: not measured (was '+inf dB, neither adds noise')."""
    fm, result, data = argmax_model(tmp_path, ["h", "k"])
    split = noise_split(fm, result.proto, data)
    only_h = onnx.ModelProto()
    only_h.CopyFrom(result.proto)
    f_only_h = onnx.ModelProto()
    f_only_h.CopyFrom(fm.proto)
    for m in (only_h, f_only_h):
        keep = [o for o in m.graph.output if o.name == "h"]
        del m.graph.output[:]
        m.graph.output.extend(keep)
    onnx.save(f_only_h, tmp_path / "h.onnx")
    alone = noise_split(api.open_model(tmp_path / "h.onnx"), only_h, data)
    assert (split.all_db, split.weights_db, split.activations_db) == (alone.all_db, alone.weights_db, alone.activations_db)
    assert math.isfinite(split.all_db)
    fm, result, data = argmax_model(tmp_path, ["k"])
    labels = noise_split(fm, result.proto, data)
    assert labels.samples == 0 and all(math.isnan(v) for v in (labels.all_db, labels.weights_db, labels.activations_db))
    assert labels.describe().startswith("not measured: the model has no float output")
    assert labels.to_json()["weights_share"] is None and labels.to_json()["all_db"] is None


def int_weight_model(q: np.ndarray, scale, zp: np.ndarray | None, dtype: int, axis: int | None = None):
    """x -> Q/DQ (uint8) -> MatMul(DQ(q)) -> y with the weight ``q`` stored as ``dtype``."""
    dq_in = ["wq", "sw"] + (["zw"] if zp is not None else [])
    attrs = {"axis": axis} if axis is not None else {}
    inits = [helper.make_tensor("wq", dtype, q.shape, q.ravel().tolist()),
             numpy_helper.from_array(np.asarray(scale, np.float32), "sw"),
             numpy_helper.from_array(np.array(0.05, np.float32), "sx"), numpy_helper.from_array(np.array(128, np.uint8), "zx")]
    if zp is not None:
        inits.append(helper.make_tensor("zw", dtype, zp.shape, zp.ravel().tolist()))
    return model([helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="xq"),
                  helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"], name="xd"),
                  helper.make_node("DequantizeLinear", dq_in, ["wd"], name="wd", **attrs),
                  helper.make_node("MatMul", ["xd", "wd"], ["y"], name="mm")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", q.shape[0]])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", q.shape[1]])], inits, opset=21)


def float_of(qp: onnx.ModelProto, w: np.ndarray) -> onnx.ModelProto:
    """The float model of ``int_weight_model``: x -> MatMul(w) -> y, node names as in ``qp``."""
    return model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", w.shape[0]])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", w.shape[1]])],
                 [numpy_helper.from_array(w, "w")], opset=21)


def test_int4_per_tensor_weight_is_matched_to_its_float_source():
    """An int4 per-tensor grid set by one outlier leaves the weight at ~6 dB SQNR (below the old 10 dB
    match), yet every element is within half a step: the float weight is its source."""
    w = RNG.normal(size=(64, 8)).astype(np.float32)
    w[0, 0] = 40.0
    scale = np.float32(40.0 / 7)
    q = np.clip(np.round(w / scale), -8, 7).astype(np.int8)
    dq = (q * scale).astype(np.float32)
    assert 10 * math.log10(float(np.sum(w.astype(np.float64) ** 2) / np.sum((w - dq).astype(np.float64) ** 2))) < 10
    qp = int_weight_model(q, scale, None, TensorProto.INT4)
    a_model, unmatched = activations_only(qp, float_of(qp, w))
    assert unmatched == []
    x = RNG.normal(size=(5, 64)).astype(np.float32)
    np.testing.assert_allclose(run(a_model, {"x": x})[0], fake_quant(x, 0.05, 128, 0, 255) @ w, rtol=1e-5, atol=1e-5)


def test_a_batchnorm_folded_weight_is_not_its_source():
    """The file quantized w * gamma (gamma 0.9 .. 1.1 per output channel, BatchNorm folded on its
    side only), per-channel int8: 24 dB from w (the old 10 dB match took it), most elements many
    steps away: w stays unmatched."""
    w = RNG.normal(size=(16, 8)).astype(np.float32)
    folded = w * np.linspace(0.9, 1.1, 8, dtype=np.float32)
    scale = (np.abs(folded).max(axis=0) / 127).astype(np.float32)
    q = np.clip(np.round(folded / scale), -128, 127).astype(np.int8)
    dq = (q * scale).astype(np.float32)
    assert 10 * math.log10(float(np.sum(w.astype(np.float64) ** 2) / np.sum((w - dq).astype(np.float64) ** 2))) > 10
    qp = int_weight_model(q, scale, np.zeros(8, np.int8), TensorProto.INT8, axis=1)
    _, unmatched = activations_only(qp, float_of(qp, w))
    assert unmatched == ["wd"]
    _, unmatched = activations_only(qp, float_of(qp, folded))
    assert unmatched == []


def test_activations_only_holds_no_float64_copy_of_a_weight(monkeypatch):
    """A 4 MiB per-channel int8 weight: numpy holds its float and dequantized values (2x) and slices,
    not whole-tensor float64 copies (7x)."""
    w = RNG.normal(size=(1024, 1024)).astype(np.float32)
    scale = (np.abs(w).max(axis=0) / 127).astype(np.float32)
    q = np.clip(np.round(w / scale), -128, 127).astype(np.int8)
    qp = int_weight_model(q, scale, np.zeros(1024, np.int8), TensorProto.INT8, axis=1)
    fp = float_of(qp, w)
    monkeypatch.setattr(weight_error, "SLICE_ELEMENTS", 1 << 14)
    tracemalloc.start()
    try:
        _, unmatched = activations_only(qp, fp)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert unmatched == [] and peak < 2.6 * w.nbytes
