"""Minimap: a thumbnail of the whole graph in the canvas's corner with the visible area outlined.

The thumbnail is the scene drawn once into a cached pixmap (at this size the overview item and group
boxes draw) and drawn again only when the picture changes (:meth:`Minimap.scene_changed`), the selection
does (:meth:`Minimap.selection_changed`), or its bounds, size or colours do; the viewport rectangle is
painted over the cached pixmap on every scroll or zoom. A click or drag centres the view there.
The x in the strip above the thumbnail (right end) collapses it to a small button in the same corner (it covered the
nodes there); a click on the button shows the minimap again.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QGraphicsView, QWidget

from workbench.qt.canvas.colors import SELECTION
from workbench.qt.canvas.overlay_colors import LIGHT_OVERLAY, overlay_colors

#: Longest side of the minimap (pixels), at most 30 % of the viewport's shorter side.
SIZE = 180
#: Below this viewport side (pixels) the minimap is hidden: it would cover the graph.
MIN_VIEWPORT = 320
#: Side of the close box, in a strip of that height above the thumbnail (a narrow thumbnail of a
#: chain left no corner free of the graph), and of the collapsed button (pixels).
CLOSE = 14
BUTTON = 22
_OPEN_TIP = "Minimap: the outlined area is on screen; click or drag to move there. The x hides it."
_COLLAPSED_TIP = "Show the minimap (a thumbnail of the whole graph)"


class Minimap(QWidget):
    """Child of a ``QGraphicsView``; call :meth:`refresh` after the scene changes and
    :meth:`update` after the view moves. ``whole_picture()`` (optional) is entered around each render of the
    scene into the thumbnail: the view's items as a picture of the whole graph (the canvas hides its overview
    item when zoomed in and has node items only near the view)."""

    def __init__(self, view: QGraphicsView,
                 whole_picture: Callable[[], AbstractContextManager] | None = None):
        super().__init__(view)
        self.view = view
        self._whole_picture = whole_picture or nullcontext
        self._pixmap: QPixmap | None = None
        self._source = QRectF()
        self._s, self._ox, self._oy = 1.0, 0.0, 0.0  # scene -> minimap: scale and offset of the content
        self._bounds = QRectF()
        #: what the cached thumbnail was drawn for: (bounds, width, height, colours); None: draw again
        self._drawn: tuple | None = None
        #: scene renders made (tests count them: a refresh with nothing changed makes none)
        self.renders = 0
        #: True: drawn as a small button (the user closed it); the thumbnail comes back with a click
        self.collapsed = False
        #: the theme's overlay colours (:meth:`set_dark`)
        self.colors = LIGHT_OVERLAY
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip(_OPEN_TIP)
        self.hide()

    def set_collapsed(self, collapsed: bool) -> None:
        """Draw the minimap as a small button in its corner (``True``) or as the thumbnail again; a
        view still as its last fit left it is fitted again (the graph may use the corner)."""
        if collapsed == self.collapsed:
            return
        self.collapsed = collapsed
        self.setToolTip(_COLLAPSED_TIP if collapsed else _OPEN_TIP)
        self.refresh(self._bounds)
        self.view.legend_resized()

    def set_dark(self, dark: bool) -> None:
        """Draw in the dark theme's overlay colours (``True``) or the light ones; the thumbnail is drawn again
        on the new background."""
        colors = overlay_colors(dark)
        if colors != self.colors:
            self.colors = colors
            if self._pixmap is not None:
                self.refresh(self._bounds)
            self.update()

    def close_rect(self) -> QRect:
        """The close box at the right end of the strip above the thumbnail (minimap pixels)."""
        return QRect(self.width() - CLOSE - 1, 0, CLOSE, CLOSE)

    def scene_changed(self) -> None:
        """The scene's picture changed (built anew, new fills): the next :meth:`refresh` draws the thumbnail
        again instead of reusing the cached one."""
        self._drawn = None

    def selection_changed(self) -> None:
        """The selection's colours changed (nodes' translucent fill, group boxes' outline, highlighted edges):
        the thumbnail is drawn again now when one is shown, as the cached pixmap holds the old selection. One
        render of the scene per change (0.6-1.0 ms CPU at 20,000 nodes), no per-node work."""
        self._drawn = None
        if self._pixmap is not None:
            self.refresh(self._bounds)

    def refresh(self, bounds: QRectF) -> None:
        """Show the thumbnail of ``bounds`` (scene coordinates) at the viewport's size; hides the minimap when
        empty. The scene is rendered into the cached pixmap only when the picture changed
        (:meth:`scene_changed`), or the bounds, the thumbnail's size or the colours did; else the cached one
        is kept (a viewport resize or a scroll bar shown made a whole render each)."""
        vp = self.view.viewport()
        self._bounds = QRectF(bounds)
        if bounds.isEmpty() or min(vp.width(), vp.height()) < MIN_VIEWPORT:
            self._pixmap, self._drawn = None, None
            self.hide()
            return
        if self.collapsed:
            self._pixmap, self._drawn = None, None
            self.resize(BUTTON, BUTTON)
            self.place()
            self.show()
            self.update()
            return
        side = min(SIZE, int(0.3 * min(vp.width(), vp.height())))
        scale = min(side / bounds.width(), (side - CLOSE) / bounds.height())  # the strip is part of the side
        w, h = max(int(bounds.width() * scale), 24), max(int(bounds.height() * scale), 24)
        self._source = QRectF(bounds)
        self._s = min(w / bounds.width(), h / bounds.height())  # as render() keeps the aspect ratio
        self._ox = 1 + (w - bounds.width() * self._s) / 2
        self._oy = 1 + CLOSE + (h - bounds.height() * self._s) / 2
        key = (QRectF(bounds), w, h, self.colors)
        if self._pixmap is None or self._drawn != key:
            self._pixmap, self._drawn = self._render(w, h), key
        self.resize(w + 2, h + 2 + CLOSE)
        self.place()
        self.show()
        self.update()

    def _render(self, w: int, h: int) -> QPixmap:
        """The scene's :attr:`_source` drawn into a ``w`` x ``h`` pixmap on the minimap's background, inside
        the view's ``whole_picture()``."""
        pixmap = QPixmap(w, h)
        pixmap.fill(self.colors.qcolor("background"))
        painter = QPainter(pixmap)
        with self._whole_picture():
            self.view.scene().render(painter, QRectF(0, 0, w, h), self._source, Qt.AspectRatioMode.KeepAspectRatio)
        painter.end()
        self.renders += 1
        return pixmap

    def place(self) -> None:
        """Keep the minimap in the viewport's bottom-right corner."""
        vp = self.view.viewport()
        self.move(vp.x() + vp.width() - self.width() - 8, vp.y() + vp.height() - self.height() - 8)

    def viewport_rect(self) -> QRectF:
        """The visible scene area in minimap pixels."""
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        return QRectF(self._to_map(visible.topLeft()), self._to_map(visible.bottomRight())).intersected(
            QRectF(0, CLOSE, self.width() - 1, self.height() - 1 - CLOSE))

    def _to_map(self, p: QPointF) -> QPointF:
        """Scene point -> minimap pixel."""
        return QPointF(self._ox + (p.x() - self._source.left()) * self._s,
                       self._oy + (p.y() - self._source.top()) * self._s)

    def to_scene(self, x: float, y: float) -> QPointF:
        """Minimap pixel -> scene point."""
        return QPointF(self._source.left() + (x - self._ox) / self._s, self._source.top() + (y - self._oy) / self._s)

    def paintEvent(self, event) -> None:
        if self.collapsed:
            self._paint_button()
            return
        if self._pixmap is None:
            return
        painter = QPainter(self)
        painter.fillRect(self.rect(), self.colors.qcolor("background"))  # the strip above the thumbnail
        painter.drawPixmap(1, 1 + CLOSE, self._pixmap)
        painter.setPen(QPen(QColor(self.colors.border), 1))
        painter.drawRect(0, 0, self.width() - 1, self.height() - 1)
        painter.setPen(QPen(SELECTION, 2))
        painter.setBrush(QColor(SELECTION.red(), SELECTION.green(), SELECTION.blue(), 40))
        painter.drawRect(self.viewport_rect())
        box = self.close_rect()
        painter.setPen(QPen(QColor(self.colors.border), 1))
        painter.setBrush(self.colors.qcolor("button"))
        painter.drawRect(box)
        painter.setPen(QPen(QColor(self.colors.glyph), 1.5))
        painter.drawLine(box.topLeft() + QPoint(4, 4), box.bottomRight() - QPoint(3, 3))
        painter.drawLine(box.bottomLeft() + QPoint(4, -3), box.topRight() + QPoint(-3, 4))
        painter.end()

    def _paint_button(self) -> None:
        """The collapsed minimap: a framed button with a small thumbnail-and-outline glyph."""
        painter = QPainter(self)
        painter.setPen(QPen(QColor(self.colors.border), 1))
        painter.setBrush(self.colors.qcolor("button"))
        painter.drawRect(0, 0, self.width() - 1, self.height() - 1)
        painter.setPen(QPen(QColor(self.colors.glyph), 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(5, 5, self.width() - 11, self.height() - 11)
        painter.setPen(QPen(SELECTION, 2))
        painter.drawRect(7, 8, 6, 5)
        painter.end()

    def mousePressEvent(self, event) -> None:
        if self.collapsed:
            self.set_collapsed(False)
        elif event.position().y() < CLOSE:  # the strip above the thumbnail: its close box, or nothing
            if self.close_rect().contains(event.position().toPoint()):
                self.set_collapsed(True)
        else:
            self._go(event)

    def mouseMoveEvent(self, event) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton and not self.collapsed and event.position().y() >= CLOSE:
            self._go(event)

    def _go(self, event) -> None:
        pos = event.position()
        self.view.centerOn(self.to_scene(pos.x(), pos.y()))
        self.update()
