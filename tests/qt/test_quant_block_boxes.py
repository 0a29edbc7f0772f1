"""Collapsed flat-name blocks of a model quantized elsewhere are told apart and say what they hold
(pytest-qt, offscreen).

ddddocr_common_old_int8 (onnxruntime dynamic quantization) opened with boxes that all read alike:
"Conv_1…d_node", "Conv_1…d_node", "Conv_1…d_node" (titles such as "Conv_11_quant – 407_quantized_node"
elided in the middle; the last name was the Cast quantizing the NEXT Conv's bias, since each block also held
the DynamicQuantizeLinear chain of the next Conv), and "13 nodes · 8% quantized" (1 of 13 nodes is the
integer kernel). A block now starts with its own Conv's chain, its title is cut at the end, and its second
line names the kernel inside.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("PySide6")

from workbench.core.inspection.quant_summary import summarize_quantization  # noqa: E402
from workbench.qt.quant_tab import quant_info  # noqa: E402

UNITS = ((11, 405), (13, 408), (16, 411))  # (Conv number, the number in its tensor names), as ddddocr's


def _unit(x: str, k: int, t: int) -> list[onnx.NodeProto]:
    """onnxruntime's dynamic quantization of Conv_k in ddddocr's node order and names; returns output o{k}."""
    h = helper.make_node
    return [
        h("DynamicQuantizeLinear", [x], [f"{x}_q", f"{x}_s", f"{x}_z"], name=f"{x}_QuantizeLinear"),
        h("Mul", [f"{x}_s", f"w{k}_scale"], [f"{t}_scale"], name=f"{t}_scale_node"),
        h("Div", [f"b{k}", f"{t}_scale"], [f"{t}_tmp"], name=f"{t}_tmp_qaunt"),
        h("Floor", [f"{t}_tmp"], [f"{t}_rounded"], name=f"{t}_quant_rounded"),
        h("Cast", [f"{t}_rounded"], [f"{t}_quantized"], name=f"{t}_quantized_node", to=TensorProto.INT32),
        h("ConvInteger", [f"{x}_q", f"w{k}_q", f"{x}_z", f"w{k}_z"], [f"ci{k}"], name=f"Conv_{k}_quant"),
        h("Reshape", [f"{t}_quantized", "bshape"], [f"{t}_r"], name=f"{t}_quantizedreshape"),
        h("Add", [f"ci{k}", f"{t}_r"], [f"{t}_ba"], name=f"{t}_quantizedbias_add"),
        h("Cast", [f"{t}_ba"], [f"{t}_bc"], name=f"{t}_bias_add_cast", to=TensorProto.FLOAT),
        h("Mul", [f"{x}_s", f"w{k}_scale"], [f"{k}_sm"], name=f"Conv_{k}_quant_scales_mul"),
        h("Mul", [f"{t}_bc", f"{k}_sm"], [f"c{k}"], name=f"Conv_{k}_quant_output_scale_mul"),
        h("Sigmoid", [f"c{k}"], [f"s{k}"], name=f"Sigmoid_{k + 1}"),
        h("Mul", [f"c{k}", f"s{k}"], [f"o{k}"], name=f"Mul_{k + 2}"),
    ]


def dynamic_model() -> onnx.ModelProto:
    nodes, inits, x = [], [numpy_helper.from_array(np.array([1, 2, 1, 1], np.int64), "bshape")], "input1"
    rng = np.random.default_rng(0)
    for k, t in UNITS:
        nodes += _unit(x, k, t)
        inits += [numpy_helper.from_array(rng.integers(0, 255, (2, 2, 3, 3)).astype(np.uint8), f"w{k}_q"),
                  numpy_helper.from_array(np.array(128, np.uint8), f"w{k}_z"),
                  numpy_helper.from_array(np.array(0.01, np.float32), f"w{k}_scale"),
                  numpy_helper.from_array(np.array([0.1, -0.2], np.float32), f"b{k}")]
        x = f"o{k}"
    graph = helper.make_graph(nodes, "dyn", [helper.make_tensor_value_info("input1", TensorProto.FLOAT, [1, 2, 8, 8])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def boxes(canvas) -> list[tuple[str, str]]:
    """(title, second line) drawn on each collapsed box, top to bottom."""
    d = canvas._state.data
    rows = [(d.gy0[k], k) for k, g in enumerate(d.group_ids) if g in d.placement.collapsed]
    return [canvas._groups_item.box_texts(d.group_ids[k], d.gx1[k] - d.gx0[k]) for _, k in sorted(rows)]


def _open(qtbot, canvas, proto, **quant) -> None:
    summary = summarize_quantization(proto)
    canvas.set_quant_info(*quant_info(summary, [], proto), **quant)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(proto, collapse_qdq=True, depth=0)
    canvas.set_node_values(dtypes=summary.node_dtypes)
    canvas.set_color_mode("dtype")


def test_neighbouring_boxes_read_apart_and_name_their_kernel(qtbot, make_canvas):
    proto = dynamic_model()
    canvas = make_canvas(1200, 900)
    _open(qtbot, canvas, proto, compute=summarize_quantization(proto).compute)
    shown = boxes(canvas)
    titles = [t for t, _ in shown]
    assert len(titles) == 3 and len(set(titles)) == 3  # was "Conv_1…d_node" three times
    for (k, _), title in zip(UNITS, titles, strict=True):
        assert title.startswith(f"Conv_{k}_quant")
    # each box is one unit: 13 nodes, the kernel it holds (was "13 nodes · 8% quantized"; the first box 18 nodes); the
    # line whole, as the boxes are as wide as their titles need (it read "13 · ConvInteger u8/u8" in 240 wide boxes)
    assert [info for _, info in shown] == ["13 nodes \u00b7 ConvInteger u8/u8"] * 3
    assert canvas._state.data.hierarchy.titles == ["Conv_11_quant \u2013 Mul_13", "Conv_13_quant \u2013 Mul_15",
                                                   "Conv_16_quant \u2013 Mul_18"]


def test_without_the_files_kernels_boxes_keep_the_fraction_quantized(qtbot, make_canvas):
    """The Exported tab (the app's own file) keeps "% quantized", the figure the Graph tab's recipe shows."""
    canvas = make_canvas(1200, 900)
    _open(qtbot, canvas, dynamic_model())
    assert [info for _, info in boxes(canvas)] == ["13 nodes \u00b7 8% quantized"] * 3


@pytest.mark.parametrize("rename", ["repeated", "empty"])
def test_boxes_of_kernels_without_a_name_of_their_own_name_them(qtbot, make_canvas, rename):
    """The canvas keys a node with an empty or repeated name "<op_type>#<index>"; the file's summary keyed its
    kernels by name, so two ConvInteger named "conv" were one entry and the second and third boxes read
    "13 nodes · float", and unnamed nodes gave every box "13 nodes"."""
    proto = dynamic_model()
    for n in proto.graph.node:
        if rename == "empty":
            n.name = ""
        elif n.op_type == "ConvInteger":
            n.name = "conv"
    canvas = make_canvas(1200, 900)
    _open(qtbot, canvas, proto, compute=summarize_quantization(proto).compute)
    whole, short = "13 nodes \u00b7 ConvInteger u8/u8", "13 \u00b7 ConvInteger u8/u8"
    # boxes titled "ConvInteger#18 – Mul_15" are wider than "conv – Mul_13" (240): their line is whole
    assert [info for _, info in boxes(canvas)] == ([short, whole, whole] if rename == "repeated" else [whole] * 3)
