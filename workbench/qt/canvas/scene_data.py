"""Geometry of a laid-out graph, built off the GUI thread.

QPainterPath and QRectF are plain value types, safe to build in a worker; the items only draw
what is prepared here. Node rectangles are numpy arrays, so hit tests and visibility queries over
20,000 nodes are vectorized.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPainterPath

from workbench.core.api import GraphStructure

NODE_W = 150.0
NODE_H = 46.0
TILE = 2400.0  # side of the square scene tiles that group edge paths
ARROW = 6.0


@dataclass
class EdgeTile:
    """Edges whose midpoint falls in one square of the scene; the curve path is built on first paint."""

    rect: QRectF
    segments: list[tuple[float, float, float, float]]  # (xa, ya, xb, yb): producer bottom, consumer top
    _path: QPainterPath | None = None

    def path(self) -> QPainterPath:
        if self._path is None:
            self._path = QPainterPath()
            for xa, ya, xb, yb in self.segments:
                _edge_path(self._path, xa, ya, xb, yb)
        return self._path


@dataclass
class SceneData:
    """Everything the canvas draws for one model.

    ``x0, y0, x1, y1`` (float64, shape (n,)) are node rectangles in scene pixels, index = node
    index in ``structure.names``.
    """

    structure: GraphStructure
    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    index: dict[str, int]
    bounds: QRectF
    edge_tiles: list[EdgeTile] = field(default_factory=list)
    straight_edges: QPainterPath = field(default_factory=QPainterPath)
    badge_points: list[tuple[QPointF, str]] = field(default_factory=list)
    #: per-edge dtype and quantized tensor of an already-quantized model (``api.EdgeQuant``), else None
    edge_quant: object | None = None

    def edge_path(self, nodes: set[int], limit: int = 2000) -> QPainterPath:
        """Curves of the edges touching ``nodes`` (at most ``limit`` edges), for highlighting."""
        path = QPainterPath()
        if not nodes or len(nodes) > limit:
            return path
        xs = (self.x0 + self.x1) / 2
        count = 0
        for a, b in self.structure.edges:
            if a in nodes or b in nodes:
                _edge_path(path, float(xs[a]), float(self.y1[a]), float(xs[b]), float(self.y0[b]))
                count += 1
                if count >= limit:
                    break
        return path

    @property
    def names(self) -> list[str]:
        return self.structure.names

    def __len__(self) -> int:
        return len(self.structure.names)

    def in_rect(self, rect: QRectF) -> np.ndarray:
        """Indices (int64, shape (k,)) of nodes whose rectangle intersects ``rect``."""
        mask = ((self.x1 >= rect.left()) & (self.x0 <= rect.right())
                & (self.y1 >= rect.top()) & (self.y0 <= rect.bottom()))
        return np.flatnonzero(mask)

    def at(self, point: QPointF) -> int | None:
        """Index of the (last drawn) node containing ``point``, or None."""
        hits = self.in_rect(QRectF(point.x(), point.y(), 0.0, 0.0))
        return int(hits[-1]) if len(hits) else None

    def rect(self, i: int) -> QRectF:
        return QRectF(self.x0[i], self.y0[i], self.x1[i] - self.x0[i], self.y1[i] - self.y0[i])


def _fill_missing(names: list[str], positions: dict[str, tuple[float, float]]) -> np.ndarray:
    """Centres (float64, shape (n, 2)); nodes absent from ``positions`` go in a row below the rest."""
    xy = np.zeros((len(names), 2))
    missing = []
    for i, name in enumerate(names):
        p = positions.get(name)
        if p is None:
            missing.append(i)
        else:
            xy[i] = p
    if missing:
        base = (xy[:, 1].max() if len(missing) < len(names) else 0.0) + 2 * NODE_H
        for k, i in enumerate(missing):
            xy[i] = (k * (NODE_W + 40.0), base)
    return xy


def edge_curve(path: QPainterPath, xa: float, ya: float, xb: float, yb: float) -> None:
    """Add the curve of one edge to ``path`` (the one the canvas draws; see :func:`_edge_path`)."""
    _edge_path(path, xa, ya, xb, yb)


def _edge_path(path: QPainterPath, xa: float, ya: float, xb: float, yb: float) -> None:
    """Cubic from the producer's bottom centre to the consumer's top centre, with an arrow head."""
    dy = max(yb - ya, NODE_H) * 0.5
    path.moveTo(xa, ya)
    path.cubicTo(xa, ya + dy, xb, yb - dy, xb, yb)
    path.moveTo(xb - ARROW, yb - ARROW * 1.4)
    path.lineTo(xb, yb)
    path.lineTo(xb + ARROW, yb - ARROW * 1.4)


def build_scene_data(structure: GraphStructure, positions: dict[str, tuple[float, float]]) -> SceneData:
    """Node rectangles, tiled edge paths and the straight-edge overview path of a laid-out graph."""
    xy = _fill_missing(structure.names, positions)
    cx, cy = xy[:, 0], xy[:, 1]
    data = SceneData(structure, cx - NODE_W / 2, cy - NODE_H / 2, cx + NODE_W / 2, cy + NODE_H / 2,
                     {n: i for i, n in enumerate(structure.names)}, QRectF())
    if len(cx):
        data.bounds = QRectF(float(data.x0.min()), float(data.y0.min()),
                             float(data.x1.max() - data.x0.min()), float(data.y1.max() - data.y0.min()))
    # plain lists: numpy scalars are slow to convert one by one in a 20,000-node loop
    xs, top, bottom = cx.tolist(), data.y0.tolist(), data.y1.tolist()
    tiles: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}
    straight = data.straight_edges
    for e, (a, b) in enumerate(structure.edges):
        xa, ya, xb, yb = xs[a], bottom[a], xs[b], top[b]
        tiles.setdefault((int((xa + xb) // (2 * TILE)), int((ya + yb) // (2 * TILE))), []).append((xa, ya, xb, yb))
        straight.moveTo(xa, ya)
        straight.lineTo(xb, yb)
        if e in structure.edge_badges:
            data.badge_points.append((QPointF((xa + xb) / 2, (ya + yb) / 2), structure.edge_badges[e]))
    for segments in tiles.values():
        x_lo = min(min(seg[0], seg[2]) for seg in segments)
        x_hi = max(max(seg[0], seg[2]) for seg in segments)
        y_lo = min(min(seg[1], seg[3]) for seg in segments)
        y_hi = max(max(seg[1], seg[3]) for seg in segments)
        # the curve's control points share the end points' x and lie at most NODE_H / 2 beyond
        # their y: the end points' box grown by NODE_H bounds the tile (arrow heads included)
        data.edge_tiles.append(EdgeTile(QRectF(x_lo - NODE_H, y_lo - NODE_H,
                                               x_hi - x_lo + 2 * NODE_H, y_hi - y_lo + 2 * NODE_H), segments))
    return data
