"""Hierarchical layout: each group's interior laid out on its own, then its parent with groups as boxes.

:func:`plan_group_layout` runs once per model: for the root and every group (a *container*) it
takes the container's items (its direct nodes and child groups), the edges between them (a graph
edge ``a -> b`` belongs to the innermost container holding both ends), layers them by longest
path and orders each layer with igraph's Sugiyama crossing reduction (as
:mod:`workbench.core.graph.layout` does for the flat graph). Horizontal positions are fixed then,
from every group's *fully expanded* width, so they never depend on which groups are open.

:func:`place` turns a set of expanded groups into scene coordinates: rows of a container are
stacked top to bottom, each as tall as its tallest item; items are top-aligned in their row; a
collapsed group is a ``BOX_W`` x ``BOX_H`` box at the left of its slot (the slot is as wide as
the group fully expanded, so opening it grows the frame to the right and down). Therefore expanding or
collapsing a group ``G``:

* never changes the x of any node or box;
* never moves anything that is not below ``G``'s row (in ``G``'s container and in each enclosing
  container); what is below slides straight down, by the height ``G``'s row gained, rigidly
  per container;
* is undone exactly by the opposite action (positions are a function of the open set only).

Pure Python / numpy; never imports Qt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from workbench.core.graph.hierarchy import Hierarchy
from workbench.core.graph.layout import assign_layers
from workbench.core.progress import CancelToken

#: Node box (scene pixels); matches the canvas's node items.
NODE_W, NODE_H = 150.0, 54.0
#: Collapsed group box (scene pixels).
BOX_W, BOX_H = 240.0, 90.0
#: Column pitch of the Sugiyama x coordinate, gaps between items and rows, frame paddings.
COL_W, GAP_X, GAP_Y = 190.0, 40.0, 40.0
PAD, TITLE_H = 14.0, 34.0


@dataclass
class Container:
    """The laid-out interior of one group (``group == -1``: the root).

    ``items`` encode a node ``i`` as ``i`` and a group ``g`` as ``-(g + 1)``; ``rows[k]`` lists
    item positions (indices into ``items``) of layer ``k`` left to right; ``left[k]`` is the item's
    slot left edge relative to the container's content origin; ``width`` the content width.
    """

    group: int
    items: list[int] = field(default_factory=list)
    rows: list[list[int]] = field(default_factory=list)
    left: list[float] = field(default_factory=list)
    slot_w: list[float] = field(default_factory=list)
    width: float = 0.0


@dataclass
class GroupLayoutPlan:
    """Everything :func:`place` needs; computed once per model by :func:`plan_group_layout`."""

    hierarchy: Hierarchy
    containers: dict[int, Container]
    n_nodes: int


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
    """

    centres: np.ndarray
    rep: np.ndarray
    boxes: dict[int, tuple[float, float, float, float]]
    collapsed: set[int]


def _container_edges(h: Hierarchy, edges: list[tuple[int, int]]) -> dict[int, set[tuple[int, int]]]:
    """Per container, the (item, item) edges between its items (items encoded as in Container)."""
    out: dict[int, set[tuple[int, int]]] = {g: set() for g in h.children}
    node_group, parent = h.node_group, h.parent
    chains: dict[int, list[int]] = {}  # group -> [group, its parent, ..., -1]

    def chain(g: int) -> list[int]:
        if g not in chains:
            chains[g] = [-1] if g < 0 else [g, *chain(parent[g])]
        return chains[g]

    for a, b in edges:
        ga, gb = node_group[a], node_group[b]
        if ga == gb:  # most edges: both ends directly in one container
            out[ga].add((a, b))
            continue
        ca, cb = chain(ga), chain(gb)
        sb = set(cb)
        k = next(k for k, g in enumerate(ca) if g in sb)
        c = ca[k]
        kb = cb.index(c)
        ia = a if k == 0 else -(ca[k - 1] + 1)
        ib = b if kb == 0 else -(cb[kb - 1] + 1)
        if ia != ib:
            out[c].add((ia, ib))
    return out


def _order(items: list[int], edges: set[tuple[int, int]], maxiter: int) -> tuple[list[list[int]], list[float]]:
    """Layers (item positions left to right) and Sugiyama x (column units) of one container;
    ``maxiter`` crossing-reduction sweeps."""
    pos = {item: k for k, item in enumerate(items)}
    local = sorted((pos[a], pos[b]) for a, b in edges)
    m = len(items)
    layers = assign_layers(m, local) if local else [0] * m
    if m >= 4 and local and len(set(layers)) < m:  # some layer holds two items: order them
        import igraph  # imported lazily, as in layout.py: only the layout needs it

        graph = igraph.Graph(n=m, edges=local, directed=True)
        xs = [float(x) for x, _y in graph.layout_sugiyama(layers=layers, hgap=1, vgap=1, maxiter=maxiter).coords[:m]]
    else:
        seen: dict[int, int] = {}
        xs = []
        for lay in layers:
            xs.append(float(seen.get(lay, 0)))
            seen[lay] = seen.get(lay, 0) + 1
    rows: list[list[int]] = [[] for _ in range(max(layers, default=-1) + 1)]
    for k in sorted(range(m), key=lambda k: (layers[k], xs[k], k)):
        rows[layers[k]].append(k)
    return [r for r in rows if r], xs


def plan_group_layout(h: Hierarchy, n_nodes: int, edges: list[tuple[int, int]], *,
                      cancel: CancelToken | None = None) -> GroupLayoutPlan:
    """Order every container's items and fix their horizontal slots (see the module docstring).

    Parameters
    ----------
    h : Hierarchy
        Groups of the ``n_nodes`` nodes (``len(h.node_group) == n_nodes``).
    edges : list of (int, int)
        Producer -> consumer node index pairs (``GraphStructure.edges``).
    cancel : CancelToken, optional
        Checked between containers; raises ``Cancelled``.
    """
    per = _container_edges(h, edges)
    # sweeps per container as layout.py gives the flat graph: 100 on small models, 10 from 20,000 nodes
    maxiter = max(10, min(100, 200_000 // max(n_nodes, 1)))
    containers: dict[int, Container] = {}
    # children before parents: a parent's slots need its child groups' full widths
    for g in sorted(h.children, key=lambda g: -(h.depth[g] if g >= 0 else 0)):
        if cancel:
            cancel.check()
        c = Container(g, [*h.direct[g], *(-(k + 1) for k in h.children[g])])
        c.rows, xs = _order(c.items, per[g], maxiter)
        c.slot_w = [NODE_W if it >= 0 else max(BOX_W, containers[-(it + 1)].width + 2 * PAD) for it in c.items]
        c.left = [0.0] * len(c.items)
        for row in c.rows:
            right = -np.inf
            for k in row:
                c.left[k] = max(xs[k] * COL_W, right + GAP_X)
                right = c.left[k] + c.slot_w[k]
        if c.items:
            lo = min(c.left)
            c.left = [x - lo for x in c.left]
            c.width = max(x + w for x, w in zip(c.left, c.slot_w, strict=True))
        containers[g] = c
    return GroupLayoutPlan(h, containers, n_nodes)


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
        return TITLE_H + height(g) + PAD if g in expanded else BOX_H

    def lay(g: int, x0: float, y0: float) -> None:
        c = plan.containers[g]
        y = y0
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
                    hh = TITLE_H + height(child) + PAD
                    out.boxes[child] = (left, y, left + c.slot_w[k], y + hh)
                    lay(child, left + PAD, y + TITLE_H)
                else:
                    hh = BOX_H
                    out.boxes[child] = (left, y, left + BOX_W, y + BOX_H)
                    out.collapsed.add(child)
                    rep[h.members(child)] = child
                row_h = max(row_h, hh)
            y += row_h + GAP_Y

    lay(-1, 0.0, 0.0)
    return out
