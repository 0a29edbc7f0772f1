"""The Problems dock's rows: their content's height the first time the tab is shown after an edit made while
it was hidden (a row measured on the hidden table's narrow Message column filled the whole list)."""

from __future__ import annotations

from PySide6.QtCore import Qt

CONFLICT = "another unit reading it asked for"


def test_a_row_added_while_the_tab_is_hidden_has_its_content_height_when_shown(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    win.resize(1600, 1000)
    assert not win.problems.tree.isVisible()  # the Errors tab is in front
    win.search.setText("Conv")
    qtbot.keyClick(win.search, Qt.Key.Key_Return)
    win.inspector.roles["activation"].dtype.setCurrentText("int16")
    table = win.problems.tree
    row = win.problems.row_of(CONFLICT)
    assert row >= 0
    win.show_problems()
    qtbot.waitUntil(table.isVisible)
    qtbot.wait(50)  # the dock's layout settles
    assert table.columnWidth(2) > 400  # the Message column stretched across the dock
    lines = table.fontMetrics().lineSpacing()
    height = table.visualItemRect(win.problems.item_of(row)).height()
    assert 0 < height <= 4 * lines, (height, lines, table.viewport().height())
