"""An edge's Q/DQ badge ("u8") keeps off the groups' chevrons and titles. nudenet_320n quantized, every group open:
the edges routed down the left side of an open frame had the middle of their middle passage beside the frame's title
bar, and the badge there (from 12 units left of that point, 20.7 wide) reached over the frame's left end, its chevron
(a click there folds the group): 20 frames, among them ``/model.22/dfl``. Badges now sit at the nearest point along
their edge clear of every shown group's title bar (``badge_spots``)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from badge_geometry import badge_sizes, drawn_badge
from PySide6.QtCore import QPointF, QRectF

from workbench.qt.canvas.badge_spots import badge_spot, title_rects
from workbench.qt.canvas.groups_item import chevron_rect
from workbench.qt.canvas.scene_data import CHEVRON_W, TITLE_BAR, edge_curve


@pytest.mark.slow
def test_no_badge_meets_a_group_s_chevron_or_title(qtbot, make_canvas, nudenet_qdq):
    canvas = make_canvas(1200, 800)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(onnx.load(nudenet_qdq), collapse_qdq=True)
    canvas.expand_all()
    d, groups = canvas._state.data, canvas._groups_item
    assert not d.placement.collapsed and len(d.group_ids) > 80  # every group open: frames with title bars
    assert len(d.badge_points) > 250
    marks = []
    for k, g in enumerate(d.group_ids):
        box = QRectF(d.gx0[k], d.gy0[k], d.gx1[k] - d.gx0[k], d.gy1[k] - d.gy0[k])
        marks.append((d.hierarchy.titles[g], chevron_rect(box), groups.frame_title_text(g)[1]))
    assert "dfl" in [title for title, _c, _t in marks]
    for point, text in d.badge_points:
        for k in badge_sizes():
            badge = drawn_badge(point, text, k)
            for title, chevron, title_rect in marks:
                assert not badge.intersects(chevron), (title, text, k, badge.getRect(), chevron.getRect())
                assert not badge.intersects(title_rect), (
                    title,
                    text,
                    k,
                    badge.getRect(),
                    title_rect.getRect(),
                )


def test_a_badge_beside_a_title_bar_moves_along_its_edge():
    """The dfl case in numbers: a frame at x 2674, y 21718, the edge routed down its left side (x 2667) through
    the title bar's height; its middle (2667, 21735.5) put the badge over the chevron (2674 .. 2704)."""
    gx0, gy0, gx1 = np.array([2674.0]), np.array([21718.0]), np.array([3100.0])
    keep_off = title_rects(gx0, gy0, gx1, TITLE_BAR, CHEVRON_W)
    route = ((2667.0, 21700.0, 21771.0),)
    xa, ya, xb, yb = 2900.0, 21650.0, 2850.0, 21790.0  # from a node up right to one inside the frame

    def curve(path):
        edge_curve(path, xa, ya, xb, yb, route)

    middle = QPointF(2667.0, 21735.5)
    chevron = chevron_rect(QRectF(2674.0, 21718.0, 426.0, 300.0))
    assert drawn_badge(middle, "u8", 1.0).intersects(chevron)  # where it was drawn
    ends = (QRectF(2825.0, 21596.0, 150.0, 54.0), QRectF(2775.0, 21790.0, 150.0, 54.0))
    spot = badge_spot(middle, "u8", curve, keep_off, ends)
    assert spot != middle
    for k in badge_sizes():
        badge = drawn_badge(spot, "u8", k)
        assert not badge.intersects(chevron) and not badge.intersects(
            QRectF(2674.0, 21718.0, 426.0, TITLE_BAR)
        )
        assert not badge.intersects(ends[0]) and not badge.intersects(ends[1])
    clear = QPointF(2667.0, 21500.0)  # a badge clear of every title stays at its edge's middle
    assert badge_spot(clear, "u8", curve, keep_off, ends) == clear
