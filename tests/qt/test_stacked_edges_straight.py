"""An edge between stacked nodes with nothing between them runs straight down, also across an empty row.

In the diff panes (positions without routes) an edge spanning more than a row bowed sideways, so as not to run
hidden through the boxes of the rows it skips; where the quantized file fused a float op (onnxruntime's QDQ
export of digits_cnn: its Relus fused into the Convs' Q/DQ) the quantized pane leaves that row empty, and each
Conv -> next-op edge bowed about 130 px to the right around nothing. An edge with a box in its way still bows
(pytest-qt, offscreen)."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

pytest.importorskip("PySide6")

from PySide6.QtGui import QPainterPath  # noqa: E402

from workbench.qt.canvas.scene_data import ARROW, NODE_W, edge_curve  # noqa: E402

Y = 90.0  # the layout's row spacing (workbench.core.graph.layout.Y_SPACING)


def _model(names_ops: list[tuple[str, str, list[str]]]) -> onnx.ModelProto:
    nodes = [helper.make_node(op, ins, [name], name=name) for name, op, ins in names_ops]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(names_ops[-1][0], TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _open(qtbot, make_canvas, proto, positions):
    view = make_canvas(600, 600, groups=False)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(proto, positions=positions)
    return view


def _edge_width(view, a: str, b: str) -> float:
    """Width (scene px) of the path drawn for edge ``a`` -> ``b``, its arrow head included."""
    data = view._state.data
    ia, ib = data.index[a], data.index[b]
    for tile in data.edge_tiles:
        for xa, ya, xb, yb, route in tile.segments:
            if (xa, ya, xb, yb) == (data.anchors[0][ia], data.anchors[2][ia], data.anchors[0][ib], data.anchors[1][ib]):
                path = QPainterPath()
                edge_curve(path, xa, ya, xb, yb, route, tile.bow)
                return path.boundingRect().width()
    raise AssertionError(f"no edge {a} -> {b}")


def test_an_edge_across_an_empty_row_runs_straight(qtbot, make_canvas):
    proto = _model([("conv", "Relu", ["x"]), ("pool", "Relu", ["conv"])])
    view = _open(qtbot, make_canvas, proto, {"conv": (0.0, 0.0), "pool": (0.0, 2 * Y)})  # the fused row empty
    assert _edge_width(view, "conv", "pool") <= 2 * ARROW + 1  # bowed about 130 px right before
    straight = view._state.data.straight_edges.boundingRect()
    assert straight.width() <= 1  # the zoomed-out form too


def test_an_edge_with_a_box_in_its_way_still_bows(qtbot, make_canvas):
    proto = _model([("a", "Relu", ["x"]), ("m", "Relu", ["a"]), ("c", "Add", ["a", "m"])])
    view = _open(qtbot, make_canvas, proto, {"a": (0.0, 0.0), "m": (0.0, Y), "c": (0.0, 2 * Y)})
    assert _edge_width(view, "a", "c") > NODE_W / 2  # around m's box, not through it
    assert _edge_width(view, "a", "m") <= 2 * ARROW + 1


def test_ends_a_pixel_or_two_apart_count_as_stacked(qtbot, make_canvas):
    proto = _model([("conv", "Relu", ["x"]), ("pool", "Relu", ["conv"])])
    view = _open(qtbot, make_canvas, proto, {"conv": (131.1, 0.0), "pool": (129.4, 2 * Y)})  # as a layout drifts
    assert _edge_width(view, "conv", "pool") <= 2 * ARROW + 3
