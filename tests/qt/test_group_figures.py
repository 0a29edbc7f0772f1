"""Group boxes in the dtype colour mode count quantized dtypes only: int64 / int32 shape and index
math (Shape, Gather, Unsqueeze, Concat) is not "quantized"."""

from __future__ import annotations

from workbench.core.api import build_hierarchy
from workbench.qt.canvas import colors
from workbench.qt.canvas.group_figures import group_figures, is_quantized_dtype


def test_shape_math_is_not_counted_as_quantized():
    names = ["blk/q", "blk/conv", "blk/shape", "blk/unsq", "blk/concat",  # a ConvInteger-like unit with shape ops
             "shp/shape", "shp/gather", "shp/unsq", "shp/concat",  # int64 only
             "f8/q", "f8/mm", "f8/out"]
    keys = ["uint8", "uint8", "int64", "int64", "int32",
            "int64", "int64", "int64", "int32",
            "float8e4m3fn", "float8e4m3fn", "float"]
    h = build_hierarchy(names, ["Op"] * len(names))
    assert h.titles == ["blk", "shp", "f8"]
    fills, texts = group_figures(h, [0, 1, 2], "dtype", keys)
    # were "100% quantized" (blk: any non-float dtype counted), an int64-red "100% quantized" box
    # and "0% quantized" for float8 (its name starts with "float")
    assert texts == {0: "40% quantized", 1: "0% quantized", 2: "67% quantized"}
    assert fills[0] == fills[1] == colors.dtype_color("float")
    assert fills[2] == colors.dtype_color("float8e4m3fn")


def test_quantized_dtype_names():
    assert [is_quantized_dtype(k) for k in ("u8", "int8", "uint16", "int4", "f8e5m2", "float8e4m3fn")] == [True] * 6
    assert [is_quantized_dtype(k) for k in ("int64", "int32", "bool", "float", "float16", "bfloat16", None)] == \
        [False] * 7


def test_a_files_groups_name_their_kernels():
    """A model quantized elsewhere (``compute`` given): the kernels inside by name and dtypes, a box holding
    one filled with its activation dtype; a group without one says "float" (not "0% quantized")."""
    names = ["a/dql", "a/conv", "a/mul", "b/q", "b/conv", "b/mm", "b/conv2", "c/lstm", "c/mul", "c/add",
             "d/shape", "d/gather", "d/cast"]
    ops = ["DynamicQuantizeLinear", "ConvInteger", "Mul", "QuantizeLinear", "Conv", "MatMul", "Conv",
           "DynamicQuantizeLSTM", "Mul", "Add", "Shape", "Gather", "Cast"]
    keys = ["uint8", "uint8", "float", "uint8", "uint8", "uint8", "uint8", "uint8", "float", "float",
            "int64", "int64", "float"]
    compute = {1: "uint8/uint8", 4: "uint8/int8", 5: "uint8/uint8", 6: "uint8/int8", 7: "uint8/int8"}
    kernels = {1: "ConvInteger", 4: "QDQ -> QLinearConv", 5: "QDQ -> QLinearMatMul", 6: "QDQ -> QLinearConv"}
    h = build_hierarchy(names, ops)
    fills, texts = group_figures(h, [0, 1, 2, 3], "dtype", keys, ops=ops, compute=compute, kernels=kernels)
    assert texts == {0: "ConvInteger u8/u8", 1: "2 QLinearConv u8/i8, 1 QLinearMatMul u8/u8", 2: "LSTM u8/i8",
                     3: "float"}  # were "50% quantized", "100% quantized", "33% quantized", "0% quantized"
    assert fills[0] == fills[1] == fills[2] == colors.dtype_color("uint8") and fills[3] == colors.dtype_color("float")


def test_element_wise_kernels_are_named_in_a_files_groups():
    """nudenet_320n quantized: a block's QLinearSigmoid / QLinearMul kernels (onnxruntime fuses them, the
    INT marks show them) were missing from its box, and a Concat group holding only QLinearConcat read
    "0% quantized"."""
    names = ["m2/conv", "m2/sig", "m2/mul", "m2/conv2", "m2/sig2", "m2/mul2", "cat/concat", "cat/concat2", "cat/shape"]
    ops = ["Conv", "Sigmoid", "Mul", "Conv", "Sigmoid", "Mul", "Concat", "Concat", "Shape"]
    keys = ["uint8"] * 8 + ["int64"]
    compute = {0: "uint8/int8", 3: "uint8/int8"}
    kernels = {0: "QDQ -> QLinearConv", 1: "QDQ -> QLinearSigmoid", 2: "QDQ -> QLinearMul", 3: "QDQ -> QLinearConv",
               4: "QDQ -> QLinearSigmoid", 5: "QDQ -> QLinearMul", 6: "QDQ -> QLinearConcat", 7: "QDQ -> QLinearConcat"}
    h = build_hierarchy(names, ops)
    fills, texts = group_figures(h, [0, 1], "dtype", keys, ops=ops, compute=compute, kernels=kernels)
    assert texts == {0: "2 QLinearConv u8/i8, 4 element-wise", 1: "2 QLinearConcat u8"}
    assert fills[0] == fills[1] == colors.dtype_color("uint8")


def _own_noise_keys(names: list[str], local: dict) -> list:
    """Each node's value as the app colours the canvas by own noise (``canvas_local``: +inf at the Errors
    bars' INF_SQNR_DB, -inf at its negative; float nodes have none)."""
    from workbench.qt.error_rank import canvas_local
    from workbench.qt.error_view import INF_SQNR_DB

    values = canvas_local(local, INF_SQNR_DB)
    return [values.get(n) for n in names]


def test_groups_and_nodes_without_noise_say_so():
    """"own noise" colour mode: a block whose units add no noise of their own (local SQNR +inf, drawn at
    100 dB) read "worst 100.0 dB", a figure nothing measured; it says "no noise" now (and "all noise" for
    -inf), a block with a finite worst keeps its figure."""
    names = ["pool/mp", "pool/reshape", "pool/flatten", "conv/conv", "conv/mp", "conv/reshape", "bad/mul",
             "bad/add", "bad/sub", "flt/relu", "flt/exp", "flt/log"]
    local = {"pool/mp": "inf", "pool/reshape": "inf", "pool/flatten": "inf", "conv/conv": 23.456, "conv/mp": "inf",
             "bad/mul": "-inf", "bad/add": 3.0, "flt/relu": None}
    keys = _own_noise_keys(names, local)
    h = build_hierarchy(names, ["Op"] * len(names))
    assert h.titles == ["pool", "conv", "bad", "flt"]
    fills, texts = group_figures(h, [0, 1, 2, 3], "error", keys)
    assert texts == {0: "no noise", 1: "worst 23.5 dB", 2: "worst: all noise", 3: "no value"}
    assert fills[0] == colors.error_color(float("inf")) and fills[2] == colors.error_color(-100.0)


def test_node_tooltip_says_no_noise(qtbot, make_canvas):
    from onnx import TensorProto, helper

    from workbench.qt.error_rank import LOCAL_LABEL, LOCAL_NOTES

    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r0"), helper.make_node("Relu", ["a"], ["y"], name="r1")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    canvas = make_canvas(600, 400)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(helper.make_model(graph))
    keys = _own_noise_keys(["r0", "r1"], {"r0": "inf", "r1": 31.25})
    canvas.set_node_values(errors={"r0": keys[0], "r1": keys[1]}, error_label=LOCAL_LABEL, error_notes=LOCAL_NOTES)
    canvas.set_color_mode("error")
    assert "Own noise, local SQNR: no noise" in canvas.tooltip_text("r0")  # was "100.0 dB"
    assert "Own noise, local SQNR: 31.2 dB" in canvas.tooltip_text("r1")
