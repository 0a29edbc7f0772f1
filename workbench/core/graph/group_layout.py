"""Hierarchical layout: each group's interior laid out on its own, then its parent with groups as boxes.

:func:`plan_group_layout` runs once per model: for the root and every group (a *container*) it
takes the container's items (its direct nodes and child groups), the edges between them (a graph
edge ``a -> b`` belongs to the innermost container holding both ends), layers them by longest
path and orders each layer with igraph's Sugiyama crossing reduction (as
:mod:`workbench.core.graph.layout` does for the flat graph). Horizontal positions are fixed then,
from every group's *fully expanded* width, so they never depend on which groups are open.

:func:`place` turns a set of expanded groups into scene coordinates: rows of a container are
stacked top to bottom, each as tall as its tallest item; items are top-aligned in their row; a
collapsed group is a ``BOX_H`` high box at the left of its slot, ``BOX_W`` wide or as wide as its
title needs up to ``MAX_BOX_W`` (:mod:`workbench.core.graph.box_widths`; the slot is as wide as the
group fully expanded or as its box, so opening it grows the frame to the right and down). Therefore expanding or
collapsing a group ``G``:

* never changes the x of any node or box;
* never moves anything that is not below ``G``'s row (in ``G``'s container and in each enclosing
  container); what is below slides straight down, by the height ``G``'s row gained, rigidly
  per container;
* is undone exactly by the opposite action (positions are a function of the open set only).

**Edge routes.** An edge between items of a container that skips rows gets one *passage* per
skipped row: a vertical run through the row at the x of the edge's Sugiyama dummy vertex. Each
dummy has its own ``CHANNEL_W`` wide slot in its row, packed left to right with the items (at least
``GAP_X`` from any of them), so a passage never crosses a node or box of the row it passes, and
the curve joining two passages stays in the empty ``GAP_Y`` band between rows. A graph edge
between different groups is split into segments: out of each open group holding the producer
(through that group's rows below it, to a sink under its last row), across the innermost
container holding both ends, and into each open group holding the consumer (from a source above
its first row); its route is the passages of all its segments, top to bottom. An edge entering an
open group first runs down a lane beside the frame (``LANE_OFF`` outside its left or right border)
past the title bar, then turns in through the ``ENTRY_H`` band between the title bar and the first
row: it never crosses a group's title (it cut through the titles of the detector case's score_head
and of minilm_l6_v2's encoder). Segments inside a collapsed box are left out, as the edge then ends
at the box.

Pure Python / numpy; never imports Qt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from workbench.core.graph.box_widths import TitleMetrics, collapsed_widths
from workbench.core.graph.hierarchy import Hierarchy
from workbench.core.graph.layout import assign_layers, sugiyama
from workbench.core.progress import CancelToken

#: Node box (scene pixels); matches the canvas's node items.
NODE_W, NODE_H = 150.0, 54.0
#: Collapsed group box (scene pixels): at least ``BOX_W`` wide, wider up to ``MAX_BOX_W`` where its title needs it.
BOX_W, BOX_H = 240.0, 90.0
MAX_BOX_W = 2.5 * BOX_W
#: Column pitch of the Sugiyama x coordinate, gaps between items and rows, frame paddings.
COL_W, GAP_X, GAP_Y = 190.0, 40.0, 40.0
PAD, TITLE_H = 14.0, 34.0
#: Band between an open group's title bar and its first row, where edges entering the group turn in
#: from the lane beside the frame (scene pixels).
ENTRY_H = 20.0
#: Distance of that lane from the frame's left or right border (inside the ``GAP_X`` / ``PAD`` margins).
LANE_OFF = 7.0
#: Width of the slot a long edge's dummy vertex takes in a row it passes (scene pixels).
CHANNEL_W = 12.0
#: Pseudo-items of a container's edges: where an edge enters it from above / leaves it below.
ENTER, LEAVE = -(1 << 40), -(1 << 40) - 1

Segment = tuple[int, tuple[int, int]]  # (container, (item, item)) with items as in Container


@dataclass
class Container:
    """The laid-out interior of one group (``group == -1``: the root).

    ``items`` encode a node ``i`` as ``i`` and a group ``g`` as ``-(g + 1)``; ``rows[k]`` lists
    item positions (indices into ``items``) of layer ``k`` left to right; ``left[k]`` is the item's
    slot left edge relative to the container's content origin; ``width`` the content width.
    ``routes`` maps an (item, item) edge skipping rows to its passages: (row index, x of the
    passage relative to the content origin), one per skipped row, top to bottom.
    """

    group: int
    items: list[int] = field(default_factory=list)
    rows: list[list[int]] = field(default_factory=list)
    left: list[float] = field(default_factory=list)
    slot_w: list[float] = field(default_factory=list)
    width: float = 0.0
    routes: dict[tuple[int, int], list[tuple[int, float]]] = field(default_factory=dict)
    #: item -> its row, for the items of rows that hold a group (rows that can be taller than a node)
    tall_row_of: dict[int, int] = field(default_factory=dict)


@dataclass
class GroupLayoutPlan:
    """Everything :func:`place` needs; computed once per model by :func:`plan_group_layout`."""

    hierarchy: Hierarchy
    containers: dict[int, Container]
    n_nodes: int
    #: graph edge (index into the ``edges`` given to :func:`plan_group_layout`) -> its segments
    #: (container, (item, item)) top to bottom (see ``_container_edges``); only edges that have
    #: passages in some container
    edge_owner: dict[int, list[Segment]] = field(default_factory=dict)
    #: group -> width of its collapsed box, where wider than ``BOX_W`` (its title needs it)
    box_w: dict[int, float] = field(default_factory=dict)

    def box_width(self, g: int) -> float:
        """Width of group ``g``'s box when collapsed (scene pixels)."""
        return self.box_w.get(g, BOX_W)


@dataclass
class Placement:
    """Scene geometry for one set of expanded groups.

    Attributes
    ----------
    centres : np.ndarray
        float64, shape (n_nodes, 2): centre of each shown node; NaN for nodes inside a collapsed group.
    rep : np.ndarray
        int64, shape (n_nodes,): ``-1`` for a shown node, else the collapsed group that stands for it.
    boxes : dict of int to (float, float, float, float)
        Shown group -> (x0, y0, x1, y1): the box of a collapsed group or the frame of an expanded one.
    collapsed : set of int
        The shown groups drawn as boxes (their members are hidden).
    routes : dict of int to list of (float, float, float)
        Graph edge index -> passages (x, y_top, y_bottom), scene pixels, top to bottom: one
        vertical run per row the edge skips in each laid-out container it crosses, after the lane
        beside each open group it enters (see the module docstring), after a first drop to the
        bottom of the producer's row when the producer is shorter than that row; only for shown
        edges that have any.
    """

    centres: np.ndarray
    rep: np.ndarray
    boxes: dict[int, tuple[float, float, float, float]]
    collapsed: set[int]
    routes: dict[int, list[tuple[float, float, float]]] = field(default_factory=dict)


def _container_edges(h: Hierarchy, edges: list[tuple[int, int]]
                     ) -> tuple[dict[int, set[tuple[int, int]]], list[list[Segment]]]:
    """Per container, the (item, item) edges of its items (items encoded as in Container; ``ENTER``
    / ``LEAVE`` for an edge coming into the container from outside / going out of it), and per graph
    edge its segments top to bottom: out of each group holding the producer, across the innermost
    container holding both ends, into each group holding the consumer ([] for a self-loop)."""
    out: dict[int, set[tuple[int, int]]] = {g: set() for g in h.children}
    owner: list[list[Segment]] = []
    node_group, parent = np.asarray(h.node_group).tolist(), list(h.parent)  # plain ints: faster keys
    chains: dict[int, list[int]] = {}  # group -> [group, its parent, ..., -1]

    def chain(g: int) -> list[int]:
        if g not in chains:
            chains[g] = [-1] if g < 0 else [g, *chain(parent[g])]
        return chains[g]

    # per (producer group, consumer group): the common container, the child groups of it holding
    # each end (None: the end is directly in it) and the segments through the groups in between
    pairs: dict[tuple[int, int], tuple[int, int | None, int | None, list[Segment], list[Segment]]] = {}
    for a, b in edges:
        ga, gb = node_group[a], node_group[b]
        if ga == gb:  # most edges: both ends directly in one container
            out[ga].add((a, b))
            owner.append([(ga, (a, b))] if a != b else [])
            continue
        pair = pairs.get((ga, gb))
        if pair is None:
            ca, cb = chain(ga), chain(gb)
            sb = set(cb)
            k = next(k for k, g in enumerate(ca) if g in sb)
            kb = cb.index(ca[k])
            ups = [(ca[j], (-(ca[j - 1] + 1), LEAVE)) for j in range(1, k)]  # out of the producer's groups
            downs = [(cb[j], (ENTER, -(cb[j - 1] + 1))) for j in range(kb - 1, 0, -1)]  # into the consumer's
            for g, key in ups + downs:
                out[g].add(key)
            pair = pairs[(ga, gb)] = (ca[k], -(ca[k - 1] + 1) if k else None, -(cb[kb - 1] + 1) if kb else None,
                                      ups, downs)
        c, ia, ib, ups, downs = pair
        middle = (c, (a if ia is None else ia, b if ib is None else ib))
        out[c].add(middle[1])
        segs = [(ga, (a, LEAVE)), *ups] if ia is not None else []
        segs.append(middle)
        if ib is not None:
            segs += downs
            segs.append((gb, (ENTER, b)))
            out[gb].add((ENTER, b))
        if ia is not None:
            out[ga].add((a, LEAVE))
        owner.append(segs)
    return out, owner


def _order(items: list[int], edges: set[tuple[int, int]], maxiter: int
           ) -> tuple[list[int], list[float], dict[tuple[int, int], list[tuple[float, int]]]]:
    """Layer of each item position, Sugiyama x (column units) and, per (item, item) edge skipping
    layers, its dummy vertices (x in column units, layer); ``maxiter`` crossing-reduction sweeps.

    Items are layered by longest path over the edges between them; edges from ``ENTER`` / to
    ``LEAVE`` are then drawn from one source vertex above the first layer / to one sink below the
    last, so they get dummies in the rows above / below their item (and take part in the
    crossing reduction)."""
    pos = {item: k for k, item in enumerate(items)}
    m = len(items)
    pos[ENTER], pos[LEAVE] = m, m + 1
    real = sorted((pos[a], pos[b]) for a, b in edges if a != ENTER and b != LEAVE)
    layers = assign_layers(m, real) if real else [0] * m
    local = real
    top, bottom = 0, max(layers, default=0)
    # edges in from above an item of the first row, or out below one of the last, skip no row: left out
    virtual = [(pos[a], pos[b]) for a, b in edges
               if (a == ENTER and layers[pos[b]] > top) or (b == LEAVE and layers[pos[a]] < bottom)]
    if virtual:  # the source at layer 0, the items from 1, the sink below them
        layers = [lay + 1 for lay in layers] + [0, bottom + 2]
        local = sorted(real + virtual)
    code = [*items, ENTER, LEAVE]
    if len(set(layers[:m])) < m:  # some layer holds two items: igraph orders them and routes the long edges
        xs, routing = sugiyama(len(layers), local, layers, maxiter)
        dummies = {(code[a], code[b]): pts for (a, b), pts in zip(local, routing, strict=True) if pts}
        return layers[:m], xs[:m], dummies
    return layers[:m], [0.0] * m, _column_dummies(local, layers, code)


def _column_dummies(local: list[tuple[int, int]], layers: list[int], code: list[int]
                    ) -> dict[tuple[int, int], list[tuple[float, int]]]:
    """Dummies of the long edges of a single column of items (one item per layer, at x = 0): each
    edge takes the first column right of the items that is free over all the layers it skips
    (interval colouring, longest edges outside)."""
    long = sorted(((layers[a], layers[b], a, b) for a, b in local if layers[b] - layers[a] > 1),
                  key=lambda t: (t[0] - t[1], t[0], t[2], t[3]))
    free_from: dict[int, set[int]] = {}  # column -> layers taken
    out: dict[tuple[int, int], list[tuple[float, int]]] = {}
    for la, lb, a, b in long:
        span = set(range(la + 1, lb))
        col = 1
        while span & free_from.setdefault(col, set()):
            col += 1
        free_from[col] |= span
        out[(code[a], code[b])] = [(float(col), lay) for lay in range(la + 1, lb)]
    return out


def _pack(c: Container, layers: list[int], xs: list[float],
          dummies: dict[tuple[int, int], list[tuple[float, int]]]) -> None:
    """Rows of ``c`` and the slots of its items and dummy channels, left to right per row at
    least ``GAP_X`` apart (x from the Sugiyama column, pushed right where the row is full)."""
    m = len(c.items)
    if not dummies:
        _pack_items(c, layers, xs)
        return
    row_of_layer = {lay: r for r, lay in enumerate(sorted(set(layers)))}
    c.rows = [[] for _ in row_of_layer]
    slots: list[list[tuple[float, int, int]]] = [[] for _ in row_of_layer]  # (column, kind, index)
    for k in range(m):
        slots[row_of_layer[layers[k]]].append((xs[k], 0, k))
    keys = sorted(dummies)
    for d, key in enumerate(keys):
        for x, lay in dummies[key]:
            r = row_of_layer.get(lay)
            if r is not None:  # a layer holding only dummies has no row: the edge crosses the gap
                slots[r].append((x, 1, d))
    c.left = [0.0] * m
    routes: dict[int, list[tuple[int, float]]] = {}
    slot_w, left_of, rows = c.slot_w, c.left, c.rows
    lo, hi = np.inf, -np.inf
    for r, row in enumerate(slots):
        right = -np.inf
        row.sort()
        for n, (x, kind, idx) in enumerate(row):
            if kind == 0:
                rows[r].append(idx)
                left = left_of[idx] = max(x * COL_W, right + GAP_X)
                right = left + slot_w[idx]
            else:  # centred under the column's node centre when there is room
                left = max(x * COL_W + (NODE_W - CHANNEL_W) / 2, right + GAP_X)
                right = left + CHANNEL_W
                routes.setdefault(idx, []).append((r, left + CHANNEL_W / 2))
            if n == 0:  # the left-most slot of the row
                lo = min(lo, left)
        hi = max(hi, right)
    if any(pts[0][1] != x for pts in routes.values() for _r, x in pts):  # some route steps sideways
        _straighten(routes, [[(left_of[idx], left_of[idx] + slot_w[idx]) for _x, kind, idx in row if kind == 0]
                             for row in slots])
    if m:
        c.left = [x - lo for x in left_of]
        c.width = hi - lo
        c.routes = {keys[d]: [(r, x - lo) for r, x in pts] for d, pts in routes.items()}


def _straighten(routes: dict[int, list[tuple[int, float]]], items: list[list[tuple[float, float]]]) -> None:
    """Give each route one x through all the rows it passes where that is free, so it runs as one
    straight line instead of stepping sideways between rows: the first of its own passages' x
    (nearest to all of them first) that keeps ``GAP_X`` from every item and ``CHANNEL_W`` from
    every other passage of those rows. Longest routes first; a route without such an x keeps its x."""
    half = CHANNEL_W / 2
    channels: list[dict[int, float]] = [{} for _ in items]  # row -> route -> passage x
    for d, pts in routes.items():
        for r, x in pts:
            channels[r][d] = x

    def free(r: int, x: float, d: int) -> bool:
        if any(a - GAP_X < x + half and x - half < b + GAP_X for a, b in items[r]):
            return False
        return all(abs(x - other) >= 2 * CHANNEL_W for k, other in channels[r].items() if k != d)

    for d in sorted(routes, key=lambda d: (-len(routes[d]), d)):
        pts = routes[d]
        if len(pts) < 2 or len({x for _r, x in pts}) == 1:
            continue
        for cand in sorted({x for _r, x in pts}, key=lambda cx: (sum(abs(cx - x) for _r, x in pts), cx)):
            if all(free(r, cand, d) for r, _x in pts):
                routes[d] = [(r, cand) for r, _x in pts]
                for r, _x in pts:
                    channels[r][d] = cand
                break


def _pack_items(c: Container, layers: list[int], xs: list[float]) -> None:
    """:func:`_pack` of a container without long edges (most): items only."""
    m = len(c.items)
    rows: dict[int, list[int]] = {}
    for k in sorted(range(m), key=lambda k: (layers[k], xs[k])):
        rows.setdefault(layers[k], []).append(k)
    c.rows = [rows[lay] for lay in sorted(rows)]
    left, slot_w = [0.0] * m, c.slot_w
    hi = -np.inf
    for row in c.rows:
        right = -np.inf
        for k in row:
            left[k] = max(xs[k] * COL_W, right + GAP_X)
            right = left[k] + slot_w[k]
        hi = max(hi, right)
    if m:
        lo = min(left)
        c.left = [x - lo for x in left]
        c.width = hi - lo


def plan_group_layout(h: Hierarchy, n_nodes: int, edges: list[tuple[int, int]], *,
                      titles: TitleMetrics | None = None, cancel: CancelToken | None = None) -> GroupLayoutPlan:
    """Order every container's items and fix their horizontal slots (see the module docstring).

    Parameters
    ----------
    h : Hierarchy
        Groups of the ``n_nodes`` nodes (``len(h.node_group) == n_nodes``).
    edges : list of (int, int)
        Producer -> consumer node index pairs (``GraphStructure.edges``).
    titles : TitleMetrics, optional
        The font collapsed boxes' titles are drawn in: a box is as wide as its title needs, up to
        ``MAX_BOX_W``; without it every box is ``BOX_W`` wide.
    cancel : CancelToken, optional
        Checked between containers; raises ``Cancelled``.
    """
    per, owner = _container_edges(h, edges)
    # sweeps per container as layout.py gives the flat graph: 100 on small models, 10 from 20,000 nodes
    maxiter = max(10, min(100, 200_000 // max(n_nodes, 1)))
    box_w = collapsed_widths(h.titles, titles, BOX_W, MAX_BOX_W)
    containers: dict[int, Container] = {}
    # children before parents: a parent's slots need its child groups' full widths
    for g in sorted(h.children, key=lambda g: -(h.depth[g] if g >= 0 else 0)):
        if cancel:
            cancel.check()
        c = Container(g, [*h.direct[g], *(-(k + 1) for k in h.children[g])])
        layers, xs, dummies = _order(c.items, per[g], maxiter)
        c.slot_w = [NODE_W if it >= 0 else max(box_w.get(-(it + 1), BOX_W), containers[-(it + 1)].width + 2 * PAD)
                    for it in c.items]
        _pack(c, layers, xs, dummies)
        containers[g] = c
    for c in containers.values():
        for r, row in enumerate(c.rows):
            if any(c.items[k] < 0 for k in row):
                c.tall_row_of.update((c.items[k], r) for k in row)
    routed = {e: segs for e, segs in enumerate(owner)
              if any(key[0] == ENTER or key in containers[g].routes or key[0] in containers[g].tall_row_of
                     for g, key in segs)}
    return GroupLayoutPlan(h, containers, n_nodes, routed, box_w)


def place(plan: GroupLayoutPlan, expanded: set[int] | frozenset[int]) -> Placement:
    """Scene coordinates of nodes and group boxes with exactly ``expanded`` groups open.

    Groups inside a collapsed group are hidden whatever their own state. The root's content
    starts at (0, 0). Deterministic; see the module docstring for what moves when ``expanded``
    changes.
    """
    h = plan.hierarchy
    centres = np.full((plan.n_nodes, 2), np.nan)
    rep = np.full(plan.n_nodes, -1, dtype=np.int64)
    out = Placement(centres, rep, {}, set())
    heights: dict[int, float] = {}

    def height(g: int) -> float:  # content height of an open container
        if g not in heights:
            c = plan.containers[g]
            total = 0.0
            for row in c.rows:
                total += max(_item_h(c.items[k]) for k in row) + GAP_Y
            heights[g] = max(total - GAP_Y, 0.0)
        return heights[g]

    def _item_h(item: int) -> float:
        if item >= 0:
            return NODE_H
        g = -(item + 1)
        return TITLE_H + ENTRY_H + height(g) + PAD if g in expanded else BOX_H

    spans: dict[int, tuple[float, list[tuple[float, float]]]] = {}  # laid-out container -> x0, row spans

    def lay(g: int, x0: float, y0: float) -> None:
        c = plan.containers[g]
        y = y0
        rows: list[tuple[float, float]] = []
        spans[g] = (x0, rows)
        for row in c.rows:
            row_h = 0.0
            for k in row:
                item, left = c.items[k], x0 + c.left[k]
                if item >= 0:
                    centres[item] = (left + NODE_W / 2, y + NODE_H / 2)
                    row_h = max(row_h, NODE_H)
                    continue
                child = -(item + 1)
                if child in expanded:
                    hh = TITLE_H + ENTRY_H + height(child) + PAD
                    out.boxes[child] = (left, y, left + c.slot_w[k], y + hh)
                    lay(child, left + PAD, y + TITLE_H + ENTRY_H)
                else:
                    hh = BOX_H
                    out.boxes[child] = (left, y, left + plan.box_width(child), y + BOX_H)
                    out.collapsed.add(child)
                    rep[h.members(child)] = child
                row_h = max(row_h, hh)
            rows.append((y, y + row_h))
            y += row_h + GAP_Y

    lay(-1, 0.0, 0.0)
    _route(plan, out, spans)
    return out


def _route(plan: GroupLayoutPlan, out: Placement, spans: dict[int, tuple[float, list[tuple[float, float]]]]) -> None:
    """Passages of the shown edges that skip rows, from the laid-out containers' rows (``spans``:
    container -> (content x0, [(row top, row bottom)])); segments in containers not laid out
    (inside a collapsed box) are left out. An edge whose producer (a node or a collapsed box) is
    shorter than its row first drops straight down to the row's bottom (items are top-aligned,
    so the space below it is free), not across the taller boxes beside it."""
    cache: dict[Segment, list[tuple[float, float, float]]] = {}
    for e, segs in plan.edge_owner.items():
        route: list[tuple[float, float, float]] = []
        for seg in segs:
            if seg[0] not in spans:
                continue
            if not route:
                route += _lead(plan, out, spans, seg)
            part = cache.get(seg)
            if part is None:
                x0, rows = spans[seg[0]]
                part = [(x0 + x, *rows[r]) for r, x in plan.containers[seg[0]].routes.get(seg[1], ())]
                if seg[1][0] == ENTER:
                    part.insert(0, _lane(out, seg, part[0][0] if part else None))
                cache[seg] = part
            route += part
        if route:
            out.routes[e] = route


def _lane(out: Placement, seg: Segment, target: float | None) -> tuple[float, float, float]:
    """The passage of an edge entering open group ``seg[0]`` from above: straight down beside the frame,
    :data:`LANE_OFF` outside its left or right border (the one nearer ``target``, the x the edge heads
    for inside: its first passage, else its consumer's centre), from the frame's top to the bottom of
    its title bar; the edge then turns in through the ``ENTRY_H`` band under the title, so it never
    crosses the title."""
    g, (_a, b) = seg
    x0, y0, x1, _y1 = out.boxes[g]
    if target is None:
        if b >= 0:
            target = float(out.centres[b, 0])
        else:
            bx0, _by0, bx1, _by1 = out.boxes[-(b + 1)]
            target = (bx0 + bx1) / 2
    x = x0 - LANE_OFF if target - x0 <= x1 - target else x1 + LANE_OFF
    return x, y0, y0 + TITLE_H


def _lead(plan: GroupLayoutPlan, out: Placement, spans: dict[int, tuple[float, list[tuple[float, float]]]],
          seg: Segment) -> list[tuple[float, float, float]]:
    """The drop from the producer item of ``seg`` to the bottom of its row, or [] when it fills the row."""
    g, (item, _b) = seg
    r = plan.containers[g].tall_row_of.get(item)
    if r is None:
        return []
    if item >= 0:
        x, bottom = float(out.centres[item, 0]), float(out.centres[item, 1]) + NODE_H / 2
    elif -(item + 1) in out.collapsed:
        x0, _y0, x1, bottom = out.boxes[-(item + 1)]
        x = (x0 + x1) / 2
    else:  # an open group: the edge leaves from inside it
        return []
    row_bottom = spans[g][1][r][1]
    return [(x, bottom, row_bottom)] if row_bottom > bottom + 1.0 else []
