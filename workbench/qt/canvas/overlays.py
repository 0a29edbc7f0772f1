"""Where the canvas's overlays leave the graph room: the legend (top-left corner) and the minimap
(bottom-right corner) are widgets drawn over the viewport, so a fit or a centre-on that ignored them
put nodes under them (the most sensitive Conv under the sensitivity legend).

All rectangles are in viewport pixels.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSizeF

#: pixels kept between an overlay and what the view shows beside it
GAP = 8.0


def overlay_rects(canvas, view: QRectF) -> tuple[QRectF, QRectF]:
    """(legend, minimap) rectangles of ``canvas`` within ``view`` (the viewport as it is or will be,
    origin at its top-left); an empty rectangle for an overlay that is hidden. The minimap keeps to
    ``view``'s bottom-right corner, the legend to its top-left."""
    legend = QRectF()
    overlay = canvas.legend_overlay
    if not overlay.isHidden():
        legend = QRectF(QRectF(overlay.geometry()).translated(-QPointF(canvas.viewport().pos())))
    minimap = QRectF()
    mm = canvas.minimap()
    if not mm.isHidden():
        size = QSizeF(mm.size())
        minimap = QRectF(QPointF(view.right() - GAP - size.width(), view.bottom() - GAP - size.height()), size)
    return legend, minimap


def scroll_room(view: QRectF, legend: QRectF, minimap: QRectF) -> tuple[float, float, float, float]:
    """Pixels of scroll range past the graph's (left, top, right, bottom) edges that let any node be scrolled clear
    of the ``legend`` (top-left corner of ``view``) and the ``minimap`` (bottom-right); 0 beside a hidden (empty)
    overlay."""
    left = top = right = bottom = 0.0
    if not legend.isEmpty():
        left, top = legend.right() - view.left() + GAP, legend.bottom() - view.top() + GAP
    if not minimap.isEmpty():
        right, bottom = view.right() - minimap.left() + GAP, view.bottom() - minimap.top() + GAP
    return left, top, right, bottom


def _keep_aspect(area: QRectF, size: QSizeF) -> float:
    """The keep-aspect scale that draws ``size`` (scene) inside ``area`` (px); 0 for an empty area."""
    if area.width() <= 0 or area.height() <= 0:
        return 0.0
    return min(area.width() / max(size.width(), 1e-9), area.height() / max(size.height(), 1e-9))


def _strips(view: QRectF, legend: QRectF, minimap: QRectF) -> list[QRectF]:
    """The rectangles of ``view`` clear of both overlays: right of / below the legend, each cut left of
    / above the minimap."""
    beside = [view]
    if not legend.isEmpty():
        beside = [QRectF(QPointF(legend.right() + GAP, view.top()), view.bottomRight()),
                  QRectF(QPointF(view.left(), legend.bottom() + GAP), view.bottomRight())]
    if minimap.isEmpty():
        return beside
    out = []
    for area in beside:
        out.append(QRectF(area.topLeft(), QPointF(min(area.right(), minimap.left() - GAP), area.bottom())))
        out.append(QRectF(area.topLeft(), QPointF(area.right(), min(area.bottom(), minimap.top() - GAP))))
    return out


def free_area(view: QRectF, bounds: QRectF, legend: QRectF, minimap: QRectF) -> QRectF:
    """The part of ``view`` a keep-aspect fit of ``bounds`` (scene) may use so that neither the
    ``legend`` nor the ``minimap`` (empty: hidden) covers it: the strip beside or below the legend that
    draws ``bounds`` largest; cut beside or above the minimap only when the graph, centred in that strip,
    would reach under it. ``view`` itself when no strip is left."""
    size = QSizeF(bounds.width(), bounds.height())
    candidates = [a for a in _strips(view, legend, QRectF()) if _keep_aspect(a, size) > 0]
    if not candidates:
        return view
    best = max(candidates, key=lambda a: _keep_aspect(a, size))
    if minimap.isEmpty():
        return best
    scale = min(_keep_aspect(best, size), 1.0)
    drawn = QRectF(QPointF(0, 0), size * scale)
    drawn.moveCenter(best.center())
    if not drawn.intersects(minimap):
        return best
    cut = [a for a in _strips(view, legend, minimap) if _keep_aspect(a, size) > 0]
    return max(cut, key=lambda a: _keep_aspect(a, size)) if cut else best


def clear_spot(view: QRectF, overlays: list[QRectF], size: QSizeF) -> QPointF:
    """Viewport point nearest ``view``'s centre where a box of ``size`` (px) centred there lies inside
    ``view`` and meets none of ``overlays`` (empty ones ignored); the centre of ``view`` when no such
    point exists (the box is larger than what the overlays leave free)."""
    boxes = [o for o in overlays if not o.isEmpty()]
    centre = view.center()
    half_w, half_h = size.width() / 2, size.height() / 2
    xs = {centre.x(), view.left() + GAP + half_w, view.right() - GAP - half_w}
    ys = {centre.y(), view.top() + GAP + half_h, view.bottom() - GAP - half_h}
    for o in boxes:
        xs.update((o.right() + GAP + half_w, o.left() - GAP - half_w))
        ys.update((o.bottom() + GAP + half_h, o.top() - GAP - half_h))
    best, best_d = centre, None
    for x in xs:
        for y in ys:
            box = QRectF(x - half_w, y - half_h, size.width(), size.height())
            if not view.contains(box) or any(box.intersects(o) for o in boxes):
                continue
            d = (x - centre.x()) ** 2 + (y - centre.y()) ** 2
            if best_d is None or d < best_d:
                best, best_d = QPointF(x, y), d
    return best
