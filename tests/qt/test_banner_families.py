"""The banner of a model quantized elsewhere names every op family with quantized tensors around
it: onnxruntime's quantize_static of ppocrv4_rec said only 'QDQ: 38 Conv ..., 13 MatMul ...' though
its Mul, Add, Div, Sigmoid ... nodes also sit between Q/DQ pairs. Offscreen."""

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


def test_banner_lists_every_quantized_op_family(window, open_file, ppocr_ort_qdq):
    proto = onnx.load(ppocr_ort_qdq)
    ops = [n.op_type for n in proto.graph.node]
    open_file(window, ppocr_ort_qdq)
    text, tip = window.banner.text(), window.banner.toolTip()
    # every Add, Mul, Div ... of the model reads a DequantizeLinear: the counts are the op counts
    assert (ops.count("Add"), ops.count("Mul"), ops.count("Conv"), ops.count("Div")) == (107, 107, 38, 33)
    assert "quantized ops: 107 Add, 107 Mul, 38 Conv, 33 Div, 13 MatMul, 10 ReduceMean and 13 more" in text
    listed = tip.split("Ops with quantized tensors around them: ", 1)[1].split(", ")
    assert len(listed) == 19 and listed[:3] == ["Add 107", "Mul 107", "Conv 38"]
    # its Shape reads a DequantizeLinear output's shape, never its values: not a quantized op ("Shape 1" before)
    assert not any(x.startswith(("Shape ", "Size ")) for x in listed)
    assert "Sigmoid 7" in listed and "Concat 1" in listed and not any(x.startswith(("Constant", "Quantize", "Dequantize"))
                                                                     for x in listed)
