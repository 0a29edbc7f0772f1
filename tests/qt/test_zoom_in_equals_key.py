"""View > Zoom In also answers Ctrl+= (Ctrl and the '=' key, no Shift), wherever the focus is.

Zoom In had only Ctrl++, which takes Shift on most keyboard layouts; Ctrl+= zoomed only while the graph
itself had the focus (its own key handling), so with the focus in a dock or the search box it did nothing.
"""

from __future__ import annotations

from bundled_example import EXAMPLE
from PySide6.QtGui import QKeySequence
from PySide6.QtTest import QTest


def test_ctrl_equals_zooms_in_from_a_dock(qtbot, window, open_file):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    keys = [k.toString() for k in win.act_zoom_in.shortcuts()]
    assert "Ctrl+=" in keys and "Ctrl++" in keys
    win.activateWindow()
    win.calibration.samples.setFocus()  # a dock's field: the graph's own key handling does not see the key
    before = win.canvas.transform().m11()
    QTest.keySequence(win, QKeySequence("Ctrl+="))
    assert win.canvas.transform().m11() > before
    zoomed = win.canvas.transform().m11()
    QTest.keySequence(win, QKeySequence("Ctrl+-"))
    assert win.canvas.transform().m11() < zoomed
