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
