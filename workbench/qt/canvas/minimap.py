"""Minimap: a thumbnail of the whole graph in the canvas's corner with the visible area outlined.

The thumbnail is the scene drawn once into a pixmap (at this size the overview item and group
boxes draw, so it costs a few milliseconds) and redrawn when the picture changes; the viewport
rectangle is painted over it on every scroll or zoom. A click or drag centres the view there.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QGraphicsView, QWidget

from workbench.qt.canvas.colors import SELECTION

#: Longest side of the minimap (pixels), at most 30 % of the viewport's shorter side.
SIZE = 180
#: Below this viewport side (pixels) the minimap is hidden: it would cover the graph.
MIN_VIEWPORT = 320
_BACKGROUND = QColor(255, 255, 255, 225)


class Minimap(QWidget):
    """Child of a ``QGraphicsView``; call :meth:`refresh` after the scene changes and
    :meth:`update` after the view moves."""

    def __init__(self, view: QGraphicsView):
        super().__init__(view)
        self.view = view
        self._pixmap: QPixmap | None = None
        self._source = QRectF()
        self._s, self._ox, self._oy = 1.0, 0.0, 0.0  # scene -> minimap: scale and offset of the content
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Minimap: the outlined area is on screen; click or drag to move there")
        self.hide()

    def refresh(self, bounds: QRectF) -> None:
        """Redraw the thumbnail of ``bounds`` (scene coordinates); hides the minimap when empty."""
        vp = self.view.viewport()
        if bounds.isEmpty() or min(vp.width(), vp.height()) < MIN_VIEWPORT:
            self._pixmap = None
            self.hide()
            return
        side = min(SIZE, int(0.3 * min(vp.width(), vp.height())))
        scale = side / max(bounds.width(), bounds.height())
        w, h = max(int(bounds.width() * scale), 24), max(int(bounds.height() * scale), 24)
        self._source = QRectF(bounds)
        self._s = min(w / bounds.width(), h / bounds.height())  # as render() keeps the aspect ratio
        self._ox, self._oy = 1 + (w - bounds.width() * self._s) / 2, 1 + (h - bounds.height() * self._s) / 2
        pixmap = QPixmap(w, h)
        pixmap.fill(_BACKGROUND)
        painter = QPainter(pixmap)
        self.view.scene().render(painter, QRectF(0, 0, w, h), self._source, Qt.AspectRatioMode.KeepAspectRatio)
        painter.end()
        self._pixmap = pixmap
        self.resize(w + 2, h + 2)
        self.place()
        self.show()
        self.update()

    def place(self) -> None:
        """Keep the minimap in the viewport's bottom-right corner."""
        vp = self.view.viewport()
        self.move(vp.x() + vp.width() - self.width() - 8, vp.y() + vp.height() - self.height() - 8)

    def viewport_rect(self) -> QRectF:
        """The visible scene area in minimap pixels."""
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        return QRectF(self._to_map(visible.topLeft()), self._to_map(visible.bottomRight())).intersected(
            QRectF(0, 0, self.width() - 1, self.height() - 1))

    def _to_map(self, p: QPointF) -> QPointF:
        """Scene point -> minimap pixel."""
        return QPointF(self._ox + (p.x() - self._source.left()) * self._s,
                       self._oy + (p.y() - self._source.top()) * self._s)

    def to_scene(self, x: float, y: float) -> QPointF:
        """Minimap pixel -> scene point."""
        return QPointF(self._source.left() + (x - self._ox) / self._s, self._source.top() + (y - self._oy) / self._s)

    def paintEvent(self, event) -> None:
        if self._pixmap is None:
            return
        painter = QPainter(self)
        painter.drawPixmap(1, 1, self._pixmap)
        painter.setPen(QPen(QColor("#8a8a8a"), 1))
        painter.drawRect(0, 0, self.width() - 1, self.height() - 1)
        painter.setPen(QPen(SELECTION, 2))
        painter.setBrush(QColor(SELECTION.red(), SELECTION.green(), SELECTION.blue(), 40))
        painter.drawRect(self.viewport_rect())
        painter.end()

    def mousePressEvent(self, event) -> None:
        self._go(event)

    def mouseMoveEvent(self, event) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._go(event)

    def _go(self, event) -> None:
        pos = event.position()
        self.view.centerOn(self.to_scene(pos.x(), pos.y()))
        self.update()
