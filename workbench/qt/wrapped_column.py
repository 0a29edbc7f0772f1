"""A tree column whose text wraps to the column's width, each row as tall as its lines.

A QTreeView with ``wordWrap`` set draws a cell's text wrapped, but measures its row with no width (the
delegate's option has an empty rect), so a row is one line tall and a long message is cut at its first line:
in the Problems dock of a 1024 x 700 window, "Folded 6 BatchNormalization nodes into the Conv before each
(p2o.BatchNormalization.0, ..." read "Folded 6 ...". :class:`WrappedColumn` measures the column's cells at
the column's width, lets long names wrap at their dots and underscores
(:func:`workbench.qt.break_marks.breakable`, the item's text is unchanged), and lays the rows out again when
a column is resized.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QTimer
from PySide6.QtWidgets import QStyledItemDelegate, QStyleOptionViewItem, QTreeView

from workbench.qt.break_marks import breakable


class WrappedColumn(QStyledItemDelegate):
    """Delegate of ``column`` of ``view`` (installed by the constructor): its text wraps at the column's width
    (pixels) and its rows are as tall as the wrapped lines."""

    def __init__(self, view: QTreeView, column: int):
        super().__init__(view)
        self.view, self.column = view, column
        view.setWordWrap(True)
        view.setUniformRowHeights(False)
        view.setItemDelegateForColumn(column, self)
        self._relayout = QTimer(self)
        self._relayout.setSingleShot(True)  # a dragged column: one layout once the drag's events are handled
        self._relayout.timeout.connect(view.doItemsLayout)
        view.header().sectionResized.connect(self._on_resized)

    def _on_resized(self, column: int, _old: int, _new: int) -> None:
        if column == self.column:
            self._relayout.start(0)

    def initStyleOption(self, option: QStyleOptionViewItem, index) -> None:  # noqa: N802 (Qt's name)
        super().initStyleOption(option, index)
        option.text = breakable(option.text)

    def sizeHint(self, option: QStyleOptionViewItem, index):  # noqa: N802 (Qt's name)
        opt = QStyleOptionViewItem(option)
        # a valid rect (the view's has no height, which the style reads as "no width": one line)
        opt.rect = QRect(0, 0, max(1, self.view.columnWidth(index.column())), max(1, opt.rect.height()))
        opt.features |= QStyleOptionViewItem.ViewItemFeature.WrapText
        return super().sizeHint(opt, index)


__all__ = ["WrappedColumn"]
