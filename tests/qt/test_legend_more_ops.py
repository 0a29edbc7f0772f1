"""The op-type legend lists every op type on request: past the 14 most frequent it ended in "... 6 more
op types", which nothing could open, so those nodes' colours had no entry. That line is now a click
that lists them (again: hides them), and its tooltip lists them too (pytest-qt, offscreen)."""

from __future__ import annotations

import base64
import re

import pytest

pytest.importorskip("PySide6")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from workbench.qt.canvas.legend import MAX_OPS  # noqa: E402

#: 20 op types, the first one most frequent and so on (Relu x20, Sigmoid x19, ...)
OPS = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Softsign", "Sqrt", "Floor", "Ceil", "Sin", "Cos",
       "Softplus", "Erf", "Reciprocal", "Round", "Sign", "Identity", "HardSwish", "Elu"]


def many_ops_model() -> onnx.ModelProto:
    nodes, prev = [], "x"
    for k, op in enumerate(OPS):
        for i in range(len(OPS) - k):
            out = f"{op}_{i}"
            nodes.append(helper.make_node(op, [prev], [out], name=out))
            prev = out
    graph = helper.make_graph(nodes, "ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def open_many_ops(window, open_file, folder):
    """:func:`many_ops_model` saved in ``folder`` and opened in ``window`` at 1024x700: its canvas and legend."""
    path = folder / "ops.onnx"
    onnx.save(many_ops_model(), path)
    window.resize(1024, 700)
    open_file(window, path)
    return window.canvas, window.canvas.legend_overlay


def swatches(rich: str) -> set[str]:
    """The colours of a legend's rich text swatches (#rrggbb): the centre pixel of each inline PNG."""
    from PySide6.QtGui import QImage

    found = set()
    for data in re.findall(r'src="data:image/png;base64,([^"]+)"', rich):
        image = QImage.fromData(base64.b64decode(data))
        found.add(image.pixelColor(image.width() // 2, image.height() // 2).name())
    return found


def test_every_op_colour_has_a_legend_entry_after_a_click(qtbot, make_canvas):
    view = make_canvas(1000, 900, groups=False)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(many_ops_model())
    drawn = {view.node_color(n).name() for n in view.node_names()}  # rare op types may share one
    legend = view.legend_overlay
    hidden = len(OPS) - MAX_OPS
    lines = legend.text().splitlines()
    assert lines[0] == "op type" and lines[1:MAX_OPS + 1] == [f"{op} ({len(OPS) - k})" for k, op in enumerate(OPS[:MAX_OPS])]
    assert lines[-1] == f"\u25b8 {hidden} more op types (click to list)"
    assert legend.more.isVisible()
    shown = swatches(legend.label.text())
    assert len(shown) == MAX_OPS and drawn - shown  # colours without an entry
    # the tooltip of the "more" line lists the rest: with it, every colour drawn has an entry
    assert shown | swatches(legend.more.toolTip()) == drawn
    assert all(f"{op} ({len(OPS) - k})" in legend.more.toolTip() for k, op in enumerate(OPS) if k >= MAX_OPS)

    qtbot.mouseClick(legend.more, Qt.MouseButton.LeftButton)  # a real click on the line
    assert swatches(legend.label.text()) == drawn
    assert legend.text().splitlines()[1:] == [f"{op} ({len(OPS) - k})" for k, op in enumerate(OPS)] + [
        f"\u25be hide the {hidden} less frequent op types"]
    assert view.selected_nodes() == []  # the click was the legend's
    # drawn, not clipped to the old size (the rows in two columns of 10)
    assert legend.label.height() > legend.more.height() * (len(OPS) // 2 - 1)
    assert legend.label.height() >= legend.label.heightForWidth(legend.label.width())

    qtbot.mouseClick(legend.more, Qt.MouseButton.LeftButton)
    assert swatches(legend.label.text()) == shown

    legend.set_collapsed(True)  # a collapsed legend is its title alone
    assert not legend.more.isVisible()
    legend.set_collapsed(False)
    view.set_color_mode("dtype")  # other modes name every colour already: no such line
    assert not legend.more.isVisible()
