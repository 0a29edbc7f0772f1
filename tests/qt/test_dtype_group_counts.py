"""A group's "N% quantized" counts the same nodes in the Graph tab (the recipe's plan) and in the
Exported tab (the file written), pytest-qt offscreen.

nudenet_320n after Calibrate and Export showed model.2 "50% quantized" in the Graph tab and a different
figure in the Exported tab: the Graph tab counted only the nodes of the recipe's units (2 of 4 Convs
quantized), the Exported tab every node of the group (2 of 15). Both now count every node but the
quantizer's Q/DQ, and the Graph tab gives a node of no unit the dtype the file will compute it in: a
SiLU's Sigmoid between a quantized Conv output and a quantized Mul input runs on integers there.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_app_flow import run_job

from workbench.qt.commands import push_edit, set_exclude

pytestmark = pytest.mark.usefixtures("latency_pays")  # nothing left float by this machine's timings


BLOCKS = 3


def silu_blocks() -> onnx.ModelProto:
    """Three scopes /blk{b}: Conv -> SiLU (Sigmoid, Mul) -> Softplus (no unit: float)."""
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for b in range(BLOCKS):
        inits += [numpy_helper.from_array(rng.normal(0, 0.3, (4, 4, 3, 3)).astype(np.float32), f"w{b}"),
                  numpy_helper.from_array(rng.normal(0, 0.1, (4,)).astype(np.float32), f"b{b}")]
        nodes += [helper.make_node("Conv", [prev, f"w{b}", f"b{b}"], [f"c{b}"], name=f"/blk{b}/conv/Conv",
                                   pads=[1, 1, 1, 1]),
                  helper.make_node("Sigmoid", [f"c{b}"], [f"s{b}"], name=f"/blk{b}/act/Sigmoid"),
                  helper.make_node("Mul", [f"c{b}", f"s{b}"], [f"m{b}"], name=f"/blk{b}/act/Mul"),
                  helper.make_node("Softplus", [f"m{b}"], [f"p{b}"], name=f"/blk{b}/post/Softplus")]
        prev = f"p{b}"
    graph = helper.make_graph(nodes, "silu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def group_texts(canvas) -> dict[str, str | None]:
    state = canvas._state
    h = state.data.hierarchy
    return {h.paths[g]: state.group_texts.get(g) for g in state.data.group_ids}


def test_graph_and_exported_tabs_count_the_same_nodes(qtbot, window, open_file, tmp_path):
    win = window
    model = tmp_path / "silu.onnx"
    onnx.save(silu_blocks(), model)
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(1).normal(size=(16, 4, 8, 8)).astype(np.float32))
    open_file(win, model)
    win.calibration.set_data_spec({"kind": "npz", "path": str(tmp_path / "calib.npz")}, 16)
    win._on_spec_changed()
    win.calibration.choose_first.setChecked(False)  # the preset as it is, the edit below
    assert push_edit(win.doc, set_exclude(win.doc.recipe, ["/blk1/act/Mul"], True), "Keep it float")
    assert "/blk0/post/Softplus" not in win.doc.plan.units  # a node of no unit
    win.color_mode.setCurrentText("dtype")
    graph = group_texts(win.canvas)
    # blk0: Conv, Mul, and Sigmoid and Softplus between quantized tensors (the next Conv reads p0 as uint8);
    # blk1: its Mul kept float, so neither its Sigmoid nor its Softplus sits between Q/DQ: the Conv alone;
    # blk2: its Softplus writes the model's (float) output
    assert graph == {"blk0": "100% quantized", "blk1": "25% quantized", "blk2": "75% quantized"}
    dtypes = win.doc.node_dtypes()
    assert dtypes["/blk0/act/Sigmoid"] == dtypes["/blk0/post/Softplus"] == "uint8"
    assert "/blk1/act/Sigmoid" not in dtypes and "/blk2/post/Softplus" not in dtypes

    out = tmp_path / "silu.q.onnx"
    status, res = run_job(qtbot, win, lambda: win.export_to(out), timeout=300_000)
    assert status == "succeeded", res
    tab = win.open_exported()
    qtbot.waitUntil(lambda: tab.canvas._state is not None and bool(group_texts(tab.canvas)), timeout=300_000)
    assert group_texts(tab.canvas) == graph  # the file computes in what the Graph tab said
    file_dtypes = tab.summary.node_dtypes
    assert {n: file_dtypes[n] for n in dtypes if n in file_dtypes} == dtypes
