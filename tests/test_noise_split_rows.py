"""The noise split on a QDQ file whose batch is fixed at 1 (a QONNX round trip, or any model exported
with a static batch) beside a float model of any batch: it runs row by row instead of ending in an
onnxruntime traceback, and a model onnxruntime cannot run on the data is a one-line ModelError."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.analysis.noise_split import noise_split
from workbench.core.errors import ModelError

W = np.random.default_rng(21).normal(size=(4, 3)).astype(np.float32)
X = np.random.default_rng(22).normal(size=(4, 4)).astype(np.float32)
XS, YS, WS = np.float32(0.03), np.float32(0.05), np.float32(0.02)


def _model(nodes, batch, inits) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def float_model() -> onnx.ModelProto:
    return _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "N", [numpy_helper.from_array(W, "w")])


def qdq_model(batch=1) -> onnx.ModelProto:
    """x -> Q/DQ (scale XS, int8) -> MatMul(DQ(int8 w, scale WS)) -> Q/DQ (scale YS) -> y, batch fixed."""
    wq = np.clip(np.round(W / WS), -127, 127).astype(np.int8)
    inits = [numpy_helper.from_array(wq, "w_q"), numpy_helper.from_array(np.array(WS), "w_s"),
             numpy_helper.from_array(np.array(XS), "x_s"), numpy_helper.from_array(np.array(YS), "y_s"),
             numpy_helper.from_array(np.array(0, np.int8), "zp")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "zp"], ["x_q"], name="x_quant"),
             helper.make_node("DequantizeLinear", ["x_q", "x_s", "zp"], ["x_dq"], name="x_dequant"),
             helper.make_node("DequantizeLinear", ["w_q", "w_s"], ["w_dq"], name="w_dequant"),
             helper.make_node("MatMul", ["x_dq", "w_dq"], ["y_pre"], name="mm"),
             helper.make_node("QuantizeLinear", ["y_pre", "y_s", "zp"], ["y_q"], name="y_quant"),
             helper.make_node("DequantizeLinear", ["y_q", "y_s", "zp"], ["y"], name="y_dequant")]
    return _model(nodes, batch, inits)


def fake_quant(x: np.ndarray, scale: np.float32) -> np.ndarray:
    return (np.clip(np.round(x / scale), -128, 127) * scale).astype(np.float32)


def sqnr(ref: np.ndarray, out: np.ndarray) -> float:
    ref, out = ref.astype(np.float64), out.astype(np.float64)
    return 10 * math.log10(np.sum(ref ** 2) / np.sum((ref - out) ** 2))


@pytest.fixture
def float_file(tmp_path):
    onnx.save(float_model(), tmp_path / "f.onnx")
    np.savez(tmp_path / "d.npz", x=X)
    return api.open_model(tmp_path / "f.onnx"), str(tmp_path / "d.npz")


def test_a_qdq_file_with_a_batch_of_one_runs_row_by_row(float_file):
    """4 rows in one batch: the figures are onnxruntime's row by row (as written) and numpy's (parts)."""
    model, data = float_file
    qp = qdq_model()
    split = noise_split(model, qp, data)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(qp.SerializeToString(), so, providers=["CPUExecutionProvider"])
    as_written = np.concatenate([sess.run(None, {"x": X[i:i + 1]})[0] for i in range(4)])
    ref = X @ W
    w_dq = np.clip(np.round(W / WS), -127, 127).astype(np.float32) * WS
    assert split.samples == 4
    assert split.all_db == pytest.approx(sqnr(ref, as_written), abs=1e-4)
    assert split.weights_db == pytest.approx(sqnr(ref, X @ w_dq), abs=1e-3)
    assert split.activations_db == pytest.approx(sqnr(ref, fake_quant(fake_quant(X, XS) @ W, YS)), abs=1e-3)


def test_a_model_onnxruntime_cannot_run_on_the_data_is_a_one_line_model_error(float_file):
    """A QDQ file with its batch fixed at 3 fed the 4 rows (not a multiple of 3): a ModelError naming the
    model and the shapes."""
    model, data = float_file
    with pytest.raises(ModelError) as err:
        noise_split(model, qdq_model(batch=3), data)
    text = str(err.value)
    assert "\n" not in text and "Traceback" not in text
    assert text.startswith("onnxruntime cannot run the quantized model of f.onnx on the data (x [4, 4]):")
    assert text.endswith("or leave the weights vs activations split out (--split-samples 0).")
