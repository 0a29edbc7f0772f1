"""The read-only, row-selecting, sortable-by-click node tables shared by the app's panels."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem


def node_table(titles: list[str]) -> QTableWidget:
    """A table with ``titles`` as columns: whole-row single selection, no editing, no row numbers,
    columns sized to their contents and the first (the node name) stretched. A name too long for a
    narrow dock loses its middle ("/model.22/.../conv/Conv"), never its end, and stays on one line
    (the full name is the cell's tooltip)."""
    table = QTableWidget(0, len(titles))
    table.setHorizontalHeaderLabels(titles)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
    table.setWordWrap(False)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    return table


def node_item(node: str, tooltip: str = "") -> QTableWidgetItem:
    """The first cell of a row: shows ``node`` and keeps it for :func:`node_at` (survives sorting)."""
    item = QTableWidgetItem(node)
    item.setData(Qt.ItemDataRole.UserRole, node)
    item.setToolTip(f"{node}\n{tooltip}" if tooltip else node)
    return item


def node_at(table: QTableWidget, row: int) -> str:
    """Node name of table row ``row`` as currently sorted (a :func:`node_item` in column 0)."""
    return table.item(row, 0).data(Qt.ItemDataRole.UserRole)


def follow_selection(table: QTableWidget, nodes: list[str]) -> None:
    """Select (and scroll to) the row of the one node of ``nodes`` the graph selected; no row selected when it
    selected none, several, or a node without a row (a row clicked earlier stayed selected beside the graph's
    other node). Emits no click: the graph's selection is not changed back."""
    row = next(
        (r for r in range(table.rowCount()) if len(nodes) == 1 and node_at(table, r) == nodes[0]), None
    )
    if row is None:
        table.clearSelection()
        return
    table.selectRow(row)
    table.scrollToItem(table.item(row, 0))
