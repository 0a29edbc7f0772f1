"""The dtype legend of an already-quantized file lists the colours drawn (no folded weight / bias
DequantizeLinear's int8 / int32) and explains the node tag pills ("in:u8 w:i8 b:i32": the bias has its own "b:"
kind, it was "w:i32" beside the weight's "w:i8")."""

from __future__ import annotations

import onnx
import pytest

from workbench.qt.canvas.items import EDGE_COLOR


@pytest.fixture
def qdq_file(example_qdq_file):
    """Our QDQ export (cpu-u8s8) of the bundled digits_cnn example."""
    return example_qdq_file


def test_dtype_legend_lists_what_is_drawn(window, open_file, qdq_file):
    win = window
    open_file(win, qdq_file)
    canvas = win.canvas
    assert canvas.color_mode() == "dtype"
    drawn = {canvas.node_color(n).name() for n in canvas.node_names()}
    drawn |= {canvas.edge_color(e).name() for e in range(canvas.edge_count())} - {EDGE_COLOR.name()}
    legend = {c.name(): label for label, c in canvas.legend()}
    # it listed int8 and int32 (the folded weight / bias DequantizeLinear nodes) and "not assigned"
    assert set(legend) == drawn and sorted(legend.values()) == ["float", "uint8"]
    structure = canvas._state.data.structure
    tags = {structure.names[i]: (structure.op_types[i], t) for i, t in structure.node_tags.items()}
    proto = onnx.load(str(qdq_file))
    int32 = {t.name for t in proto.graph.initializer if t.data_type == onnx.TensorProto.INT32}
    bias_dq = {n.output[0] for n in proto.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in int32}
    # each Conv / Gemm: its int8 weight "w:i8", its int32 bias "b:i32"; the first Conv also its input pair
    assert sorted(tags.values()) == [("Conv", "in:u8 w:i8 b:i32"), ("Conv", "w:i8 b:i32"), ("Conv", "w:i8 b:i32"),
                                     ("Gemm", "w:i8 b:i32")]
    assert sorted(n.name for n in proto.graph.node if bias_dq & set(n.input)) == sorted(tags)  # the readers of the 4 biases
    text = canvas.legend_overlay.text().splitlines()
    assert "node tag: folded Q/DQ of its graph input (in:), weight (w:), bias (b:)" in text


def test_ops_that_share_a_colour_share_a_legend_row(qtbot, window, open_file, tmp_path):
    """Add, Mul and Div were drawn in one colour and listed in one legend row; they now get colours
    of their own (``colors.op_palette``), one row each, and every row's colour is distinct."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from workbench.qt.canvas import colors

    c = numpy_helper.from_array(np.float32(2.0).reshape(()), "c")
    nodes = [helper.make_node("Add", ["x", "c"], ["a"], name="add"), helper.make_node("Mul", ["a", "c"], ["m"], name="mul"),
             helper.make_node("Div", ["m", "c"], ["d"], name="div"), helper.make_node("Relu", ["d"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [c])
    path = tmp_path / "ew.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    open_file(window, path)
    rows = window.canvas.legend()
    palette = window.canvas.op_colors()
    assert sorted(label for label, _ in rows) == ["Add", "Div", "Mul", "Relu"]
    assert all(col.name() == palette[label].name() for label, col in rows)
    assert palette["Add"].name() == colors.SLOTS["green"] and palette["Mul"].name() == colors.SLOTS["lime"]
    assert len({col.name() for _, col in rows}) == len(rows)
