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

from workbench.core.api import GraphStructure, GroupLayoutPlan, Hierarchy, Placement, place
from workbench.qt.canvas.badge_spots import badge_spot, head_rects, title_rects

NODE_W = 150.0  # the same as workbench.core.graph.group_layout.NODE_W / NODE_H (the layout spaces by them)
NODE_H = 54.0
TILE = 2400.0  # side of the square scene tiles that group edge paths
ARROW = 6.0
# unrouted layouts only (positions given without routes): edges spanning a row (> LONG_EDGE) bow
# right by up to 0.75 * BOW
LONG_EDGE, BOW = 100.0, 320.0
#: Height of an open group's title bar and width of the chevron hit area (scene pixels).
TITLE_BAR, CHEVRON_W = 30.0, 30.0
#: ends of a long unrouted edge this close across (scene px) are stacked: with no box between them the edge runs
#: straight down (the layout's x of one column can differ by a pixel or two)
STACKED = 16.0

#: A routed edge's passages: (x, y_top, y_bottom) vertical runs, top to bottom (``Placement.routes``).
Route = tuple[tuple[float, float, float], ...]


def bow_of(span: float) -> float:
    """Sideways control-point offset of an edge spanning ``span`` pixels down: 0 for an edge into
    the next row, else enough that the curve (which reaches 0.75 of it) clears a box of the rows
    it skips (half a group box is 120 px), growing with the span up to ``BOW``."""
    return min(BOW, 0.3 * span + 120.0) if span > LONG_EDGE else 0.0


@dataclass
class EdgeTile:
    """Edges whose midpoint falls in one square of the scene; the curve path is built on first paint."""

    rect: QRectF
    # (xa, ya, xb, yb, route): producer bottom, consumer top, passages (None: a plain curve)
    segments: list[tuple[float, float, float, float, Route | None]]
    bow: bool = True
    _path: QPainterPath | None = None

    def path(self) -> QPainterPath:
        if self._path is None:
            self._path = QPainterPath()
            for xa, ya, xb, yb, route in self.segments:
                _edge_path(self._path, xa, ya, xb, yb, route, self.bow)
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
    #: hierarchy (None for a flat picture): the plan, the open groups and their placement
    plan: GroupLayoutPlan | None = None
    expanded: frozenset[int] = frozenset()
    placement: Placement | None = None
    #: shown groups: ids and boxes (float64, shape (k,)), drawn by GroupsItem
    group_ids: list[int] = field(default_factory=list)
    gx0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gy0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gx1: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gy1: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: per node: x, top and bottom of what its edges attach to (itself, or its collapsed group's box)
    anchors: tuple[list[float], list[float], list[float]] = ((), (), ())
    #: edge index -> passages of a routed edge (one per row it skips); see :func:`edge_curve`
    routes: dict[int, Route] = field(default_factory=dict)
    #: True when the layout routes long edges (then no edge bows; see ``bow_of``)
    routed: bool = False

    @property
    def hierarchy(self) -> Hierarchy | None:
        return self.plan.hierarchy if self.plan is not None else None

    def shown(self, i: int) -> bool:
        """False for a node hidden inside a collapsed group."""
        return not np.isnan(self.x0[i])

    def group_at(self, point: QPointF) -> int | None:
        """Innermost shown group whose box contains ``point`` (a collapsed box or an open frame), or None."""
        x, y = point.x(), point.y()
        hits = np.flatnonzero((self.gx0 <= x) & (self.gx1 >= x) & (self.gy0 <= y) & (self.gy1 >= y))
        if not len(hits):
            return None
        h = self.hierarchy
        return max((self.group_ids[k] for k in hits.tolist()), key=lambda g: h.depth[g])

    def hidden_in_rect(self, rect: QRectF) -> np.ndarray:
        """Indices (int64) of hidden nodes whose collapsed box intersects ``rect``."""
        if self.placement is None or not self.placement.collapsed:
            return np.zeros(0, dtype=np.int64)
        mask = ((self.gx1 >= rect.left()) & (self.gx0 <= rect.right())
                & (self.gy1 >= rect.top()) & (self.gy0 <= rect.bottom()))
        hit = [g for g in (self.group_ids[k] for k in np.flatnonzero(mask).tolist()) if g in self.placement.collapsed]
        h = self.hierarchy
        return np.concatenate([h.members(g) for g in hit]) if hit else np.zeros(0, dtype=np.int64)

    def group_rect(self, g: int) -> QRectF:
        x0, y0, x1, y1 = self.placement.boxes[g]
        return QRectF(x0, y0, x1 - x0, y1 - y0)

    def edge_path(self, nodes: set[int], limit: int = 2000) -> QPainterPath:
        """Curves of the edges touching ``nodes`` (at most ``limit`` edges), for highlighting."""
        path = QPainterPath()
        if not nodes or len(nodes) > limit:
            return path
        xs, top, bottom = self.anchors
        count = 0
        for e, (a, b) in enumerate(self.structure.edges):
            if (a in nodes or b in nodes) and (xs[a], bottom[a]) != (xs[b], bottom[b]):
                _edge_path(path, xs[a], bottom[a], xs[b], top[b], self.routes.get(e), not self.routed)
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


def edge_curve(path: QPainterPath, xa: float, ya: float, xb: float, yb: float,
               route: Route | None = None, bow: bool = True) -> None:
    """Add the curve of one edge to ``path`` (the one the canvas draws; see :func:`_edge_path`)."""
    _edge_path(path, xa, ya, xb, yb, route, bow)


def edge_midpoint_of(xa: float, ya: float, xb: float, yb: float, route: Route | None, bow: bool = True
                     ) -> tuple[float, float]:
    """A point on the drawn edge half way along it: the middle of its middle passage for a routed
    edge, else the curve at t = 1/2 (x shifted right by 3/4 of its bow, see ``bow_of``)."""
    if route:
        x, top, bottom = route[len(route) // 2]
        return x, (top + bottom) / 2
    return (xa + xb) / 2 + (0.75 * bow_of(yb - ya) if bow else 0.0), (ya + yb) / 2


def edge_polyline(path: QPainterPath, xa: float, ya: float, xb: float, yb: float, route: Route | None,
                  bow: bool = True) -> None:
    """The zoomed-out (hairline) form of an edge: straight segments through its passages (or through
    the bow's apex of an unrouted long edge)."""
    path.moveTo(xa, ya)
    if route:
        for x, top, bottom in route:
            path.lineTo(x, top)
            path.lineTo(x, bottom)
    elif bow and yb - ya > LONG_EDGE:
        path.lineTo((xa + xb) / 2 + 0.75 * bow_of(yb - ya), (ya + yb) / 2)
    path.lineTo(xb, yb)


def _edge_path(path: QPainterPath, xa: float, ya: float, xb: float, yb: float,
               route: Route | None = None, bow: bool = True, arrow: bool = True) -> None:
    """Cubic Beziers from the producer's bottom centre to the consumer's top centre, with an arrow head.

    A routed edge runs straight down through each passage (the rows it skips, between their
    boxes); consecutive runs are joined by cubics with vertical tangents at both ends (in the
    empty band between rows), so the curve is smooth (C1) and leaves and enters its ports
    vertically. Without a route, one cubic; with ``bow`` an edge spanning more than ``LONG_EDGE``
    pixels bows to the right (by up to ``0.75 * BOW``), so that it does not run hidden through the
    boxes of the column between its ends. ``arrow``: the arrow head too.
    """
    path.moveTo(xa, ya)
    if route:
        px, py = xa, ya
        for x, top, bottom in route:
            dy = (top - py) * 0.5
            path.cubicTo(px, py + dy, x, top - dy, x, top)
            path.lineTo(x, bottom)
            px, py = x, bottom
        dy = (yb - py) * 0.5
        path.cubicTo(px, py + dy, xb, yb - dy, xb, yb)
    else:
        span = yb - ya
        dy = max(span, NODE_H) * 0.5
        off = bow_of(span) if bow else 0.0
        path.cubicTo(xa + off, ya + dy, xb + off, yb - dy, xb, yb)
    if not arrow:
        return
    path.moveTo(xb - ARROW, yb - ARROW * 1.4)
    path.lineTo(xb, yb)
    path.lineTo(xb + ARROW, yb - ARROW * 1.4)


def build_scene_data(structure: GraphStructure, positions: dict[str, tuple[float, float]] | None = None, *,
                     plan: GroupLayoutPlan | None = None, expanded: frozenset[int] = frozenset(),
                     routes: dict[int, list[tuple[float, float]]] | None = None) -> SceneData:
    """Node rectangles, tiled edge paths and the straight-edge overview path of a laid-out graph.

    Either ``positions`` (node name -> centre, a flat picture; ``routes``, edge index -> waypoints
    (x, y) at the centre line of each layer the edge skips, as ``GraphLayout.routes`` gives them,
    route the long edges through those layers) or ``plan`` (hierarchical: nodes, group boxes and
    edge routes placed by ``workbench.core.api.place(plan, expanded)``). Nodes hidden in a
    collapsed group get NaN rectangles (never hit, never drawn); their edges attach to the box,
    and edges inside one box are dropped.
    """
    placement = place(plan, expanded) if plan is not None else None
    xy = placement.centres if placement is not None else _fill_missing(structure.names, positions or {})
    cx, cy = xy[:, 0], xy[:, 1]
    data = SceneData(structure, cx - NODE_W / 2, cy - NODE_H / 2, cx + NODE_W / 2, cy + NODE_H / 2,
                     {n: i for i, n in enumerate(structure.names)}, QRectF(), plan=plan,
                     expanded=frozenset(expanded), placement=placement)
    # plain lists: numpy scalars are slow to convert one by one in a 20,000-node loop
    xs, top, bottom = cx.tolist(), data.y0.tolist(), data.y1.tolist()
    if placement is not None:
        _add_groups(data, placement, xs, top, bottom)
    if len(cx) and not np.isnan(cx).all():
        x_lo = float(min(np.nanmin(data.x0), data.gx0.min(initial=np.inf)))
        y_lo = float(min(np.nanmin(data.y0), data.gy0.min(initial=np.inf)))
        x_hi = float(max(np.nanmax(data.x1), data.gx1.max(initial=-np.inf)))
        y_hi = float(max(np.nanmax(data.y1), data.gy1.max(initial=-np.inf)))
        data.bounds = QRectF(x_lo, y_lo, x_hi - x_lo, y_hi - y_lo)
    elif len(data.gx0):
        data.bounds = QRectF(float(data.gx0.min()), float(data.gy0.min()),
                             float(data.gx1.max() - data.gx0.min()), float(data.gy1.max() - data.gy0.min()))
    data.anchors = (xs, top, bottom)
    if placement is not None:
        data.routes = {e: tuple(r) for e, r in placement.routes.items()}
        data.routed = True
    elif routes is not None:
        half = NODE_H / 2
        data.routes = {e: tuple((x, y - half, y + half) for x, y in pts) for e, pts in routes.items() if pts}
        data.routed = True
    bow = not data.routed
    if bow:  # a long edge with nothing in its way runs straight down, not bowed (a row folded away in a diff pane)
        data.routes = _straight_runs(structure.edges, data, xs, top, bottom)
    bowed = -np.inf  # right-most point reached by a bowed long edge or a route
    tiles: dict[tuple[int, int], list[tuple[float, float, float, float, Route | None]]] = {}
    straight = data.straight_edges
    rep = placement.rep.tolist() if placement is not None else None
    drawn: set[tuple[int, int]] = set()
    keep_off = title_rects(data.gx0, data.gy0, data.gx1, TITLE_BAR, CHEVRON_W)
    tips: list[tuple[float, float]] = []  # where each drawn edge's arrow head ends
    badged = []  # (text, producer, consumer, xa, ya, xb, yb, route) of each edge with a badge
    for e, (a, b) in enumerate(structure.edges):
        xa, ya, xb, yb = xs[a], bottom[a], xs[b], top[b]
        if rep is not None and (rep[a] >= 0 or rep[b] >= 0):
            key = (a if rep[a] < 0 else -1 - rep[a], b if rep[b] < 0 else -1 - rep[b])
            if key[0] == key[1] or key in drawn:
                continue
            drawn.add(key)
        route = data.routes.get(e)
        tiles.setdefault((int((xa + xb) // (2 * TILE)), int((ya + yb) // (2 * TILE))), []).append(
            (xa, ya, xb, yb, route))
        # zoomed out too: a long edge runs through its passages (or, unrouted, bends right past the column it skips)
        edge_polyline(straight, xa, ya, xb, yb, route, bow)
        if route:
            bowed = max(bowed, max(x for x, _t, _b in route))
        elif bow and yb - ya > LONG_EDGE:
            bowed = max(bowed, max(xa, xb) + 0.75 * bow_of(yb - ya))
        tips.append((xb, yb))
        if e in structure.edge_badges and (rep is None or (rep[a] < 0 and rep[b] < 0)):
            badged.append((structure.edge_badges[e], a, b, xa, ya, xb, yb, route))
    # badges stay off the groups' titles and every drawn arrow head (a short edge's middle is near its own)
    keep_off = np.concatenate([keep_off, head_rects(tips, ARROW)])
    for text, a, b, xa, ya, xb, yb, route in badged:
        spot = badge_spot(QPointF(*edge_midpoint_of(xa, ya, xb, yb, route, bow)), text,
                          lambda p, xa=xa, ya=ya, xb=xb, yb=yb, r=route: _edge_path(p, xa, ya, xb, yb, r, bow, False),
                          keep_off, (data.rect(a), data.rect(b)))
        data.badge_points.append((spot, text))
    for segments in tiles.values():
        x_lo = min(min(seg[0], seg[2], *(p[0] for p in seg[4] or ())) for seg in segments)
        x_hi = max(max(seg[0], seg[2], *(p[0] for p in seg[4] or ())) for seg in segments)
        y_lo = min(min(seg[1], seg[3]) for seg in segments)
        y_hi = max(max(seg[1], seg[3]) for seg in segments)
        # control points lie at most NODE_H / 2 beyond the end points' y (routes: within the end
        # points' y, at the passages' x) and at most BOW right of their x: that box grown by NODE_H
        # bounds the tile (arrow heads included)
        data.edge_tiles.append(EdgeTile(QRectF(x_lo - NODE_H, y_lo - NODE_H,
                                               x_hi - x_lo + 2 * NODE_H + (BOW if bow else 0.0),
                                               y_hi - y_lo + 2 * NODE_H), segments, bow))
    if bowed > data.bounds.right() and not data.bounds.isNull():  # "Fit graph" and pictures show the bows
        data.bounds.setRight(bowed + 10)
    return data


def _straight_runs(edges: list[tuple[int, int]], data: SceneData, xs: list[float], top: list[float],
                   bottom: list[float]) -> dict[int, Route]:
    """Edge index -> a route of one straight run down its middle half, ``((x, y_top, y_bottom),)``, for each long
    edge (more than ``LONG_EDGE`` down) of an unrouted layout whose ends are stacked (at most :data:`STACKED`
    apart across) with no node box between them: such an edge bowed sideways (about 125 px) around boxes that
    were not there, e.g. in a diff pane between a Conv and its MaxPool where the float pane has the Relu the
    quantized file fused. An edge with a box in its way, or between two columns, still bows."""
    runs: dict[int, Route] = {}
    x0, y0, x1, y1 = data.x0, data.y0, data.x1, data.y1
    for e, (a, b) in enumerate(edges):
        xa, ya, xb, yb = xs[a], bottom[a], xs[b], top[b]
        if not abs(xa - xb) <= STACKED or not yb - ya > LONG_EDGE:  # NaN (hidden) ends fail both tests
            continue
        in_way = (x0 < max(xa, xb)) & (x1 > min(xa, xb)) & (y0 < yb) & (y1 > ya)
        in_way[[a, b]] = False
        if not in_way.any():
            quarter = (yb - ya) / 4
            runs[e] = (((xa + xb) / 2, ya + quarter, yb - quarter),)
    return runs


def _add_groups(data: SceneData, placement: Placement, xs: list[float], top: list[float], bottom: list[float]) -> None:
    """Group boxes into ``data``; hidden nodes' edge anchors move to their collapsed box."""
    ids = sorted(placement.boxes)
    data.group_ids = ids
    boxes = np.array([placement.boxes[g] for g in ids], dtype=np.float64).reshape(-1, 4)
    data.gx0, data.gy0, data.gx1, data.gy1 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    for i, g in enumerate(placement.rep.tolist()):
        if g >= 0:
            x0, y0, x1, y1 = placement.boxes[g]
            xs[i], top[i], bottom[i] = (x0 + x1) / 2, y0, y1
