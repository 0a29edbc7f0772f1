"""Where a graph too wide to be read whole opens across: its main body, not its left edge.

The layout puts a model's few side inputs and their trivial ops (minilm_l6_v2's attention mask:
Unsqueeze, Cast) at the left, and the main chain of its largest group further right; a view
starting at the left edge showed those ops and cut the ``bert`` group off. :func:`densest_start`
finds the column of the picture holding the most nodes.
"""

from __future__ import annotations

import numpy as np


def _columns(data, rows: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(left, right, x centre, weight) of what ``data`` (a SceneData) draws: weight 1 for each shown
    node, the member count for each collapsed group box (open group frames are drawn around their
    members). ``rows``: only what reaches into scene ``y`` from ``rows[0]`` to ``rows[1]``."""
    x0 = np.asarray(data.x0, dtype=float)
    x1 = np.asarray(data.x1, dtype=float)
    shown = ~np.isnan(x0)
    if rows is not None:
        shown &= (np.asarray(data.y1, dtype=float) >= rows[0]) & (np.asarray(data.y0, dtype=float) <= rows[1])
    lefts, rights, weights = [x0[shown]], [x1[shown]], [np.ones(int(shown.sum()))]
    placement = data.placement
    if placement is not None and data.group_ids:
        for k, g in enumerate(data.group_ids):
            if rows is not None and (float(data.gy1[k]) < rows[0] or float(data.gy0[k]) > rows[1]):
                continue
            if g in placement.collapsed:
                lefts.append(np.array([float(data.gx0[k])]))
                rights.append(np.array([float(data.gx1[k])]))
                weights.append(np.array([float(len(data.hierarchy.members(g)))]))
    left, right = np.concatenate(lefts), np.concatenate(rights)
    return left, right, (left + right) / 2, np.concatenate(weights)


def _frames_across(data, lo: float, hi: float, width: float) -> tuple[float, float]:
    """``lo``..``hi`` widened to the open group frames (their title bars) that reach into it and are
    no wider than ``width``: a frame's title is drawn at its left edge."""
    placement = data.placement
    if placement is None or not data.group_ids:
        return lo, hi
    for k, g in enumerate(data.group_ids):
        left, right = float(data.gx0[k]), float(data.gx1[k])
        if g not in placement.collapsed and right > lo and left < hi and right - left <= width:
            lo, hi = min(lo, left), max(hi, right)
    return lo, hi


def densest_start(data, lo: float, hi: float, width: float, rows: tuple[float, float] | None = None) -> float:
    """The scene x a view ``width`` scene units wide starts at to show the column of ``data`` holding
    the most nodes (collapsed group boxes count their members; the leftmost of equal columns) within
    ``lo``..``hi``: that column's drawn extent (with the open group frames around it no wider than the
    view) centred when it fits, else from its left edge. ``lo`` when the picture is empty or ``width``
    covers ``lo``..``hi``. ``rows`` (scene ``y`` from, to): count only what the view shows of those rows
    (a view opening on the graph's first rows), all of the picture when nothing reaches into them."""
    if width >= hi - lo:
        return lo
    left, right, xs, weights = _columns(data, rows)
    if not len(xs) and rows is not None:
        left, right, xs, weights = _columns(data)
    if not len(xs):
        return lo
    order = np.argsort(xs, kind="stable")
    left, right, xs, weights = left[order], right[order], xs[order], weights[order]
    cum = np.concatenate([[0.0], np.cumsum(weights)])
    starts = np.clip(xs - width / 2, lo, hi - width)  # each node centred in a window, kept inside
    ends = np.searchsorted(xs, starts + width, side="right")
    begins = np.searchsorted(xs, starts, side="left")
    best = int(np.argmax(cum[ends] - cum[begins]))  # the first maximum: the leftmost of equal windows
    inside = slice(int(begins[best]), int(ends[best]))
    first, last = _frames_across(data, float(left[inside].min()), float(right[inside].max()), width)
    start = (first + last - width) / 2 if last - first <= width else first
    return float(min(max(start, lo), hi - width))
