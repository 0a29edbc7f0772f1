"""The inspector's "Quantization parameters" of a QOperator file list the int32 bias of a QLinearConv / QGemm.

onnxruntime's QOperator quantize_static of a Conv (bias) -> Gemm (bias) -> MatMul model: QLinearConv's input B and
QGemm's input C are int32 with no scale input of their own, and the section listed the input, weight and output of
each but not the bias. It now lists it between the weight and the output, its scale input_scale * weight_scale
(the two scales the file stores), zero point 0.
"""

from __future__ import annotations

import onnx
from onnx import numpy_helper
from quant_bias_models import quantized_model


def test_qlinearconv_and_qgemm_list_their_bias(qtbot, window, open_file, tmp_path):
    path = quantized_model(tmp_path, "QOperator")
    proto = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    open_file(window, path, timeout=60_000)
    box = window.inspector.quant_params
    for node in (n for n in proto.graph.node if n.op_type in ("QLinearConv", "QGemm")):
        x_scale, w_scale, bias = node.input[1], node.input[4], node.input[8 if node.op_type == "QLinearConv" else 6]
        window.focus_node(node.name)
        qtbot.waitUntil(lambda name=node.name: box.label.text().startswith(f"{name}:"))
        lines = box.label.text().splitlines()
        assert [line.split(" ", 3)[2] for line in lines[1:]] == [  # role of each tensor
            "input", "weight", "bias", "output"], lines
        scale = float(inits[x_scale] * inits[w_scale])
        assert lines[3] == (f"  bias {bias}: int32 per_tensor; scale {scale:.6g}; zero_point 0 (scale = input scale "
                            f"{x_scale} * weight scale {w_scale}, not stored in the file)"), lines
