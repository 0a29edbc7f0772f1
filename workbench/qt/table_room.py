"""A table in a dock under the graph gets room for a useful number of rows when it fills.

The Sensitivity and Cost docks hold a summary, a key and a table; in the row height a result dock first gets
(:data:`workbench.qt.docks.SIDE_BY_SIDE_HEIGHT` of the window) their texts took most of it: after a sweep on
digits_cnn in a 1024 x 700 window the Sensitivity table showed under one of its 5 rows (23 px of a 30 px row),
and the Cost dock, about 155 px wide beside the Problems dock, wrapped its summary to 210 px and showed one row.
When its table fills (or its dock is shown with rows), :class:`TableRoom` widens the dock for the table's columns
when it shares its row with another dock (that one kept at its minimum width and :data:`SIDE_WIDTH` at least: View >
Cost in a 1024 x 700 window left the Errors dock its 77 px minimum, its title "Err…" and its text a word a line;
with less than :data:`SIDE_WIDTH` left, the dock becomes a tab of the dock beside it instead), then grows the row so
the table shows :data:`WANTED_ROWS` rows (or every row when it has fewer), the graph keeping at least
:data:`GRAPH_SHARE` of the window's height. Sizes the user gives later are left as they are.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QTableWidget

#: rows a table should show once it has data (or all, when it has fewer)
WANTED_ROWS = 5

#: the least share of the window's height the graph (the central widget) keeps when a row grows
GRAPH_SHARE = 0.3

#: room for the separator between two side-by-side docks, pixels
SPLITTER = 8

#: the least width (pixels) a dock gets beside others in its row; with less it is tabbed with the dock in front
SIDE_WIDTH = 240

_BOTTOM_OR_TOP = (Qt.DockWidgetArea.BottomDockWidgetArea, Qt.DockWidgetArea.TopDockWidgetArea)


def _settle(window: QMainWindow) -> None:
    """Lay the window out now, the docks' panels included (their layout requests are posted events)."""
    window.layout().activate()
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)


def _least_width(window: QMainWindow, dock: QDockWidget) -> int:
    """The least width of ``dock``'s place in its row: the widest minimum of it and the docks tabbed with it
    (the Problems dock shares its tab group with Errors, whose plots hold it at 567 px)."""
    return max(d.minimumSizeHint().width() for d in [dock, *window.tabifiedDockWidgets(dock)])


def shown_rows(table: QTableWidget) -> float:
    """Rows the table's viewport has room for (viewport height / row height; 0 without rows)."""
    if table.rowCount() == 0:
        return 0.0
    return table.viewport().height() / max(1, table.rowHeight(0))


def columns_width(table: QTableWidget) -> int:
    """Width (pixels) the table needs for every column at its contents' width, frame and a vertical scroll
    bar included."""
    header = table.horizontalHeader()
    cols = sum(max(header.sectionSizeHint(c), table.sizeHintForColumn(c)) for c in range(table.columnCount()))
    return cols + 2 * table.frameWidth() + table.verticalScrollBar().sizeHint().width()


class TableRoom(QObject):
    """Watches ``table`` in ``dock`` of ``window``: when rows arrive, or the dock is shown with rows, the dock gets
    room for them (:meth:`make_room`, on the next event-loop turn, once the layout settled)."""

    def __init__(self, window: QMainWindow, dock: QDockWidget, table: QTableWidget):
        super().__init__(dock)
        self.window, self.dock, self.table = window, dock, table
        model = table.model()
        model.rowsInserted.connect(self.later)
        model.modelReset.connect(self.later)
        dock.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt's name)
        if obj is self.dock and event.type() == QEvent.Type.Show:
            self.later()
        return False

    def later(self, *_args) -> None:
        QTimer.singleShot(0, self, self.make_room)  # dropped with the dock (a window closed meanwhile)

    def make_room(self) -> None:
        """Widen the dock for the table's columns when it shares its row, then grow the row for
        :data:`WANTED_ROWS` rows, the graph kept at :data:`GRAPH_SHARE` of the window at least."""
        window, dock, table = self.window, self.dock, self.table
        if (table.rowCount() == 0 or not table.isVisible() or dock.isFloating()
                or window.dockWidgetArea(dock) not in _BOTTOM_OR_TOP):
            return
        self._widen()
        _settle(window)
        want = min(WANTED_ROWS, table.rowCount()) * table.rowHeight(0)
        central = window.centralWidget()
        # the height asked of a tabbed dock is its tab group's, tab bar included: the asked height grows by what
        # is missing each time, not the dock's own height; the panel's wrapped texts are measured again too
        asked = dock.height()
        for _ in range(3):
            need = want - table.viewport().height()
            spare = central.height() - round(GRAPH_SHARE * window.height()) if central is not None else 0
            grow = min(need, spare)
            if grow <= 0:
                return
            asked += grow
            window.resizeDocks([dock], [asked], Qt.Orientation.Vertical)
            _settle(window)

    def _widen(self) -> None:
        """The dock as wide as its table's columns (and what else its panel holds) need, when it is side by side
        with others in its row; each of them keeps its minimum width and :data:`SIDE_WIDTH` (what it has, if less)."""
        window, dock = self.window, self.dock
        others = [d for d in window.findChildren(QDockWidget) if d is not dock and d.isVisible() and not d.isFloating()
                  and window.dockWidgetArea(d) == window.dockWidgetArea(dock)
                  and not d.visibleRegion().isEmpty() and d.geometry().top() == dock.geometry().top()]
        if not others:
            return
        least = [min(d.width(), max(_least_width(window, d), SIDE_WIDTH)) for d in others]
        want = columns_width(self.table) + (dock.width() - self.table.width())
        row = sum(d.width() for d in others) + dock.width() + SPLITTER * len(others)
        width = min(want, row - sum(least) - SPLITTER * len(others))
        if width < SIDE_WIDTH:  # too narrow beside them (its summary wraps a word a line): a tab of the row instead
            window.tabifyDockWidget(others[0], dock)
            dock.show()
            dock.raise_()
            return
        if width > dock.width():  # the others give the width, each in proportion to what it has above its least
            extra = width - dock.width()
            slack = [d.width() - m for d, m in zip(others, least, strict=True)]
            total = sum(slack) or 1
            sizes = [d.width() - round(extra * s / total) for d, s in zip(others, slack, strict=True)]
            window.resizeDocks([*others, dock], [*sizes, width], Qt.Orientation.Horizontal)


__all__ = ["GRAPH_SHARE", "WANTED_ROWS", "TableRoom", "columns_width", "shown_rows"]
