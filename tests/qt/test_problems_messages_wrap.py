"""The Problems dock's long messages wrap in the Message column, each row as tall as its lines. The tree drew the
text wrapped but measured every row one line tall (its delegate got a rect without height, which the style reads
as no width), so in a 1024 x 700 window ppocrv4_rec's "Folded 6 BatchNormalization nodes into the Conv before each
(p2o.BatchNormalization.0, ..." showed as "Folded 6"; the rows follow the column when it is resized."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QStyle

from workbench.qt.break_marks import breakable

FOLDED = "Folded 6 BatchNormalization nodes into the Conv before each"


def _needed(tree, text: str) -> int:
    """The height, px, ``text`` takes wrapped at the Message column's width less the cell's text margins."""
    margin = tree.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, tree) + 1
    box = QRect(0, 0, tree.columnWidth(2) - 2 * margin, 1 << 20)
    return tree.fontMetrics().boundingRect(box, Qt.TextFlag.TextWordWrap, breakable(text)).height()


def _rows(panel):
    return [(issue.message, panel.tree.visualItemRect(panel.item_of(k)).height())
            for k, (_s, issue) in enumerate(panel.problems)]


def test_long_messages_wrap_in_a_small_window(qtbot, window, open_file, corpus):
    win = window
    win.resize(1024, 700)
    open_file(win, corpus / "ppocrv4_rec" / "model.onnx")
    win.show_problems()
    panel, tree = win.problems, win.problems.tree
    qtbot.waitUntil(tree.isVisible)
    for k in range(tree.topLevelItemCount()):
        tree.topLevelItem(k).setExpanded(True)
    qtbot.wait(50)  # the dock's layout settles
    line = tree.fontMetrics().lineSpacing()
    width = tree.columnWidth(2)
    rows = _rows(panel)
    assert len(rows) == 9  # 4 preparation notes, 5 reduction statistics kept float
    folded = next(h for m, h in rows if m.startswith(FOLDED))
    assert folded >= 3 * line, (folded, line, width)  # 195 characters: one line (14 px) before
    for message, height in rows:
        assert height >= _needed(tree, message), (message, height, _needed(tree, message), width)
        assert height < _needed(tree, message) + 2 * line  # no blank lines either

    # a wider window: the column widens, the rows take fewer lines
    win.resize(1600, 1000)
    qtbot.waitUntil(lambda: tree.columnWidth(2) > width + 100)
    qtbot.waitUntil(lambda: next(h for m, h in _rows(panel) if m.startswith(FOLDED)) < folded)
    for message, height in _rows(panel):
        assert _needed(tree, message) <= height < _needed(tree, message) + 2 * line
    assert panel.item_of(0).toolTip(2) == panel.problems[0][1].message  # the whole message on hover too
