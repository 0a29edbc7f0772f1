"""An edge's own Q/DQ badge ("u8") keeps off arrow heads. In the flat layout (the Compare tab's panes: rows 90 apart,
so an edge into the next row is 36 long) the badge half way down the edge, at its largest (zoomed out, 1.43x), reached
0.44 units into the arrow head that edge ends in: digits_cnn quantized, all 6 of its badges. Badges now keep off every
drawn arrow head as they keep off the groups' titles (``badge_spots``), moving along their edge."""

from __future__ import annotations

import numpy as np
import onnx
from badge_geometry import badge_sizes, drawn_badge
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPainterPath, QPolygonF

from workbench.qt.canvas.badge_spots import badge_spot, head_rects
from workbench.qt.canvas.scene_data import ARROW, NODE_H, NODE_W, edge_curve


def _head(x: float, y: float) -> QPainterPath:
    """The arrow head polygon ``scene_data._edge_path`` draws for an edge ending at (x, y)."""
    path = QPainterPath()
    path.addPolygon(
        QPolygonF([QPointF(x - ARROW, y - 1.4 * ARROW), QPointF(x, y), QPointF(x + ARROW, y - 1.4 * ARROW)])
    )
    path.closeSubpath()
    return path


def _meets(rect: QRectF, head: QPainterPath) -> bool:
    box = QPainterPath()
    box.addRect(rect)
    return box.intersects(head)


def test_no_badge_meets_an_arrow_head_in_a_flat_layout(qtbot, make_canvas, example_qdq_file):
    canvas = make_canvas(900, 700, groups=False)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(onnx.load(example_qdq_file), collapse_qdq=True)
    d = canvas._state.data
    xs, top, bottom = d.anchors
    heads = [(xs[b], top[b]) for a, b in d.structure.edges if not np.isnan(xs[b])]
    spans = [top[b] - bottom[a] for a, b in d.structure.edges]
    assert len(d.badge_points) == 6 and min(spans) == 90 - NODE_H  # short edges: 36 units
    for point, text in d.badge_points:
        for k in badge_sizes():
            badge = drawn_badge(point, text, k)
            for x, y in heads:
                assert not _meets(badge, _head(x, y)), (text, k, badge.getRect(), (x, y))


def test_a_badge_half_way_down_a_short_edge_moves_up_off_its_head():
    """The numbers of the flat layout: producer bottom at y 0, consumer top at y 36, both centred on x 0."""
    xa, ya, xb, yb = 0.0, 0.0, 0.0, 36.0
    ends = (QRectF(-NODE_W / 2, -NODE_H, NODE_W, NODE_H), QRectF(-NODE_W / 2, yb, NODE_W, NODE_H))
    middle = QPointF(0.0, 18.0)
    big = badge_sizes()[1]
    assert big > 1.4 and _meets(drawn_badge(middle, "u8", big), _head(xb, yb))  # where it was drawn

    def curve(path):
        edge_curve(path, xa, ya, xb, yb, None, False)

    spot = badge_spot(middle, "u8", curve, head_rects([(xb, yb)], ARROW), ends)
    assert spot.x() == 0.0 and 9.0 < spot.y() < 18.0  # up the edge, still on it
    for k in badge_sizes():
        badge = drawn_badge(spot, "u8", k)
        assert (
            not _meets(badge, _head(xb, yb))
            and not badge.intersects(ends[0])
            and not badge.intersects(ends[1])
        )
    far = QPointF(0.0, -500.0)  # a badge clear of every head stays at its edge's middle
    assert badge_spot(far, "u8", curve, head_rects([(xb, yb)], ARROW), ends) == far
