"""The dtype legend explains only what the view draws: a one-node file quantized elsewhere (a lone MatMulInteger)
has no group, so no group title and no collapsed box, yet the live legend read "group title: the quantized kernels
inside (dtypes activation/weight); a collapsed group's box is coloured by their activation dtype". The note is now
there only where a group says what it holds; a file with groups keeps it."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from test_quant_block_boxes import _open, dynamic_model

from workbench.core.inspection.quant_summary import summarize_quantization
from workbench.qt.canvas.legend import GROUP_KERNELS_NOTE, legend_entries


def _one_node() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.arange(12, dtype=np.int8).reshape(4, 3), "w")
    node = helper.make_node("MatMulInteger", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "one", [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 3])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _group_notes(canvas, **options) -> list[str]:
    return [n for n in legend_entries(canvas, **options)[2] if "group" in n]


def test_a_one_node_graph_has_no_group_note(qtbot, make_canvas):
    proto = _one_node()
    canvas = make_canvas(1000, 700)
    _open(qtbot, canvas, proto, compute=summarize_quantization(proto).compute)
    assert len(canvas._state.data.group_ids) == 0  # nothing to title
    title, rows, notes = legend_entries(canvas)
    assert title == "dtype in the file"
    assert "INT: integer kernel (or a QDQ unit fused into one)" in notes  # the file's kernel is explained
    assert _group_notes(canvas) == []
    assert _group_notes(canvas, picture=True) == []
    canvas.legend_overlay.refresh()
    assert "group" not in canvas.legend_overlay.label.text()


def test_a_graph_with_groups_keeps_the_group_note(qtbot, make_canvas):
    proto = dynamic_model()
    canvas = make_canvas(1200, 900)
    _open(qtbot, canvas, proto, compute=summarize_quantization(proto).compute)
    assert _group_notes(canvas) == [GROUP_KERNELS_NOTE]
