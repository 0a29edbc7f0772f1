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
