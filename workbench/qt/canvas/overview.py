"""One item that draws every node of the graph as filled rectangles, batched by colour.

Shown instead of the per-node items when zoomed out: painting 20,000 QGraphicsItems takes
seconds, painting a few dozen pre-built paths takes milliseconds. Do not set a cache mode on it
(measured slower here).
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from workbench.qt.canvas.colors import SELECTION
from workbench.qt.canvas.items import CanvasState
from workbench.qt.canvas.scene_data import NODE_H, NODE_W


class OverviewItem(QGraphicsItem):
    """Draws ``state``'s nodes with their fills; selected nodes get a cosmetic outline."""

    def __init__(self, state: CanvasState):
        super().__init__()
        self.state = state
        self._bounds = state.data.bounds.adjusted(-4, -4, 4, 4)
        self._groups: list[tuple[QColor, QPainterPath]] = []
        self._selected = QPainterPath()
        self.refresh_colors()

    def boundingRect(self) -> QRectF:
        return self._bounds

    def refresh_colors(self) -> None:
        """Re-group the node rectangles by fill colour (call after the fills change)."""
        d = self.state.data
        paths: dict[object, tuple[QColor, QPainterPath]] = {}
        x0, y0 = d.x0.tolist(), d.y0.tolist()
        w, h = float(NODE_W), float(NODE_H)
        fills = self.state.fills
        for i, key in enumerate(self.state.fill_keys):
            if x0[i] != x0[i]:  # NaN: hidden in a collapsed group
                continue
            entry = paths.get(key)
            if entry is None:
                entry = paths[key] = (fills[i], QPainterPath())
            entry[1].addRect(x0[i], y0[i], w, h)
        self._groups = list(paths.values())
        self.update()

    def refresh_selection(self) -> None:
        d = self.state.data
        path = QPainterPath()
        for i in sorted(self.state.selected):
            if d.shown(i):
                path.addRect(d.rect(i))
        self._selected = path
        self.update()

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        painter.setPen(Qt.PenStyle.NoPen)
        for fill, path in self._groups:
            painter.fillPath(path, fill)
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        if lod > 0.08:  # outlines only where a node is several pixels large
            painter.setPen(QPen(QColor("#606060"), 0))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            for _fill, path in self._groups:
                painter.drawPath(path)
        if not self._selected.isEmpty():  # a translucent fill: wide outlines of 20k rects are slow
            painter.fillPath(self._selected, _SELECTED_FILL)


_SELECTED_FILL = QColor(SELECTION.red(), SELECTION.green(), SELECTION.blue(), 170)
