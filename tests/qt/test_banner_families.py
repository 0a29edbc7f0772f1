"""The banner of a model quantized elsewhere names the op families onnxruntime runs on quantized data:
onnxruntime's quantize_static of ppocrv4_rec said only 'QDQ: 38 Conv ..., 13 MatMul ...' though its Add,
Mul, Sigmoid ... run as integer kernels too; then it listed every op between Q/DQ pairs, the float Div and
ReduceMean included. Offscreen."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

pytest.importorskip("PySide6")


@pytest.fixture
def ppocr_ort_qdq(corpus, tmp_path):
    """onnxruntime's quantize_static (QDQ, uint8 activations) of ppocrv4_rec, 2 calibration rows."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    folder = corpus / "ppocrv4_rec"
    rows = np.load(folder / "calib.npz")
    name = onnx.load(folder / "model.onnx", load_external_data=False).graph.input[0].name
    data = rows[rows.files[0]]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{name: data[i:i + 1].astype(np.float32)} for i in range(2)])

        def get_next(self):
            return next(self.feeds, None)

    out = tmp_path / "ppocrv4_rec.ort_qdq.onnx"
    quantize_static(str(folder / "model.onnx"), str(out), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return out


def test_banner_lists_the_op_families_run_on_quantized_data(window, open_file, ppocr_ort_qdq):
    """Expected from onnxruntime 1.32's optimized graph of this file (ORT_ENABLE_EXTENDED): its QLinearAdd,
    QLinearMul, QLinearConv, QLinearMatMul, QLinearSigmoid, QLinearSoftmax, QLinearGlobalAveragePool,
    QLinearAveragePool, QLinearConcat nodes and the Transpose, Squeeze, Reshape, Slice nodes that read
    uint8 tensors. Its 33 Div and 10 ReduceMean read DequantizeLinear outputs but run in float (no kernel)."""
    proto = onnx.load(ppocr_ort_qdq)
    ops = [n.op_type for n in proto.graph.node]
    open_file(window, ppocr_ort_qdq)
    text, tip = window.banner.text(), window.banner.toolTip()
    assert (ops.count("Add"), ops.count("Mul"), ops.count("Div"), ops.count("ReduceMean")) == (107, 107, 33, 10)
    assert "quantized ops: 107 Add, 107 Mul, 38 Conv, 13 MatMul, 9 Transpose, 7 Sigmoid and 7 more" in text
    listed = tip.split("Ops onnxruntime runs on quantized data: ", 1)[1].split(", ")
    assert listed == ["Add 107", "Mul 107", "Conv 38", "MatMul 13", "Transpose 9", "Sigmoid 7", "Squeeze 7",
                      "Reshape 6", "Slice 6", "Softmax 3", "GlobalAveragePool 2", "AveragePool 1", "Concat 1"]
