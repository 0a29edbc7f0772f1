"""A zoom sets the scroll range to the graph's, as a centre-on does (c38defa): along an axis that scrolls, the graph's
scroll room (:meth:`GraphCanvas.scroll_content`: the graph, its 30-unit margin and the room to scroll any node clear
of the legend and the minimap) united with what the view shows. A zoom only grew the range there, so zooming out
until the graph fitted (or Fit graph) and back in kept the wide view's rectangle: a 20 x 20 Relu grid at 900 x 700,
fitted, zoomed in 2.5x three times at the top-left corner and out 0.8x three times, scrolled 4,884 px down for a graph
3,600 px high, and after zooming out and back in an 8 x 40 grid scrolled further than when it opened. The view a
model opens with takes the same range, so zooming in and back out gives the opening's scroll bars back exactly, and
zooming out to Fit graph's scale gives Fit graph's view (no scroll bar)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from graph_models import grid_model  # noqa: E402
from PySide6.QtCore import QPointF, QRectF, QSizeF  # noqa: E402


def _opened(qtbot, make_canvas, columns: int, rows: int):
    canvas = make_canvas(900, 700, groups=False)
    with qtbot.waitSignal(canvas.layoutReady, timeout=120_000):
        canvas.set_model(grid_model(columns, rows))
    qtbot.wait(20)  # Qt shows or hides the scroll bars from a queued call
    return canvas


def _ranges(canvas) -> tuple[int, int, int, int]:
    h, v = canvas.horizontalScrollBar(), canvas.verticalScrollBar()
    return h.minimum(), h.maximum(), v.minimum(), v.maximum()


def _zoom(qtbot, canvas, factor: float, steps: int, at: QPointF | None = None) -> None:
    for _ in range(steps):
        if at is None:
            canvas.zoom_in() if factor > 1 else canvas.zoom_out()
        else:
            canvas._zoom(factor, at)
    qtbot.wait(20)


def _room(canvas) -> QRectF:
    full = QRectF(QPointF(0, 0), QSizeF(canvas.maximumViewportSize()))
    return canvas.scroll_content(full, canvas.transform().m11())


@pytest.mark.parametrize("corner", [False, True])
def test_zooming_out_and_back_gives_the_opening_s_scroll_bars(qtbot, make_canvas, corner):
    canvas = _opened(qtbot, make_canvas, 8, 40)  # taller than the view at the readable zoom it opens with
    opened, scale = _ranges(canvas), canvas.transform().m11()
    assert opened[3] - opened[2] > 0  # it scrolls down
    assert opened[1] - opened[0] > 0  # and across: the legend's room
    room = _room(canvas)
    vp = canvas.viewport().rect()
    # the opening's range is the graph's scroll room, as a centre-on's (to the pixel Qt rounds it to)
    assert abs(opened[3] + vp.height() - room.bottom() * scale) <= 1
    assert abs(opened[2] - room.top() * scale) <= 1
    at = QPointF(30, 30) if corner else None
    _zoom(qtbot, canvas, 0.8, 6, at)  # the whole graph fits: no bar
    assert _ranges(canvas) == (0, 0, 0, 0)
    _zoom(qtbot, canvas, 1.25, 6, at)
    assert canvas.transform().m11() == pytest.approx(scale, rel=1e-12)
    assert _ranges(canvas) == opened  # grew before: (-90, 129, -122, 1849) for (-219, 109, -39, 1848)
    _zoom(qtbot, canvas, 1.25, 5, at)
    _zoom(qtbot, canvas, 0.8, 5, at)
    assert _ranges(canvas) == opened


def test_zooming_in_from_fit_scrolls_over_the_graph_only(qtbot, make_canvas):
    canvas = _opened(qtbot, make_canvas, 20, 20)
    canvas.fit()
    qtbot.wait(20)
    assert _ranges(canvas) == (0, 0, 0, 0)
    corner = QPointF(30, 30)
    _zoom(qtbot, canvas, 2.5, 3, corner)
    _zoom(qtbot, canvas, 0.8, 3, corner)
    scale = canvas.transform().m11()
    shown = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    both = _room(canvas).united(shown)
    rect = canvas.sceneRect()
    assert abs(rect.top() - both.top()) < 0.01 and abs(rect.bottom() - both.bottom()) < 0.01  # was Fit's: 465 units
    assert abs(rect.left() - both.left()) < 0.01 and abs(rect.right() - both.right()) < 0.01  # above the graph
    v = canvas.verticalScrollBar()
    assert v.maximum() - v.minimum() <= round(both.height() * scale) - canvas.viewport().height() + 1  # 4,884 before
    v.setValue(v.minimum())  # the whole graph still scrolls into view
    assert canvas.mapToScene(canvas.viewport().rect()).boundingRect().top() <= canvas.scene_bounds().top()
    v.setValue(v.maximum())
    assert canvas.mapToScene(canvas.viewport().rect()).boundingRect().bottom() >= canvas.scene_bounds().bottom()


def test_zooming_out_to_the_fitted_scale_gives_fit_graph_s_view(qtbot, make_canvas):
    canvas = _opened(qtbot, make_canvas, 20, 20)
    canvas.fit()
    qtbot.wait(20)
    fitted, rect = canvas.transform().m11(), canvas.sceneRect()
    for _ in range(3):
        canvas._zoom(1.25, QPointF(30, 30))
    canvas._zoom(fitted / canvas.transform().m11(), QPointF(30, 30))
    qtbot.wait(20)
    assert canvas.transform().m11() == fitted
    assert canvas.sceneRect() == rect
    assert _ranges(canvas) == (0, 0, 0, 0)
