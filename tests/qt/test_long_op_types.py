"""A node box shows a long op type whole, in a smaller font, instead of eliding it.

onnxruntime's QOperator digits_cnn (quantize_static, QuantFormat.QOperator) drew its QLinearAveragePool as
"QLinear…agePool", which is also what QLinearGlobalAveragePool was cut to; ddddocr_common_old_int8's
DynamicQuantizeLinear read "Dynamic…eLinear". The op type is now drawn whole, down to OP_MIN_PT; only a
name too long even then is elided.
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper
from PySide6.QtGui import QFont, QFontMetricsF, QTransform

from workbench.qt.canvas.items import OP_MIN_PT, NodeItem, _Fonts
from workbench.qt.canvas.scene_data import NODE_W

LONG = ["QLinearAveragePool", "QLinearGlobalAveragePool", "DynamicQuantizeLinear", "MatMulIntegerToFloat"]


def _chain(ops: list[str]) -> onnx.ModelProto:
    nodes, prev = [], "x"
    for k, op in enumerate(ops):
        nodes.append(helper.make_node(op, [prev], [f"t{k}"], name=f"n{k}", domain="com.microsoft"))
        prev = f"t{k}"
    graph = helper.make_graph(nodes, "long_ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


class _Recorder:
    """Stands in for the QPainter a NodeItem paints with at view scale 1: records the texts and fonts."""

    def __init__(self):
        self.texts: list[tuple[str, QFont]] = []
        self.font = QFont()

    def worldTransform(self):
        return QTransform()

    def setFont(self, font):
        self.font = QFont(font)

    def drawText(self, _rect, _flags, text):
        self.texts.append((text, self.font))

    def __getattr__(self, _name):  # pens, brushes, boxes: not looked at
        return lambda *args, **kwargs: None


def test_long_op_types_are_drawn_whole_and_told_apart(qtbot, make_canvas):
    canvas = make_canvas(900, 700)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(_chain(["Conv"] + LONG))
    op_size = _Fonts.op.pointSizeF()
    drawn = {}
    for i, item in canvas._items.items():
        painter = _Recorder()
        NodeItem.paint(item, painter, None)
        text, font = painter.texts[0]  # the op type comes first
        drawn[canvas._state.data.structure.op_types[i]] = (text, font)
    assert set(drawn) == {"Conv", *LONG}
    assert drawn["Conv"][0] == "Conv" and drawn["Conv"][1].pointSizeF() == op_size
    for op in LONG:
        text, font = drawn[op]
        assert text == op, (op, text)  # was "QLinear…agePool" for both pools, "Dynamic…eLinear"
        assert OP_MIN_PT <= font.pointSizeF() < op_size and font.bold()
        assert QFontMetricsF(font).horizontalAdvance(text) <= NODE_W - 10
        larger = QFont(font)
        larger.setPointSizeF(font.pointSizeF() + 0.5)  # the largest 0.5 pt step that fits
        assert QFontMetricsF(larger).horizontalAdvance(op) > NODE_W - 10


def test_an_op_type_too_long_even_small_is_elided_to_the_box(qtbot):
    _Fonts.ensure()
    op = "SimplifiedLayerNormalizationWithSkip"
    text, font = _Fonts.op_label(op)
    assert font.pointSizeF() == OP_MIN_PT
    assert text != op and "\u2026" in text and text.startswith("Simpl")
    assert QFontMetricsF(font).horizontalAdvance(text) <= NODE_W - 10
