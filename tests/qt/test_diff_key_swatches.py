"""The diff tab's colour key draws each colour as an outlined box: a square glyph in Constant's #eeeeee
(or "no value"'s #d9d9d9) was all but invisible on the window colour (pytest-qt, offscreen)."""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest

pytest.importorskip("PySide6")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from PySide6.QtGui import QImage  # noqa: E402

from workbench.qt.diff_panes import pane_key_html  # noqa: E402


def _model():
    c = numpy_helper.from_array(np.ones((1, 4), np.float32), "c")
    nodes = [helper.make_node("Constant", [], ["k"], name="const", value=c),
             helper.make_node("Add", ["x", "k"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_pane_key_swatches_are_outlined(qtbot, make_canvas):
    view = make_canvas(600, 400, groups=False)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(_model())
    key = pane_key_html("Left", view)
    assert key.startswith("<b>Left</b> colour: op type: ")
    images = [QImage.fromData(base64.b64decode(d)) for d in re.findall(r'src="data:image/png;base64,([^"]+)"', key)]
    assert len(images) == 2  # Add, Constant
    fills = {img.pixelColor(img.width() // 2, img.height() // 2).name() for img in images}
    assert fills == {view.op_colors()[op].name() for op in ("Add", "Constant")}
    for img in images:  # a dark grey edge round every box, the near-white one too
        assert img.pixelColor(0, img.height() // 2).lightness() < 130
        assert img.pixelColor(img.width() // 2, 0).lightness() < 130
