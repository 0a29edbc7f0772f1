"""The rows of the diff tab's list (:mod:`workbench.qt.diff_view`): sortable by any column, node names
shortened so that rows stay apart.

A click on a column title sorts the rows of each group by it; the groups ("matched", "left float", ...)
keep their order. The SQNR column sorts by value (:func:`sort_key`): -inf ("no signal") the worst,
+inf ("exact") the best, rows without a figure last in either order; the other columns by text, empty
cells last. A name too long for its column keeps the "/" segment that tells it from the other names of the
column and its last one, dropping what lies between (:class:`NameDelegate`): "…layer.5/…/self/MatMul"
beside "…layer.4/…/self/MatMul", not "/bert/…MatMul" twice; the whole name is the cell's tooltip.
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QTreeWidget, QTreeWidgetItem

from workbench.qt.elide import distinct_labels

COLUMNS = ["Float node", "SQNR (dB)", "Quantized node", "Op", "How"]
FLOAT_COL = COLUMNS.index("Float node")
SQNR_COL = COLUMNS.index("SQNR (dB)")
QUANT_COL = COLUMNS.index("Quantized node")
NAME_COLS = (FLOAT_COL, QUANT_COL)


def sort_key(db: float | None, descending: bool = False) -> tuple[int, float]:
    """Where a row with SQNR ``db`` (dB) goes when the list is sorted by SQNR: by value, -inf (no
    signal left) the worst and +inf (bit-exact) the best; a row without a figure (None, NaN) last in
    either order (Qt reverses the comparison for a descending sort, so its rank flips with ``descending``)."""
    if db is None or math.isnan(db):
        return (0 if descending else 2, 0.0)
    return (1, db)


def db_text(db: float | None) -> str:
    """An SQNR as the list shows it: "12.34", "exact" (+inf), "no signal" (-inf), "" (not measured)."""
    if db is None or math.isnan(db):
        return ""
    return "exact" if db == math.inf else "no signal" if db == -math.inf else f"{db:.2f}"


def _descending(tree: QTreeWidget | None) -> bool:
    return tree is not None and tree.header().sortIndicatorOrder() == Qt.SortOrder.DescendingOrder


class DiffRow(QTreeWidgetItem):
    """A row of the list (``db``: its SQNR, None when not measured), or a group's title row (``group``:
    its place among the groups, -1 for a row)."""

    def __init__(self, parent: QTreeWidgetItem | None, texts: list[str], db: float | None = None, group: int = -1):
        if parent is None:
            super().__init__(texts)
        else:
            super().__init__(parent, texts)
        self.db, self.group = db, group

    def __lt__(self, other: QTreeWidgetItem) -> bool:
        tree = self.treeWidget()
        descending = _descending(tree)
        if self.group >= 0 and getattr(other, "group", -1) >= 0:  # groups: their own order, either way
            return (self.group > other.group) if descending else (self.group < other.group)
        column = tree.sortColumn() if tree is not None else FLOAT_COL
        if column == SQNR_COL:
            return sort_key(self.db, descending) < sort_key(getattr(other, "db", None), descending)
        a, b = self.text(column), other.text(column)
        if bool(a) != bool(b):  # an empty cell last, either way
            return bool(a) != descending
        return a.lower() < b.lower()


def add_row(parent: QTreeWidgetItem, float_node: str, quant_node: str, op: str, db: float | None,
            how: str) -> DiffRow:
    """A row under ``parent``: the two node names (whole in their tooltips), the SQNR (dB, None: not
    measured), the op and how the nodes were matched."""
    cells = {"Float node": float_node, "SQNR (dB)": db_text(db), "Quantized node": quant_node, "Op": op, "How": how}
    item = DiffRow(parent, [cells[t] for t in COLUMNS], db)
    for col in NAME_COLS:
        if item.text(col):
            item.setToolTip(col, item.text(col))
    item.setTextAlignment(SQNR_COL, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


class NameDelegate(QStyledItemDelegate):
    """Draws a name column of the list with :func:`~workbench.qt.elide.distinct_labels` at the column's
    width: the "/" segment that tells a name from the others of the column and its last segment are kept
    ("…layer.3/…/self/Add" beside "…layer.4/…/self/Add"; a middle ellipsis gave "/bert/…/Add" for every
    layer). The labels are worked out once per width; the group title rows are drawn as usual."""

    def __init__(self, names: list[str], parent=None):
        super().__init__(parent)
        self.names = sorted(set(names))
        self._labels: dict[int, dict[str, str]] = {}
        self._measuring = False

    def label(self, name: str, metrics, room: int) -> str:
        """``name`` as drawn in ``room`` pixels of ``metrics``."""
        if room not in self._labels:
            if len(self._labels) > 32:  # a column dragged through many widths
                self._labels.clear()
            texts = distinct_labels(self.names, [""] * len(self.names), metrics, max(room, 1))
            self._labels[room] = dict(zip(self.names, texts, strict=True))
        return self._labels[room].get(name, name)

    def initStyleOption(self, option, index) -> None:  # noqa: N802 (Qt's name)
        super().initStyleOption(option, index)
        if self._measuring or not index.parent().isValid() or not option.text:
            return  # the whole name's size (resizeColumnToContents); a group's title row
        widget = option.widget
        style = widget.style() if widget is not None else QApplication.style()
        # the room the style draws the text in (it elides what is wider), less its margins and 2 px of rounding
        margin = style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, widget) + 1
        room = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, option, widget).width() - 2 * margin - 2
        option.text = self.label(option.text, option.fontMetrics, room)


    def sizeHint(self, option, index):  # noqa: N802 (Qt's name)
        self._measuring = True
        try:
            return super().sizeHint(option, index)
        finally:
            self._measuring = False


def shorten_names(tree: QTreeWidget) -> None:
    """Draw the name columns of ``tree`` with a :class:`NameDelegate` each."""
    rows = [tree.topLevelItem(g).child(i) for g in range(tree.topLevelItemCount())
            for i in range(tree.topLevelItem(g).childCount())]
    for col in NAME_COLS:
        tree.setItemDelegateForColumn(col, NameDelegate([r.text(col) for r in rows if r.text(col)], tree))
