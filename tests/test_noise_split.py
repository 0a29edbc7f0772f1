"""Weights vs activations: the QDQ model with only its weights / only its activations quantized."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from workbench.core import api
from workbench.core.analysis.noise_split import activations_only, noise_split, weights_only

B1 = np.array([0.25, -0.5, 0.125, 0.0], np.float32)


def conv_mlp(w1: np.ndarray, w2: np.ndarray, b1: np.ndarray = B1) -> onnx.ModelProto:
    """x [N,3,8,8] -> Conv(w1, b1) -> Relu -> GlobalAveragePool -> Flatten -> MatMul(w2) -> y [N,5]."""
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
         helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
         helper.make_node("MatMul", ["f", "w2"], ["y"], name="matmul")],
        "conv_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def quantized(tmp_path, w1, w2, b1=B1):
    path = tmp_path / "m.onnx"
    onnx.save(conv_mlp(w1, w2, b1), path)
    x = np.random.default_rng(1).normal(size=(24, 3, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    model = api.open_model(path)
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(tmp_path / "calib.npz"))
    return model, result, tmp_path / "calib.npz", x


def ops(proto):
    return [n.op_type for n in proto.graph.node]


def run(proto, x, optimize=False):
    so = ort.SessionOptions()
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.fixture
def general(tmp_path):
    rng = np.random.default_rng(0)
    return quantized(tmp_path, rng.normal(size=(4, 3, 3, 3)).astype(np.float32),
                     rng.normal(size=(4, 5)).astype(np.float32))


def test_weights_only_equals_the_float_model_with_dequantized_weights(general):
    model, result, _, x = general
    qp = result.proto
    w_model = weights_only(qp)
    assert "QuantizeLinear" not in ops(w_model)
    const_dq = [n for n in qp.graph.node if n.op_type == "DequantizeLinear"
                and n.input[0] in {t.name for t in qp.graph.initializer}]
    assert ops(w_model).count("DequantizeLinear") == len(const_dq) == 3  # w1, b1 (int32), w2
    # expected, independently: the float model whose w1, b1, w2 hold onnx.reference's DequantizeLinear values
    inits = {t.name: t for t in qp.graph.initializer}
    readers = {x: (n.name, i) for n in qp.graph.node for i, x in enumerate(n.input)}
    f_nodes = {n.name: n for n in model.proto.graph.node}
    expected = onnx.ModelProto()
    expected.CopyFrom(model.proto)
    for dq in const_dq:
        one = helper.make_model(helper.make_graph(
            [dq], "dq", [], [helper.make_empty_tensor_value_info(dq.output[0])],
            [inits[x] for x in dq.input if x]), opset_imports=[helper.make_opsetid("", 21)])
        value = ReferenceEvaluator(one).run(None, {})[0]
        node, i = readers[dq.output[0]]
        name = f_nodes[node].input[i]
        t = next(t for t in expected.graph.initializer if t.name == name)
        t.CopyFrom(numpy_helper.from_array(value.astype(np.float32), name))
    np.testing.assert_allclose(run(w_model, x), run(expected, x), rtol=1e-5, atol=1e-6)


def test_activations_only_reads_the_float_weights_and_keeps_every_activation_pair(general):
    model, result, _, x = general
    qp = result.proto
    a_model, unmatched = activations_only(qp, model.proto)
    assert unmatched == []
    consts = {t.name for t in a_model.graph.initializer}
    assert not [n for n in a_model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in consts]
    assert ops(a_model).count("QuantizeLinear") == ops(qp).count("QuantizeLinear") > 0
    floats = {t.name: numpy_helper.to_array(t) for t in model.proto.graph.initializer}
    read = {n.input[0]: numpy_helper.to_array(next(t for t in a_model.graph.initializer if t.name == n.input[0]))
            for n in a_model.graph.node if n.op_type == "Identity" and n.input[0] in consts}
    assert len(read) == 3 and all(np.array_equal(v, floats[k.removesuffix("#float")]) for k, v in read.items())


def test_weights_on_the_int8_grid_add_no_noise(tmp_path):
    """Symmetric per-channel int8 weights that are multiples of 2^-7 with a full-scale entry per
    channel, and a zero bias, dequantize exactly: weights-only SQNR is +inf and activations-only
    equals as written. (With the bias above, its int32 grid of input scale x weight scale alone
    gives 94.6 dB.)"""
    rng = np.random.default_rng(3)
    w1 = rng.integers(-127, 128, size=(4, 3, 3, 3)).astype(np.float32)
    w1[:, 0, 0, 0] = 127
    w2 = rng.integers(-127, 128, size=(4, 5)).astype(np.float32)
    w2[0, :] = 127
    model, result, calib, _ = quantized(tmp_path, w1 / 128, w2 / 128, np.zeros(4, np.float32))
    split = noise_split(result.float_model or model, result.proto, str(calib))
    assert split.samples == 16  # of 24: SPLIT_SAMPLES by default
    assert split.weights_db == math.inf and split.weights_share == 0.0
    assert split.activations_db == split.all_db and 20 < split.all_db < 80


def test_noise_split_on_the_corpus_matches_its_own_parts(corpus):
    """digits_transformer: the as-written figure equals evaluate's on the unfused graph, and the two
    parts' noise powers add up to the whole within 1 dB (independent sources)."""
    folder = corpus / "digits_transformer"
    model = api.open_model(folder / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(folder / "calib.npz"), samples=16)
    split = noise_split(result.float_model or model, result.proto, str(folder / "eval.npz"), samples=16)
    assert split.samples == 16 and split.unmatched == []
    summed = -10 * math.log10(10 ** (-split.weights_db / 10) + 10 ** (-split.activations_db / 10))
    assert abs(summed - split.all_db) < 1.0
    assert split.weights_db > split.all_db and split.activations_db > split.all_db - 1.0


def test_analyze_prints_the_split(corpus, capsys):
    from workbench.cli import main

    folder = corpus / "digits_cnn"
    args = ["analyze", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--samples", "16",
            "--eval", str(folder / "eval.npz"), "--eval-samples", "16", "--no-auto", "--top", "0", "--no-latency-check"]
    assert main(args) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("weights vs activations"))
    model = api.open_model(folder / "model_opset17.onnx")
    # both without the latency check: its probes of digits_cnn's first Conv and AveragePool are measured, and
    # two measurements on a loaded machine can keep different units float
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(folder / "calib.npz"), samples=16,
                          latency_check=False)
    split = noise_split(result.float_model or model, result.proto, str(folder / "eval.npz"), samples=16)
    assert line == f"weights vs activations (on 16 samples; output SQNR, graph as written): {split.describe()}"
    assert "% of the output noise comes from the weights" in line


def test_a_float_weight_that_is_not_the_dequantized_ones_source_is_not_substituted(general):
    """A QDQ file made from a differently prepared float model (here w2 scaled 3x, as a BatchNorm
    folded on one side only would) keeps that weight quantized and names it."""
    model, result, _, _ = general
    fp = onnx.ModelProto()
    fp.CopyFrom(model.proto)
    w2 = next(t for t in fp.graph.initializer if t.name == "w2")
    w2.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w2) * 3, "w2"))
    a_model, unmatched = activations_only(result.proto, fp)
    producer = {o: n for n in result.proto.graph.node for o in n.output}
    matmul = next(n for n in result.proto.graph.node if n.name == "matmul")
    assert unmatched == [matmul.input[1]] and producer[matmul.input[1]].op_type == "DequantizeLinear"
    kept = [n for n in a_model.graph.node if n.op_type == "DequantizeLinear"
            and n.input[0] in {t.name for t in a_model.graph.initializer}]
    assert [n.output[0] for n in kept] == [matmul.input[1]]


class _Reader:
    """onnxruntime's CalibrationDataReader protocol over rows of one input."""

    def __init__(self, name: str, x: np.ndarray):
        self.it = iter([{name: x[i:i + 1]} for i in range(len(x))])

    def get_next(self):
        return next(self.it, None)


def test_compare_splits_onnxruntimes_qdq_file_and_says_why_not_for_qoperator(corpus, tmp_path, capsys):
    """A file quantized by another tool (onnxruntime's quantize_static): every constant is matched to
    its float weight, and the printed split is the one noise_split gives on the same rows."""
    from onnxruntime.quantization import QuantFormat, quantize_static

    from workbench.cli import main

    folder = corpus / "digits_cnn"
    src = folder / "model_opset17.onnx"
    with np.load(folder / "calib.npz") as npz:
        x = npz["input"][:8]
    qdq, qop = tmp_path / "ort_qdq.onnx", tmp_path / "ort_qop.onnx"
    quantize_static(str(src), str(qdq), _Reader("input", x), quant_format=QuantFormat.QDQ, per_channel=True)
    quantize_static(str(src), str(qop), _Reader("input", x), quant_format=QuantFormat.QOperator)
    data = str(folder / "eval.npz")
    split = noise_split(api.open_model(src), api.open_model(qdq).proto, data, samples=8)
    assert split.unmatched == [] and split.samples == 8 and math.isfinite(split.weights_db)
    capsys.readouterr()
    assert main(["compare", str(src), str(qdq), "--data", data, "--samples", "8"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"weights vs activations (on 8 samples; output SQNR, graph as written): {split.describe()}" in out
    assert main(["compare", str(src), str(qop), "--data", data, "--samples", "8"]) == 0
    assert ("weights vs activations: not measured (the quantized file is QOperator: integer kernels such as "
            "QLinearConv hold both weights and activations, so neither can be taken out)") \
        in capsys.readouterr().out.splitlines()


def test_weights_left_on_disk_are_read_memory_mapped(tmp_path, monkeypatch):
    """A model whose weights stay in its external data file (>= 512 MiB in real use): the split and
    the weight figures read them memory-mapped (numpy_helper refused their absolute paths: a traceback
    from analyze, compare, report and the app's Calibrate)."""
    from workbench.core.analysis.weight_error import weight_errors
    from workbench.core.io import external
    from workbench.core.model import shapes

    rng = np.random.default_rng(5)
    proto = conv_mlp(rng.normal(size=(64, 3, 3, 3)).astype(np.float32), rng.normal(size=(64, 5)).astype(np.float32),
                     np.zeros(64, np.float32))
    onnx.save(proto, tmp_path / "m.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
              location="m.data", size_threshold=0)
    x = rng.normal(size=(8, 3, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    monkeypatch.setattr(external, "LAZY_MODEL_BYTES", 0)
    monkeypatch.setattr(external, "LAZY_TENSOR_BYTES", 1024)  # w1 (6912 B) and w2 (1280 B) stay on disk
    monkeypatch.setattr(shapes, "_SKELETON_BYTES", 1024)  # and are left out of the checker, as large ones are
    model = api.open_model(tmp_path / "m.onnx")
    assert external.has_lazy(model.proto)
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(tmp_path / "calib.npz"))
    split = noise_split(result.float_model or model, result.proto, str(tmp_path / "calib.npz"))
    assert split.unmatched == [] and math.isfinite(split.weights_db) and math.isfinite(split.activations_db)
    assert {e.node for e in weight_errors(result.plan, model.proto, result.proto)} == {"conv", "matmul"}


def test_non_finite_model_outputs_are_left_out(tmp_path):
    """A float output holding -inf (Log of zeros) made every figure nan; they are left out, as evaluate does."""
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul"),
         helper.make_node("Relu", ["y"], ["r"], name="relu"),
         helper.make_node("Log", ["r"], ["l"], name="log")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("l", TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(np.random.default_rng(6).normal(size=(4, 3)).astype(np.float32), "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "m.onnx")
    np.savez(tmp_path / "d.npz", x=np.random.default_rng(7).normal(size=(16, 4)).astype(np.float32))
    model = api.open_model(tmp_path / "m.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(tmp_path / "d.npz"))
    split = noise_split(result.float_model or model, result.proto, str(tmp_path / "d.npz"))
    assert all(math.isfinite(v) or v == math.inf for v in (split.all_db, split.weights_db, split.activations_db))
    assert not math.isnan(split.weights_share)
