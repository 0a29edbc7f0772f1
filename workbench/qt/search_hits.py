"""The Search Hits dock: every node the last search found, in model order; a click shows it."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QVBoxLayout, QWidget


class SearchHitsPanel(QWidget):
    """List of search hits; ``nodeClicked(name)`` when one is clicked or activated (Enter)."""

    nodeClicked = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.list = QListWidget(self)
        self.list.setToolTip("Nodes found by the search box; F3 / Shift+F3 step through them")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.list)
        self.list.itemClicked.connect(self._emit)
        self.list.itemActivated.connect(self._emit)

    def set_hits(self, hits: list[tuple[str, str]]) -> None:
        """Replace the list with (node name, op type) pairs."""
        self.list.clear()
        for name, op in hits:
            item = QListWidgetItem(f"{name}    [{op}]")
            item.setData(Qt.ItemDataRole.UserRole, name)
            self.list.addItem(item)

    def set_current(self, position: int) -> None:
        """Highlight the hit at 0-based ``position`` (the one the canvas stepped to)."""
        if 0 <= position < self.list.count():
            self.list.setCurrentRow(position)

    def names(self) -> list[str]:
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.list.count())]

    def _emit(self, item: QListWidgetItem) -> None:
        self.nodeClicked.emit(item.data(Qt.ItemDataRole.UserRole))
