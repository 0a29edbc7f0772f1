"""Where an edge's Q/DQ badge ("u8", "i8") sits: half way along the edge, unless a group's chevron or title or an
arrow head is there; then the nearest point along the edge clear of them.

An edge routed down the left side of an open frame has the middle of its middle passage beside the frame's title
bar: nudenet_320n quantized, every group open, put the "u8" badge of the edge into ``/model.22/dfl`` over that frame's
left end (its chevron, where a click folds the group) on 20 frames. In a flat layout (rows 90 apart, edges 36 long)
the badge half way down an edge, at its largest (1.43x zoomed out), reached 0.4 units into the edge's own arrow head:
digits_cnn quantized, all 6 badges; digits_transformer, 12 of 31. No font here (the scene data is built in the
layout's child process, without a QGuiApplication): a badge's extent is bounded from its text's length
(:data:`CHAR_W`) at the largest size it is drawn at (:data:`MAX_K`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPainterPath

#: scene pixels a badge character takes at most at scale 1 (the 7 pt bold badge font: "u16" 18.9, "m" 9.4, "W" 9.9)
CHAR_W = 10.0
#: the most a badge is enlarged zoomed out (``items.badge_factor``: up to the op type's 13 px over the badge's 9)
MAX_K = 1.5
#: fractions of the edge's length tried, nearest the middle first
_SPOTS = (0.5,) + tuple(t for i in range(1, 10) for t in (0.5 - 0.05 * i, 0.5 + 0.05 * i))


def badge_extent(point: QPointF, text: str, k: float = MAX_K) -> QRectF:
    """The scene rectangle a badge of ``text`` anchored at ``point`` may take at size ``k`` (``items._pill`` at
    ``(x - 12k, y - 6k)``: the text's advance + 8 wide, 13 high; the advance bounded by :data:`CHAR_W` a character)."""
    return QRectF(point.x() - 12 * k, point.y() - 6 * k, (len(text) * CHAR_W + 8) * k, 13 * k)


def title_rects(gx0: np.ndarray, gy0: np.ndarray, gx1: np.ndarray, title_bar: float, chevron_w: float) -> np.ndarray:
    """Rectangles (left, top, right, bottom; float, shape (n, 4)) a badge keeps off: each shown group's title bar,
    chevron included (its top ``title_bar`` scene pixels, at least ``chevron_w`` wide)."""
    return np.stack([gx0, gy0, np.maximum(gx1, gx0 + chevron_w), gy0 + title_bar], axis=1).reshape(-1, 4)


def head_rects(tips: list[tuple[float, float]], arrow: float) -> np.ndarray:
    """Rectangles (left, top, right, bottom; float, shape (n, 4)) bounding the arrow heads ending at ``tips`` (x, y):
    ``arrow`` either side of the tip, ``1.4 arrow`` above it (``scene_data._edge_path`` draws them so)."""
    if not tips:
        return np.zeros((0, 4))
    x, y = np.asarray(tips, dtype=float).T
    return np.stack([x - arrow, y - 1.4 * arrow, x + arrow, y], axis=1)


def _clear(rect: QRectF, keep_off: np.ndarray) -> bool:
    if not len(keep_off):
        return True
    hit = (keep_off[:, 0] < rect.right()) & (rect.left() < keep_off[:, 2]) & \
        (keep_off[:, 1] < rect.bottom()) & (rect.top() < keep_off[:, 3])
    return not hit.any()


def badge_spot(middle: QPointF, text: str, curve: Callable[[QPainterPath], None], keep_off: np.ndarray,
               ends: tuple[QRectF, QRectF]) -> QPointF:
    """Where the badge of ``text`` on an edge goes: ``middle`` (its point half way) when the badge there meets none of
    ``keep_off`` (float, shape (n, 4): left, top, right, bottom, scene units); else the point nearest the middle along
    the edge (``curve`` adds the drawn edge to a path; tried every 5 % of its length) whose badge meets neither those
    nor the boxes at the edge's ``ends``; ``middle`` when there is none."""
    if _clear(badge_extent(middle, text), keep_off):
        return middle
    path = QPainterPath()
    curve(path)
    for t in _SPOTS[1:]:
        point = path.pointAtPercent(t)
        rect = badge_extent(point, text)
        if _clear(rect, keep_off) and not rect.intersects(ends[0]) and not rect.intersects(ends[1]):
            return point
    return middle
