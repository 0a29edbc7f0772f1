"""A collapsed group holding only weight-only MatMulNBits (accuracy_level unset: float math on a uint4 weight) is
filled with the dtype it holds, uint4, as its nodes are: it was filled float-white, so a fully 4-bit model looked
unquantized once collapsed. At accuracy_level 4 the same group is filled int8, the activation onnxruntime computes
with. Offscreen."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("PySide6")

from workbench.core.api import build_hierarchy  # noqa: E402
from workbench.core.inspection.quant_summary import summarize_quantization  # noqa: E402
from workbench.qt.canvas import colors  # noqa: E402
from workbench.qt.canvas.group_figures import group_figures, held_dtype  # noqa: E402
from workbench.qt.quant_tab import quant_info  # noqa: E402

K = N = BLOCK = 32


def nbits_chain(level: int | None, units: int = 6):
    """``units`` chained MatMulNBits ``blk<i // 3>/mm<i>`` (4 bits, K = N = 32, one block) at ``accuracy_level``
    ``level`` (None: unset)."""
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    attrs = {"K": K, "N": N, "bits": 4, "block_size": BLOCK} | ({} if level is None else {"accuracy_level": level})
    for i in range(units):
        inits += [numpy_helper.from_array(rng.integers(0, 255, (N, 1, BLOCK // 2), dtype=np.uint8), f"w{i}"),
                  numpy_helper.from_array(rng.uniform(0.01, 0.05, N).astype(np.float32), f"s{i}")]
        nodes.append(helper.make_node("MatMulNBits", [x, f"w{i}", f"s{i}"], [f"y{i}"], name=f"blk{i // 3}/mm{i}",
                                      domain="com.microsoft", **attrs))
        x = f"y{i}"
    g = helper.make_graph(nodes, "nbits", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, K])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [4, N])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])


def test_held_dtype():
    assert held_dtype("float/uint4", None) == "uint4"  # weight-only: the weight it holds
    assert held_dtype("float/uint4", "MatMulNBits") == "int8"  # accuracy_level 4: computes on int8
    assert held_dtype("uint8/int8", "QDQ -> QLinearConv") == "uint8"


@pytest.mark.parametrize("level, fill, text", [(None, "uint4", "3 MatMulNBits float/u4"),
                                               (4, "int8", "3 MatMulNBits i8/u4")])
def test_collapsed_group_of_matmul_nbits_is_filled_by_what_it_holds(qtbot, make_canvas, level, fill, text):
    proto = nbits_chain(level)
    summary = summarize_quantization(proto)
    assert summary.compute == {f"blk{i // 3}/mm{i}": "float/uint4" for i in range(6)}
    assert bool(summary.kernels) == (level == 4)
    names, ops = [n.name for n in proto.graph.node], [n.op_type for n in proto.graph.node]
    compute = {i: summary.compute[n] for i, n in enumerate(names)}
    kernels = {i: summary.kernels[n] for i, n in enumerate(names) if n in summary.kernels}
    keys = [summary.node_dtypes[n] for n in names]
    assert keys == ["uint4"] * 6  # the nodes are filled uint4
    h = build_hierarchy(names, ops)
    fills, texts = group_figures(h, [0, 1], "dtype", keys, ops=ops, compute=compute, kernels=kernels)
    assert texts == {0: text, 1: text}
    assert fills[0] == fills[1] == colors.dtype_color(fill)  # was colors.dtype_color("float") without a kernel
    assert colors.dtype_color(fill) != colors.dtype_color("float")
    canvas = make_canvas(1000, 800)  # the same on the canvas, collapsed
    canvas.set_quant_info(*quant_info(summary, [], proto), compute=summary.compute)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(proto, collapse_qdq=True, depth=0)
    canvas.set_node_values(dtypes=summary.node_dtypes)
    canvas.set_color_mode("dtype")
    d = canvas._state.data
    shown = [g for g in d.group_ids if g in d.placement.collapsed]
    assert len(shown) == 2
    assert all(canvas._state.group_fills[g] == colors.dtype_color(fill) for g in shown)
    assert all(canvas._state.group_texts[g] == text for g in shown)
