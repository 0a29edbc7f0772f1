"""Edges coloured by the dtype they carry ("dtype" mode of a quantized model) or by their measured SQNR ("error").

One path per dtype, drawn over the grey edges of ``EdgesItem``: straight hairlines when zoomed
out, the same curves as the grey edges when zoomed in. Float edges stay grey (the legend says so).
The selected edge (an edge clicked on the canvas) is drawn thick in the selection colour.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from workbench.qt.canvas import colors
from workbench.qt.canvas.scene_data import SceneData, edge_curve, edge_midpoint_of, edge_polyline

#: dtypes whose edges keep the neutral grey
NEUTRAL = frozenset({"float", "?", ""})


def edge_ends(data: SceneData, e: int) -> tuple[float, float, float, float] | None:
    """(xa, ya, xb, yb) of edge ``e``: where the canvas attaches it (producer bottom centre, consumer
    top centre, or the collapsed group box holding either); None when both ends are in one box."""
    a, b = data.structure.edges[e]
    xs, top, bottom = data.anchors
    if (xs[a], bottom[a]) == (xs[b], bottom[b]):
        return None
    return float(xs[a]), float(bottom[a]), float(xs[b]), float(top[b])


def edge_midpoint(data: SceneData, e: int) -> tuple[float, float] | None:
    """A point half way along edge ``e`` as drawn (``scene_data.edge_midpoint_of``); None when not drawn."""
    ends = edge_ends(data, e)
    if ends is None:
        return None
    return edge_midpoint_of(*ends, data.routes.get(e), not data.routed)


class ColouredEdgesItem(QGraphicsItem):
    """Edges drawn in the colour of a key each (None: left grey); ``keys`` has one entry per
    ``data.structure.edges`` and ``colour_of(key)`` gives the colour."""

    def __init__(self, data: SceneData, keys: list, colour_of):
        super().__init__()
        self.setZValue(-0.5)  # above the grey edges, below the nodes
        self._bounds = data.bounds.adjusted(-20, -20, 20, 20)
        self.data = data
        self._curves: dict = {}
        for e, key in enumerate(keys):
            if key is None:
                continue
            ends = edge_ends(data, e)
            if ends is None:
                continue
            if key not in self._curves:
                self._curves[key] = (colour_of(key), QPainterPath(), QPainterPath())
            _c, curve, straight = self._curves[key]
            route, bow = data.routes.get(e), not data.routed
            edge_curve(curve, *ends, route, bow)
            edge_polyline(straight, *ends, route, bow)  # as the grey overview edges
        self._selected = QPainterPath()

    def keys_drawn(self) -> list:
        """The keys that have coloured edges (sorted)."""
        return sorted(self._curves)

    def set_selected_edge(self, e: int | None) -> None:
        self._selected = QPainterPath()
        ends = edge_ends(self.data, e) if e is not None else None
        if ends is not None:
            edge_curve(self._selected, *ends, self.data.routes.get(e), not self.data.routed)
        self.update()

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        painter.setBrush(Qt.BrushStyle.NoBrush)
        zoomed_out = lod < 0.3
        if not zoomed_out:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        for color, curve, straight in self._curves.values():
            painter.setPen(QPen(color.darker(115), 0 if zoomed_out else 2.6))
            painter.drawPath(straight if zoomed_out else curve)
        if not self._selected.isEmpty():
            painter.setPen(QPen(colors.SELECTION, 0 if zoomed_out else 4.0))
            painter.drawPath(self._selected)


class DtypeEdgesItem(ColouredEdgesItem):
    """Edges coloured by the dtype they carry; float edges stay grey."""

    def __init__(self, data: SceneData, dtypes: list[str]):
        keys = [None if dt in NEUTRAL else colors.normalize_dtype(dt) for dt in dtypes]
        super().__init__(data, keys, colors.dtype_color)

    def dtypes_drawn(self) -> list[str]:
        return self.keys_drawn()


class ErrorEdgesItem(ColouredEdgesItem):
    """Edges coloured by the SQNR (dB) measured on the tensor they carry (0.25 dB steps)."""

    def __init__(self, data: SceneData, values: list[float | None]):
        keys = [None if v is None else round(v * 4) / 4 for v in values]
        super().__init__(data, keys, colors.error_color)
