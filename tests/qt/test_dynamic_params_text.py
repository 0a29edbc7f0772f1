"""The inspector's "Quantization parameters" of a dynamically quantized model say in words that the
activation's scale and zero point are computed at run time.

ddddocr_common_old_int8's Conv_0_quant read "activation input1_quantized: uint8 per_tensor; scale -;
zero_point - (scale and zero point computed at run time (DynamicQuantizeLinear))": dashes for values the file
does not hold, then the reason in nested brackets. The model is test_quant_block_boxes' onnxruntime dynamic
quantization of three Convs, named as ddddocr's.
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper
from test_quant_block_boxes import dynamic_model


def test_run_time_scales_read_in_words(qtbot, window, open_file, tmp_path):
    proto = dynamic_model()
    out = proto.graph.output[0]
    out.CopyFrom(helper.make_tensor_value_info(out.name, TensorProto.FLOAT, ["N", 2, "H", "W"]))  # checker: a shape
    path = tmp_path / "dyn.onnx"
    onnx.save(proto, str(path))
    open_file(window, path, timeout=60_000)
    window.focus_node("Conv_11_quant")
    box = window.inspector.quant_params
    qtbot.waitUntil(lambda: not box.isHidden())
    lines = box.label.text().splitlines()
    assert lines == [
        "Conv_11_quant:",
        "  input input1_q: uint8 per_tensor; scale and zero point computed at run time (DynamicQuantizeLinear)",
        "  weight w11_q: uint8 per_tensor; scale 0.01; zero_point 128",
    ], lines
