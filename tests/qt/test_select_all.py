"""Edit > Select All (Ctrl+A) selects every node of the shown graph; the Edit menu had no such entry."""

from __future__ import annotations

from bundled_example import EXAMPLE_MODEL
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence


def test_select_all_is_in_the_edit_menu_and_selects_every_node(qtbot, window, open_file):
    edit = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Edit")
    entries = [a.text() for a in edit.actions()]
    assert "Select &All" in entries
    assert window.act_select_all.shortcut() == QKeySequence(QKeySequence.StandardKey.SelectAll)
    assert not window.act_select_all.isEnabled()  # no model
    open_file(window, EXAMPLE_MODEL)
    assert window.act_select_all.isEnabled()
    with qtbot.waitSignal(window.canvas.selectionChangedNames):
        window.act_select_all.trigger()
    names = window.canvas.node_names()
    assert sorted(window.canvas.selected_nodes()) == sorted(names) and len(names) > 5
    assert window.inspector.nodes == window.canvas.selected_nodes()
    assert window.status_label.text() == f"Selected all {len(names)} nodes."
    window.canvas.select_nodes([])
    window.activateWindow()
    window.search.clearFocus()
    window.canvas.setFocus()
    qtbot.keyClick(window.canvas, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert sorted(window.canvas.selected_nodes()) == sorted(names)
