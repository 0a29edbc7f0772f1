"""Esc on the graph clears its selection first, also while a job runs; the next Esc cancels the job.

Found by a user pass: with a node of nudenet_320n selected during a calibration, Esc on the canvas (which clears the
selection when nothing runs) cancelled the calibration and left the node selected: Run > Cancel's shortcut took
the key before the canvas."""

from __future__ import annotations

from PySide6.QtCore import Qt


def test_escape_clears_the_selection_then_cancels(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "nudenet_320n/model.onnx")
    win.calibration.choose_first.setChecked(False)
    cancelled = []
    win.runs.cancelled.connect(cancelled.append)
    win.act_calibrate.trigger()
    qtbot.waitUntil(lambda: win.runs.busy, timeout=10_000)
    name = win.canvas.node_names()[3]
    win.focus_node(name)
    win.canvas.setFocus()
    assert win.canvas.selected_nodes() == [name] and win.act_cancel.isEnabled()

    qtbot.keyClick(win.canvas, Qt.Key.Key_Escape)  # clears the selection: the calibration goes on
    assert win.canvas.selected_nodes() == []
    assert win.runs.busy and cancelled == []  # cancelled before, the node still selected
    with qtbot.waitSignal(win.runs.cancelled, timeout=120_000):
        qtbot.keyClick(win.canvas, Qt.Key.Key_Escape)  # nothing selected: Run > Cancel
    assert cancelled == ["calibrate"]
    qtbot.waitUntil(lambda: not win.runs.busy, timeout=120_000)
