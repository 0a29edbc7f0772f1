"""The dtype colour mode paints shape and index math (int64 Shape -> Gather -> Concat -> Reshape chains,
int32 indices, bool masks) in calm greys: int64 had no colour of its own and hashed to a bright red (hue
358), which read as an error on every shape chain of an exported model. The legend lists those dtypes in
the colours drawn and says what they are."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.qt.canvas import colors
from workbench.qt.canvas.legend import legend_entries

#: hues (degrees) that read as an error or a warning: red, orange, yellow
WARNING_HUES = [(0, 70), (330, 360)]


def _warning_hue(c) -> bool:
    h = c.hsvHue()
    return c.hsvSaturation() > 60 and any(lo <= h <= hi for lo, hi in WARNING_HUES)


def test_index_dtypes_are_calm_greys_and_no_dtype_falls_on_a_warning_colour():
    for name in ("int64", "int32", "uint32", "uint64", "bool", "double", "float64"):
        c = colors.dtype_color(name)
        assert c.hsvSaturation() <= 60 and c.lightness() >= 140, (name, c.name())
    assert colors.dtype_color("int64") != colors.dtype_color("float")  # told apart from float on the canvas
    # a dtype without a colour of its own takes a stable hue, never red / orange / yellow
    for name in ("string", "complex64", "float4e2m1", "float8e4m3fnuz", "float8e5m2fnuz", "uint2", "int2"):
        assert not _warning_hue(colors.dtype_color(name)), (name, colors.dtype_color(name).name())


def _qdq_with_shape_chain() -> onnx.ModelProto:
    """DQ(x) -> Conv (DQ weight) -> Q/DQ -> Reshape whose shape is Shape -> Gather -> Unsqueeze -> Concat (int64)."""
    u8, i8 = TensorProto.UINT8, TensorProto.INT8
    inits = [
        numpy_helper.from_array(np.ones((4, 2, 1, 1), np.int8), "wq"),
        numpy_helper.from_array(np.array(0.1, np.float32), "s"),
        helper.make_tensor("z8", u8, [], [128]),
        helper.make_tensor("zw", i8, [], [0]),
        numpy_helper.from_array(np.array(0, np.int64), "i0"),
        numpy_helper.from_array(np.array([0], np.int64), "ax"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z8"], ["xq"], name="qx"),
        helper.make_node("DequantizeLinear", ["xq", "s", "z8"], ["xd"], name="dqx"),
        helper.make_node("DequantizeLinear", ["wq", "s", "zw"], ["w"], name="dqw"),
        helper.make_node("Conv", ["xd", "w"], ["c"], name="conv"),
        helper.make_node("QuantizeLinear", ["c", "s", "z8"], ["cq"], name="qc"),
        helper.make_node("DequantizeLinear", ["cq", "s", "z8"], ["cd"], name="dqc"),
        helper.make_node("Shape", ["cd"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "i0"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "ax"], ["n1"], name="unsqueeze"),
        helper.make_node("Concat", ["n1", "minus1"], ["new_shape"], name="concat", axis=0),
        helper.make_node("Reshape", ["cd", "new_shape"], ["y"], name="reshape"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m, full_check=True)
    return m


def test_shape_chain_of_a_quantized_file_is_grey_and_the_legend_says_so(window, open_file, tmp_path):
    path = tmp_path / "shape_chain.qdq.onnx"
    onnx.save(_qdq_with_shape_chain(), path)
    open_file(window, path)
    canvas = window.canvas
    assert canvas.color_mode() == "dtype"
    grey = colors.dtype_color("int64")
    for name in ("shape", "gather", "unsqueeze"):  # int64 values: shape math
        assert canvas.node_color(name) == grey and not _warning_hue(canvas.node_color(name)), name
    assert not _warning_hue(canvas.node_color("concat"))
    title, rows, notes = legend_entries(canvas)
    legend = dict(rows)
    assert legend["int64"] == grey  # the row is the colour drawn
    assert "int64: shapes, indices, masks (greys; not quantized)" in notes
    drawn = {canvas.node_color(n).name() for n in canvas.node_names()}
    assert drawn <= {c.name() for c in legend.values()}  # every node colour has a legend row


def test_int32_is_not_called_unquantized():
    """In a quantized file int32 edges are biases and integer accumulators: the legend's "not quantized" note
    named int32 with int64 (shape math)."""
    from types import SimpleNamespace

    rows = [
        ("uint8", colors.dtype_color("uint8")),
        ("int32", colors.dtype_color("int32")),
        ("int64", colors.dtype_color("int64")),
    ]
    canvas = SimpleNamespace(
        color_mode=lambda: "dtype",
        _state=None,
        legend=lambda: rows,
        edge_colour_keys=lambda: [],
        float_nodes=set,
    )
    _title, _rows, notes = legend_entries(canvas)
    assert "int64: shapes, indices, masks (greys; not quantized)" in notes
    assert "int32: quantized biases and integer accumulators, or indices (grey)" in notes
