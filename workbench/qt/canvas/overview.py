"""One item that draws every node of the graph as filled rectangles, batched by colour.

Shown instead of the per-node items when zoomed out: painting 20,000 QGraphicsItems takes
seconds, painting a few batched calls takes milliseconds. A paint draws only the rectangles meeting
the exposed area (culled with numpy, drawn with one ``drawRects`` per colour): a view of a few hundred
nodes of a 20,000-node graph draws those few hundred. Do not set a cache mode on it (measured slower here).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from workbench.qt.canvas.colors import KERNEL_BAND, SELECTION
from workbench.qt.canvas.items import CanvasState, kernel_band
from workbench.qt.canvas.scene_data import NODE_H, NODE_W


class _Batch:
    """Rectangles drawn in one call: their scene top-left corners (float64, shape (n,)) and QRectF objects."""

    def __init__(self, fill: QColor | None, x0: np.ndarray, y0: np.ndarray, rects: list[QRectF]):
        self.fill = fill
        self.x0, self.y0 = x0, y0
        self.rects = rects
        self.box = QRectF(float(x0.min()), float(y0.min()), float(x0.max() - x0.min()) + NODE_W,
                          float(y0.max() - y0.min()) + NODE_H) if len(x0) else QRectF()

    def meeting(self, exposed: QRectF) -> list[QRectF]:
        """The rectangles that intersect ``exposed`` (scene; an edge shared counts)."""
        if exposed.contains(self.box):
            return self.rects
        keep = np.flatnonzero((self.x0 <= exposed.right()) & (self.x0 + NODE_W >= exposed.left())
                              & (self.y0 <= exposed.bottom()) & (self.y0 + NODE_H >= exposed.top()))
        rects = self.rects
        return [rects[j] for j in keep.tolist()]


def _batch(fill: QColor | None, x0: np.ndarray, y0: np.ndarray, rects: list, idx: np.ndarray) -> _Batch:
    """The batch of nodes ``idx`` (int64) of the graph whose corners are ``x0`` / ``y0`` and rectangles ``rects``."""
    return _Batch(fill, x0[idx], y0[idx], [rects[i] for i in idx.tolist()])


class OverviewItem(QGraphicsItem):
    """Draws ``state``'s nodes with their fills; selected nodes get a translucent fill over theirs.

    ``drawn`` is how many node rectangles the last paint drew (fills; selected ones not counted twice)."""

    def __init__(self, state: CanvasState):
        super().__init__()
        self.state = state
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)  # option.exposedRect
        self._bounds = state.data.bounds.adjusted(-4, -4, 4, 4)
        d = state.data  # every node's rectangle, made once (a hidden node's is NaN and never drawn)
        self._rects = [QRectF(x, y, NODE_W, NODE_H) for x, y in zip(d.x0.tolist(), d.y0.tolist(), strict=True)]
        self._groups: list[_Batch] = []
        self._selected: _Batch | None = None
        self._bands: tuple[dict | None, _Batch | None] = (None, None)  # (the state's kernels they were made of, bars)
        self.drawn = 0
        self.refresh_colors()

    def boundingRect(self) -> QRectF:
        return self._bounds

    def refresh_colors(self) -> None:
        """Re-group the node rectangles by fill colour (call after the fills change)."""
        d = self.state.data
        keys = self.state.fill_keys
        shown = np.flatnonzero(~np.isnan(d.x0))  # NaN: hidden in a collapsed group
        members: dict[object, list[int]] = {}  # fill key -> its shown nodes, keys in order of first use
        for i in shown.tolist():
            members.setdefault(keys[i], []).append(i)
        fills = self.state.fills
        self._groups = [_batch(fills[idx[0]], d.x0, d.y0, self._rects, np.array(idx, dtype=np.int64))
                        for idx in members.values()]
        self._bands = (None, None)
        self.update()

    def kernel_bars(self) -> _Batch | None:
        """The bars that mark the shown integer kernels (``state.kernels``; ``items.kernel_band``), one batch drawn
        in one call; None for a model without kernels. Made again when the canvas maps new kernels (a new dict)."""
        kernels = self.state.kernels
        if self._bands[0] is not kernels:
            d = self.state.data
            idx = np.fromiter(sorted(kernels), dtype=np.int64, count=len(kernels))
            idx = idx[~np.isnan(d.x0[idx])]
            bars = [kernel_band(x, y) for x, y in zip(d.x0[idx].tolist(), d.y0[idx].tolist(), strict=True)]
            self._bands = (kernels, _Batch(KERNEL_BAND, d.x0[idx], d.y0[idx], bars) if bars else None)
        return self._bands[1]

    def refresh_selection(self) -> None:
        d = self.state.data
        idx = np.fromiter(sorted(self.state.selected), dtype=np.int64, count=len(self.state.selected))
        idx = idx[~np.isnan(d.x0[idx])]
        self._selected = _batch(None, d.x0, d.y0, self._rects, idx) if len(idx) else None
        self.update()

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        exposed = option.exposedRect
        drawn = [(batch.fill, batch.meeting(exposed)) for batch in self._groups]
        self.drawn = sum(len(rects) for _fill, rects in drawn)
        painter.setPen(Qt.PenStyle.NoPen)
        for fill, rects in drawn:
            if rects:
                painter.setBrush(fill)
                painter.drawRects(rects)
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        if lod > 0.08:  # outlines only where a node is several pixels large
            painter.setPen(QPen(QColor("#606060"), 0))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            for _fill, rects in drawn:
                if rects:
                    painter.drawRects(rects)
        bars = self.kernel_bars() if self.state.kernels and lod > 0.08 else None
        if bars is not None:  # the integer kernels' "INT" marks, as bars under where the op type would be (at 0.08
            # a bar is 1.1 px high; the fitted 20,000-node grid at 0.046 drew 10,000 of 0.6 px, 8 to 14 ms a paint)
            rects = bars.meeting(exposed)
            if rects:
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(bars.fill)
                painter.drawRects(rects)
        if self._selected is not None:  # a translucent fill: wide outlines of 20k rects are slow
            rects = self._selected.meeting(exposed)
            if rects:
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(_SELECTED_FILL)
                painter.drawRects(rects)


_SELECTED_FILL = QColor(SELECTION.red(), SELECTION.green(), SELECTION.blue(), 170)
