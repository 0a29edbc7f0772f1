"""Where a view opening on a graph's first rows goes across (workbench.qt.canvas.main_body.densest_start with
``rows``): the densest column among the nodes those rows show, not the densest column of the whole picture,
which may hold none of them (the diff tab opened on ppocrv4_rec's first rows with no node in view)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from workbench.qt.canvas.main_body import densest_start


def _data(rects):
    x0, y0, x1, y1 = (np.array(v, dtype=float) for v in zip(*rects, strict=True))
    return SimpleNamespace(x0=x0, y0=y0, x1=x1, y1=y1, placement=None, group_ids=[])


def test_the_first_rows_pick_their_own_column():
    top = [(0, 0, 100, 40), (0, 100, 100, 140)]  # the inputs: a column at the left, at the top
    body = [(1000, 500 + 100 * i, 1100, 540 + 100 * i) for i in range(10)]  # the main chain, further down
    data = _data(top + body)
    assert densest_start(data, 0, 1100, 300) == 800  # the whole picture: the body's column (kept inside)
    assert densest_start(data, 0, 1100, 300, rows=(0, 300)) == 0  # the first rows: their column (from lo)
    assert densest_start(data, 0, 1100, 300, rows=(3000, 3300)) == 800  # nothing there: the whole picture
