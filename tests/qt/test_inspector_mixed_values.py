"""A multi-selection whose nodes differ in a setting shows "mixed" in that field, not a value none or only some of
them have.

Found by a user pass on digits_cnn: with the three Convs selected after one was set to int16 activations, the dtype
box was blank; after one Conv's weight axis was set to 1 (the others "auto"), the axis box read "auto" and a
block size set on one read "none" for all three."""

from __future__ import annotations

from test_app_flow import search

from workbench.qt.inspector import MIXED


def test_fields_of_a_mixed_selection_say_mixed(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    convs = search(qtbot, win, "Conv")
    assert convs == ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv"]
    weight, activation = win.inspector.roles["weight"], win.inspector.roles["activation"]
    assert weight.axis.text() == "auto" and weight.block_size.text() == "none"  # all three the same: no "mixed"
    assert activation.dtype.currentText() == "uint8"

    search(qtbot, win, "/f/f.0/Conv")
    activation.dtype.setCurrentText("int16")
    weight.axis.setValue(1)
    weight.granularity.setCurrentText("per_block")
    weight.block_size.setValue(32)
    assert win.doc.recipe.overrides["/f/f.0/Conv"].weight.axis == 1

    search(qtbot, win, "Conv")
    assert activation.dtype.currentIndex() == -1 and activation.dtype.placeholderText() == MIXED  # blank before
    assert weight.granularity.currentIndex() == -1 and weight.granularity.placeholderText() == MIXED
    assert weight.axis.text() == MIXED and weight.block_size.text() == MIXED  # "auto" and "none" before
    assert activation.observer.currentText() == "minmax"  # the same on all three

    win.act_undo.trigger()
    win.act_undo.trigger()  # /f/f.0/Conv per-channel again, no block size: only its axis differs
    assert weight.block_size.text() == "none" and weight.axis.text() == MIXED
    assert weight.granularity.currentText() == "per_channel"
    search(qtbot, win, "/f/f.3/Conv")  # one node: its own values
    assert weight.axis.text() == "auto" and activation.dtype.currentText() == "uint8"
    search(qtbot, win, "/f/f.0/Conv")
    assert weight.axis.text() == "1" and activation.dtype.currentText() == "int16"
