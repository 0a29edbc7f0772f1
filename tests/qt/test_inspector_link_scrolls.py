"""A click on a tensor's name in the Inspector's Node section selects the node at its other end and
scrolls the panel to it: the new node's Node section at the top, the clicked tensor's row (where it shows
on that node) in view. The panel kept the scroll position of the node before: from one Conv's output to
the next Conv, both sections as long, the new node's title and the tensor's row were out of view."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _two_convs() -> onnx.ModelProto:
    """x -> Conv "first" -> c -> Conv "second" -> y (3x3 weights and biases, 4 channels)."""
    inits, nodes = [], []
    for name, src, out in (("first", "x", "c"), ("second", "c", "y")):
        inits += [numpy_helper.from_array(np.full((4, 4, 3, 3), 0.01, np.float32), f"{name}.w"),
                  numpy_helper.from_array(np.zeros(4, np.float32), f"{name}.b")]
        nodes.append(helper.make_node("Conv", [src, f"{name}.w", f"{name}.b"], [out], name=name, kernel_shape=[3, 3],
                                      pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1], group=1))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _row(box, section: str, key: str):
    return next(v for s, k, v in box.rows if (s, k) == (section, key))


def _in_view(inspector, widget) -> bool:
    """Whether ``widget`` (inside the Inspector's scrolled body) is wholly in the scroll area's viewport."""
    viewport = inspector.scroll.viewport()
    top = widget.mapTo(viewport, widget.rect().topLeft()).y()
    return top >= 0 and top + widget.height() <= viewport.height()


def test_a_tensor_link_scrolls_to_the_node_it_selects(qtbot, window, open_file, tmp_path):
    win = window
    path = tmp_path / "two_convs.onnx"
    onnx.save(_two_convs(), str(path))
    open_file(win, path, timeout=60_000)
    inspector, box = win.inspector, win.inspector.node_box
    inspector.scroll.setFixedHeight(200)  # shorter than a Conv's rows: the panel scrolls
    win.focus_node("first")
    bar = inspector.scroll.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 300)
    out = _row(box, "outputs", "Y")
    inspector.scroll.ensureWidgetVisible(out, 0, 0)  # the user scrolled down to the output
    assert _in_view(inspector, out) and not _in_view(inspector, box.toggle)
    assert "Click to select second." in out.toolTip()
    out.linkActivated.emit("0")
    assert inspector.nodes == ["second"]
    row = _row(box, "inputs", "X")  # the tensor clicked, as the second Conv's input
    qtbot.waitUntil(lambda: _in_view(inspector, row), timeout=2_000)
    assert _in_view(inspector, box.toggle) and box.toggle.text() == "Node: Conv"  # the section's title too
    assert "Click to select first." in row.toolTip()

    bar.setValue(bar.maximum())  # down to the recipe settings, then back through the input
    row.linkActivated.emit("0")
    assert inspector.nodes == ["first"]
    back = _row(box, "outputs", "Y")
    qtbot.waitUntil(lambda: _in_view(inspector, back), timeout=2_000)
