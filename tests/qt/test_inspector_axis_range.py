"""The Inspector's weight axis is limited to the selection's weight rank: -8 was accepted for the
4-D Conv weights (valid -4..3) and Calibrate failed later."""

from __future__ import annotations

import onnx
from PySide6.QtCore import Qt

CONVS = ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv"]
GEMM = "/head/head.2/Gemm"


def test_weight_axis_is_limited_to_the_weight_rank(qtbot, window, open_file, corpus):
    win = window
    path = corpus / "digits_cnn" / "model_opset17.onnx"
    open_file(win, path)
    proto = onnx.load(str(path))
    inits = {t.name: len(t.dims) for t in proto.graph.initializer}
    nodes = {n.name: n for n in proto.graph.node}
    assert {inits[nodes[c].input[1]] for c in CONVS} == {4} and inits[nodes[GEMM].input[1]] == 2
    spin = win.inspector.roles["weight"].axis
    win.canvas.select_nodes([GEMM])
    assert (spin.minimum(), spin.maximum()) == (-3, 1)
    win.canvas.select_nodes([*CONVS, GEMM])  # the lowest rank of the selection: valid for all
    assert (spin.minimum(), spin.maximum()) == (-3, 1)

    win.canvas.select_nodes(CONVS)
    assert (spin.minimum(), spin.maximum()) == (-5, 3) and spin.text() == "auto"  # "auto", then -4 .. 3
    spin.setValue(-8)  # what a wheel turn or typing used to record
    assert spin.text() == "auto" and not win.doc.recipe.overrides
    qtbot.keyClick(spin, Qt.Key.Key_Up)
    assert all(win.doc.recipe.overrides[c].weight.axis == -4 for c in CONVS)
    assert not win.doc.plan_error and win.doc.plan is not None  # the planner takes it



def test_an_axis_held_out_of_range_stays_shown(qtbot, window, open_file, corpus):
    """An override holding an axis out of range (an older project) is shown as it is, not as "auto"."""
    from workbench.qt import commands

    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    commands.push_edit(win.doc, commands.set_role_field(win.doc.recipe, CONVS[:1], "weight", "axis", -8), "axis -8")
    assert "axis -8 is out of range" in win.doc.plan_error
    win.canvas.select_nodes(CONVS[:1])
    spin = win.inspector.roles["weight"].axis
    assert spin.value() == -8 and spin.text() == "-8" and spin.minimum() == -9
