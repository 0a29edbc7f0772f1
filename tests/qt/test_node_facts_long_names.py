"""The inspector's Node section wraps a long dotted tensor name instead of cutting the row at the panel's edge.

In a 1024 x 700 window, nudenet_320n's /model.22/cv3.1/cv3.1.1/conv/Conv showed its weight as
"model.22.cv3.1.1.conv.we" and "weight float32 [64, 64, 3," with the rest of both lines past the panel's
right edge: a name without a space or slash ("model.22.cv3.1.1.conv.weight") had no place to break, so the
row's table was laid out wider than its label and clipped. Dots and underscores are now places to break.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WEIGHT = "model.22.cv3.1.1.conv.weight"
NODE = "model.22.cv3.1.1.conv.Conv_with_a_long_name"


def _model() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones((64, 64, 3, 3), np.float32), WEIGHT)
    b = numpy_helper.from_array(np.zeros(64, np.float32), "model.22.cv3.1.1.conv.bias")
    conv = helper.make_node("Conv", ["x", WEIGHT, b.name], ["model.22.cv3.1.1.conv.output_tensor_0"], name=NODE,
                            kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    relu = helper.make_node("Relu", [conv.output[0]], ["y"], name="relu")
    graph = helper.make_graph([conv, relu], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 8, 8])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _overflow(label) -> int:
    """How many px the label's longest unbreakable run needs past its width (0 when it fits): the label
    accepts any width (minimum 1 px), so a row wider than the panel is clipped at its right edge."""
    return max(0, label.minimumSizeHint().width() - label.width())


def test_long_dotted_names_wrap_inside_the_panel(qtbot, window, open_file, tmp_path):
    win = window
    win.resize(1024, 700)
    path = tmp_path / "m.onnx"
    onnx.save(_model(), str(path))
    open_file(win, path, timeout=60_000)
    win.focus_node(NODE)
    box = win.inspector.node_box
    qtbot.waitUntil(lambda: not box.isHidden())
    qtbot.wait(50)
    assert box.body.width() < 320  # the panel is narrow here: the test means something
    cut = {key: _overflow(label) for _s, key, label in box.rows}
    assert all(px == 0 for px in cut.values()), cut  # the name and Y rows overflowed by 70 and 21 px before
    # what is read back (copy, tests) has no break marks in it
    assert ("W", f"{WEIGHT} weight float32 [64, 64, 3, 3], 36864 values (144.0 KiB)") in box.shown("inputs")
    assert ("name", NODE) in box.shown("node")
