"""File > Close Tab (Ctrl+W, Ctrl+F4) closes the shown tab; the Graph tab never closes, so it is off there.

The exported model's, subgraph, diff and Netron tabs could be closed only with the small cross on the tab.
"""

from __future__ import annotations

import shutil

from bundled_example import EXAMPLE
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtTest import QTest

from workbench.qt.actions import MENUS


def test_ctrl_w_closes_the_shown_tab_not_the_graph(qtbot, window, open_file, example_qdq_file, tmp_path):
    win = window
    assert not win.act_close_tab.isEnabled()  # the welcome page: nothing to close
    assert "close_tab" in MENUS["&File"]
    keys = [k.toString() for k in win.act_close_tab.shortcuts()]
    assert keys[:2] == ["Ctrl+W", "Ctrl+F4"]

    open_file(win, EXAMPLE / "digits_cnn.onnx")
    assert win.tabs.count() == 1 and not win.act_close_tab.isEnabled()  # the Graph tab stays
    exported = tmp_path / "digits.qdq.onnx"
    shutil.copy(example_qdq_file, exported)
    win._last_export = exported  # as a finished export sets it
    tab = win.open_exported()
    qtbot.waitUntil(lambda: tab.canvas._state is not None, timeout=300_000)
    assert win.tabs.count() == 2 and win.tabs.currentWidget() is tab and win.act_close_tab.isEnabled()

    win.activateWindow()
    tab.canvas.setFocus()
    QTest.keySequence(win, QKeySequence("Ctrl+W"))  # the key as typed, not the action's trigger
    qtbot.waitUntil(lambda: win.tabs.count() == 1)
    assert win.tabs.currentWidget() is win.canvas and not win.act_close_tab.isEnabled()

    QTest.keyClick(win.canvas, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)  # off on the Graph tab
    assert win.tabs.count() == 1 and win.isVisible() and win.doc.model is not None
