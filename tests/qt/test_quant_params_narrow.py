"""The inspector's "Quantization parameters" of an already-quantized model fit a 1024 x 700 window's panel.

onnxruntime's QDQ digits_cnn (quantize_static) at 1024 x 700, /f/f.0/Conv selected: the group's title read
"Quantization parameters (read from the mod", its lines "weight onnx::Conv_32_quantized: in" and "zero_po",
the panel scrolled sideways and the recipe note under it was cut too: the monospace label could not wrap inside
"onnx::Conv_32_quantized:" or "Relu_output_0_QuantizeLinear_Output:". Names now wrap at their dots,
underscores, colons and slashes (zero-width marks, left out of what is read back and copied).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics, QGuiApplication, QTextDocument
from PySide6.QtWidgets import QLabel

X, W, OUT = "input_QuantizeLinear_Output", "onnx::Conv_32_quantized", "/f/f.2/Relu_output_0_QuantizeLinear_Output"


def _ort_like_qdq() -> onnx.ModelProto:
    """x -> Q/DQ -> Conv (weight DQ) -> Q/DQ -> Relu -> y, tensors named as onnxruntime's QDQ digits_cnn."""
    inits = [numpy_helper.from_array(np.array(0.00392157, np.float32), "input_scale"),
             numpy_helper.from_array(np.array(-128, np.int8), "input_zero_point"),
             numpy_helper.from_array(np.ones((16, 1, 3, 3), np.int8), W),
             numpy_helper.from_array(np.array(0.0182857, np.float32), "onnx::Conv_32_scale"),
             numpy_helper.from_array(np.array(0, np.int8), "onnx::Conv_32_zero_point"),
             numpy_helper.from_array(np.array(0.0158237, np.float32), "relu_scale"),
             numpy_helper.from_array(np.array(-128, np.int8), "relu_zero_point")]
    h = helper.make_node
    nodes = [h("QuantizeLinear", ["input", "input_scale", "input_zero_point"], [X], name="input_QuantizeLinear"),
             h("DequantizeLinear", [X, "input_scale", "input_zero_point"], ["xd"], name="input_DequantizeLinear"),
             h("DequantizeLinear", [W, "onnx::Conv_32_scale", "onnx::Conv_32_zero_point"], ["wd"], name="w_dq"),
             h("Conv", ["xd", "wd"], ["c"], name="/features/features.0/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             h("QuantizeLinear", ["c", "relu_scale", "relu_zero_point"], [OUT], name="c_q"),
             h("DequantizeLinear", [OUT, "relu_scale", "relu_zero_point"], ["cd"], name="c_dq"),
             h("Relu", ["cd"], ["y"], name="/f/f.2/Relu")]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_parameters_wrap_inside_a_narrow_inspector(qtbot, window, open_file, tmp_path):
    win = window
    win.resize(1024, 700)
    path = tmp_path / "cnn_QDQ.onnx"
    onnx.save(_ort_like_qdq(), str(path))
    open_file(win, path, timeout=60_000)
    win.focus_node("/features/features.0/Conv")
    box = win.inspector.quant_params
    qtbot.waitUntil(lambda: not box.isHidden())
    qtbot.wait(100)
    scroll = win.inspector.scroll
    assert scroll.viewport().width() <= 330  # narrow: the test means something
    assert box.minimumSizeHint().width() <= scroll.viewport().width()  # was about 470 px
    assert scroll.horizontalScrollBar().maximum() == 0  # the panel does not scroll sideways
    assert box.title() == "Quantization parameters"
    assert QFontMetrics(box.font()).horizontalAdvance(box.title()) + 24 <= box.width()  # the title is not cut
    lines = box.label.text().splitlines()  # read back without the break marks
    assert lines[1] == f"  input {X}: int8 per_tensor; scale 0.00392157; zero_point -128"
    assert lines[2] == f"  weight {W}: int8 per_tensor; scale 0.0182857; zero_point 0"
    # what the user copies from it is the text, without the marks
    for label, name in ((box.label, W), (_name_row(win), "/features/features.0/Conv")):  # Node rows wrap too
        shown = QTextDocument()
        shown.setHtml(QLabel.text(label)) if label.textFormat() == Qt.TextFormat.RichText else shown.setPlainText(
            QLabel.text(label))
        label.setSelection(0, len(shown.toPlainText()))
        assert "\u200b" in label.selectedText()  # the marks are in the label ...
        QGuiApplication.clipboard().setText(label.selectedText())  # what Ctrl+C on the selection does
        copied = QGuiApplication.clipboard().text()
        assert name in copied and "\u200b" not in copied  # ... not in the copy



def _name_row(win) -> QLabel:
    return next(label for _s, key, label in win.inspector.node_box.rows if key == "name")
