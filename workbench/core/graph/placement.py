"""Horizontal placement of a layered graph once its layers are ordered: short edges, no overlaps.

igraph's ``layout_sugiyama`` orders each layer well (barycenter crossing reduction) but its
coordinates (Brandes & Köpf, balanced by the median of four alignments) leave side branches many
columns away from the chain they hang off (ppocrv4_rec: a Shape -> Cast -> Slice -> Cast -> Concat
branch 5 columns, 950 scene px, right of its Mul) and, through the balancing, put vertices of one
layer less than a column apart (62 pairs on ppocrv4_rec, one of them two Cast nodes drawn on top of
each other). igraph has no option for its horizontal placement, so :func:`place_columns` keeps its
order and places the vertices again in two steps:

1. *Short edges.* Minimise the weighted sum of squared horizontal edge lengths, ``sum w (x_u - x_v)^2``,
   subject to each layer's order with neighbours at least one column apart, by block coordinate
   descent: all even layers given the odd ones, then all odd layers given the even ones (edges join
   adjacent layers, so the layers of one parity are independent), each layer solved exactly (an
   isotonic regression, pool adjacent violators), until nothing moves by a hundredth of a column. The
   sum never grows from one step to the next. Edge weights follow dot (Gansner et al. 1993): 1 between
   two nodes, 2 between a node and a long edge's dummy vertex, 8 between two dummies, so long edges
   run straight. Then whole columns (rounding keeps the order and the spacing).
2. *Straight chains.* Squared lengths bend a chain into a staircase, one column per layer, where one
   bend is as short in plain length: top to bottom, a vertex with one neighbour in the layer above
   moves under it where its row has room and the weighted sum of absolute edge lengths does not grow
   (a side branch then runs straight down beside the chain it leaves and bends where it rejoins); then
   bottom to top, a vertex with one neighbour in the layer below moves over it where that sum shrinks.

numpy and plain Python; never imports Qt.
"""

from __future__ import annotations

import numpy as np

#: dot's weights of an edge between two nodes, a node and a dummy, two dummies
NODE_NODE, NODE_DUMMY, DUMMY_DUMMY = 1.0, 2.0, 8.0
#: pull of a vertex without neighbours towards where it is (keeps the problem strictly convex)
ANCHOR = 1e-3


def place_columns(xs: list[float], layers: list[int], edges: list[tuple[int, int]], n_nodes: int,
                  max_sweeps: int = 6) -> list[float]:
    """New x of every vertex (column units) keeping each layer's order by ``xs`` (see the module docstring).

    Parameters
    ----------
    xs : list of float
        x of each vertex from the crossing reduction: nodes first (``n_nodes`` of them), then dummies.
        Only its order within each layer is used (ties by vertex index), and it is the start point.
    layers : list of int
        Layer of each vertex, same length as ``xs``.
    edges : list of (int, int)
        Edges between vertices of adjacent layers (a long edge as its chain through its dummies; an edge
        between layers further apart is pulled short too, without the guarantee that the sum never grows).
    n_nodes : int
        Vertices below this index are nodes, the others dummies (their edges weigh more).
    max_sweeps : int
        At most this many passes of step 1 (each: the even layers, then the odd ones).

    Returns
    -------
    list of float
        x per vertex, whole columns: in each layer in the same order as ``xs``, neighbours at least 1
        apart; the smallest x is 0. Deterministic.
    """
    v = len(xs)
    if v == 0:
        return []
    lay = np.asarray(layers, dtype=np.int64)
    x = np.asarray(xs, dtype=np.float64)
    order = np.lexsort((np.arange(v), x, lay))  # row by row, left to right
    row_of = lay[order]
    new_row = np.r_[True, row_of[1:] != row_of[:-1]]
    starts = np.flatnonzero(new_row)
    pos = np.empty(v, dtype=np.float64)  # index of each vertex in its row
    pos[order] = np.arange(v) - np.repeat(starts, np.diff(np.r_[starts, v]))
    pairs = np.asarray([(a, b) for a, b in edges if a != b], dtype=np.int64).reshape(-1, 2)
    ea, eb = pairs[:, 0], pairs[:, 1]
    dummy_a, dummy_b = ea >= n_nodes, eb >= n_nodes
    w = np.where(dummy_a & dummy_b, DUMMY_DUMMY, np.where(dummy_a | dummy_b, NODE_DUMMY, NODE_NODE))
    sw = ANCHOR + np.bincount(ea, w, v) + np.bincount(eb, w, v)
    halves = [order[(row_of % 2) == parity] for parity in (0, 1)]  # rows of one parity, in row order
    for _ in range(max_sweeps):
        moved = 0.0
        for half in halves:
            if not len(half):  # every vertex in rows of one parity (one row: a one-layer graph)
                continue
            swx = ANCHOR * x + np.bincount(ea, w * x[eb], v) + np.bincount(eb, w * x[ea], v)
            y = swx[half] / sw[half] - pos[half]
            _isotonic(y, sw[half], lay[half])
            new = y + pos[half]
            moved = max(moved, float(np.abs(new - x[half]).max()))
            x[half] = new
        if moved < 0.01:
            break
    x -= x.min()
    x = np.floor(x - pos + 0.5) + pos  # x - pos is non-decreasing along a row, so is its rounding
    left = np.full(v, -1, dtype=np.int64)
    right = np.full(v, -1, dtype=np.int64)
    left[order[1:][~new_row[1:]]] = order[:-1][~new_row[1:]]
    right[order[:-1][~new_row[1:]]] = order[1:][~new_row[1:]]
    placed = x.tolist()
    for step in (-1, 1):  # under the one producer (also when as long), then above the one consumer (if shorter)
        _straighten(placed, order if step < 0 else order[::-1], lay, ea, eb, w, left, right, step)
    lo = min(placed)
    return [xi - lo for xi in placed]


def _isotonic(y: np.ndarray, weights: np.ndarray, rows: np.ndarray) -> None:
    """In place, per run of equal ``rows``: the non-decreasing sequence nearest ``y`` in weighted least
    squares. Pool adjacent violators, vectorised: every block boundary whose left block has the larger mean
    is removed at once, until none is left (pooling adjacent violators in any order gives the one answer)."""
    if len(y) < 2:
        return
    same = rows[1:] == rows[:-1]
    cut = same.copy()  # block boundaries inside rows (the boundaries between rows stay)
    wy = weights * y
    while True:
        label = np.r_[0, np.cumsum(~same | cut)]
        mean = np.bincount(label, wy) / np.bincount(label, weights)
        viol = cut & (mean[label[:-1]] > mean[label[1:]])
        if not viol.any():
            break
        cut &= ~viol
    y[:] = mean[label]


def _straighten(x: list[float], order: np.ndarray, lay: np.ndarray, ea: np.ndarray, eb: np.ndarray,
                w: np.ndarray, left: np.ndarray, right: np.ndarray, step: int) -> None:
    """Step 2 of the module docstring, in place on ``x``, rows in ``order``: a vertex with one neighbour in
    the layer ``step`` away (-1: above, 1: below) moves in line with it when it stays between its row
    neighbours ``left`` / ``right`` (-1: none) at least 1 apart and the weighted sum of its edges' absolute
    lengths does not grow (above: shrinks; so a side branch keeps to the chain it leaves, and bends where
    it rejoins)."""
    src, dst, ww = np.r_[ea, eb], np.r_[eb, ea], np.r_[w, w]
    up = lay[dst] == lay[src] + step
    up_of = np.full(len(x), -1, dtype=np.int64)
    single = np.bincount(src[up], minlength=len(x)) == 1
    up_of[src[up]] = dst[up]
    up_of[~single] = -1
    by_src = np.argsort(src, kind="stable")
    ptr = np.r_[0, np.cumsum(np.bincount(src, minlength=len(x)))].tolist()
    nb, nw = dst[by_src].tolist(), ww[by_src].tolist()
    up_l, left_l, right_l = up_of.tolist(), left.tolist(), right.tolist()
    for i in order[up_of[order] >= 0].tolist():
        t, xi = x[up_l[i]], x[i]
        if t == xi or (left_l[i] >= 0 and t < x[left_l[i]] + 1) or (right_l[i] >= 0 and t > x[right_l[i]] - 1):
            continue
        before = after = 0.0
        for k in range(ptr[i], ptr[i + 1]):
            xj = x[nb[k]]
            before += nw[k] * abs(xi - xj)
            after += nw[k] * abs(t - xj)
        if after < before or (after == before and step < 0):
            x[i] = t


def place_routed(n: int, edges: list[tuple[int, int]], layers: list[int], xs: list[float],
                 routing: list[list[tuple[float, int]]]) -> tuple[list[float], list[list[tuple[float, int]]]]:
    """:func:`place_columns` on a Sugiyama result: ``n`` nodes at ``xs`` on ``layers`` and, per edge of
    ``edges``, its dummy vertices ``routing`` as (x, layer) top to bottom (``layout.sugiyama``'s output).
    Returns the same two values placed again (column units, whole columns, smallest x 0)."""
    ext_x, ext_layers, ext_edges = list(xs), list(layers), []
    for (a, b), pts in zip(edges, routing, strict=True):
        prev = a
        for x, lay in pts:  # a long edge: the chain through its dummies
            ext_x.append(x)
            ext_layers.append(lay)
            ext_edges.append((prev, len(ext_x) - 1))
            prev = len(ext_x) - 1
        ext_edges.append((prev, b))
    placed = place_columns(ext_x, ext_layers, ext_edges, n)
    out: list[list[tuple[float, int]]] = []
    k = n
    for pts in routing:
        out.append([(placed[k + j], lay) for j, (_x, lay) in enumerate(pts)])
        k += len(pts)
    return placed[:n], out
