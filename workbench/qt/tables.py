"""The read-only, row-selecting, sortable-by-click node tables shared by the app's panels."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget


def node_table(titles: list[str]) -> QTableWidget:
    """A table with ``titles`` as columns: whole-row single selection, no editing, no row numbers,
    columns sized to their contents and the first (the node name) stretched."""
    table = QTableWidget(0, len(titles))
    table.setHorizontalHeaderLabels(titles)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    return table
