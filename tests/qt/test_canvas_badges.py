"""Q/DQ badges of folded pairs ("u8") are painted above the edges, also the dtype-coloured ones."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtGui import QColor

from workbench.qt.canvas import colors


def _qdq_chain():
    """conv -> Q -> DQ -> relu: one folded pair (uint8) on the edge conv -> relu."""
    inits = [numpy_helper.from_array(np.ones((2, 1, 1, 1), np.float32), "w"),
             numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.uint8), "zp")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("QuantizeLinear", ["c", "s", "zp"], ["c_q"], name="q"),
             helper.make_node("DequantizeLinear", ["c_q", "s", "zp"], ["c_dq"], name="dq"),
             helper.make_node("Relu", ["c_dq"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph)


def _near(a: QColor, b: QColor, tol: int = 6) -> bool:
    return max(abs(a.red() - b.red()), abs(a.green() - b.green()), abs(a.blue() - b.blue())) <= tol


def test_badge_is_not_struck_through_by_the_dtype_edge(qtbot, make_canvas):
    canvas = make_canvas(700, 500)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(_qdq_chain(), collapse_qdq=True)
    canvas.set_color_mode("dtype")
    assert canvas.edge_color(canvas.edge_index("conv", "relu")).name() == colors.dtype_color("uint8").name()
    [(point, text)] = canvas._state.data.badge_points
    assert text == "u8"
    canvas.resetTransform()
    canvas.scale(3.0, 3.0)
    canvas.centerOn(point)
    image = canvas.viewport().grab().toImage()
    # the pill is 13 scene units high from point.y - 6: its middle rows, left of the text, at the
    # edge's x (the pill's left edge is point.x - 12 and the text is centred): edge pen or fill?
    edge_pen = colors.dtype_color("uint8").darker(115)
    fill = colors.badge_color(text)
    assert not _near(edge_pen, fill)
    column = canvas.mapFromScene(point.x(), point.y()).x()
    rows = [canvas.mapFromScene(point.x(), point.y() + dy).y() for dy in (-5.0, -4.5, 5.5, 6.0)]
    pixels = [image.pixelColor(column, y) for y in rows]
    assert all(_near(p, fill) for p in pixels), [p.name() for p in pixels]
