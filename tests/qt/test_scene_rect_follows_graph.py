"""A centre-on (a search hit, a selection brought into view, a re-placement) sets the scroll range to the graph's and
what the view shows, both ways: it only grew, so after centring a node at the graph's end and then one at its start
the range kept the first's overhang (a 3 x 60 Relu grid at 900 x 700: 263 px of horizontal scroll over nothing, 377
units below the graph), and a search after "Fit graph" kept the fit's rectangle (7,078 units across at 100 %: a
horizontal scroll range of 6,194 px for a graph 530 units wide). The view itself does not move."""

from __future__ import annotations

from graph_models import grid_model
from PySide6.QtCore import QPointF, QRectF, QSizeF


def _opened(qtbot, make_canvas):
    canvas = make_canvas(900, 700, groups=False)
    with qtbot.waitSignal(canvas.layoutReady, timeout=120_000):
        canvas.set_model(grid_model(3, 60))
    return canvas


def _room(canvas) -> QRectF:
    """The graph's scroll room at the current scale for the viewport without scroll bars."""
    full = QRectF(QPointF(0, 0), QSizeF(canvas.maximumViewportSize()))
    return canvas.scroll_content(full, canvas.transform().m11())


def _shown(canvas) -> QRectF:
    return canvas.mapToScene(canvas.viewport().rect()).boundingRect()


def _bar_range(bar) -> int:
    return bar.maximum() - bar.minimum()


def _settled(qtbot, canvas) -> None:
    qtbot.wait(20)  # Qt shows or hides the scroll bars from a queued call


def test_centring_the_end_then_the_start_drops_the_end_s_overhang(qtbot, make_canvas):
    canvas = _opened(qtbot, make_canvas)
    canvas.select_nodes(["c2r59"], center=True)
    _settled(qtbot, canvas)
    assert canvas.sceneRect().bottom() > _room(canvas).bottom() + 30  # the last node centred: the view overhangs
    canvas.select_nodes(["c0r0"], center=True)
    _settled(qtbot, canvas)
    rect, room, shown = canvas.sceneRect(), _room(canvas), _shown(canvas)
    scale = canvas.transform().m11()
    assert abs(rect.bottom() - room.bottom()) < 0.01  # the end's overhang is gone (5,804 before: 377 units below the graph)
    assert room.bottom() - canvas.scene_bounds().bottom() < 400  # the minimap's room and the 30-unit margin
    assert rect.top() < canvas.scene_bounds().top()  # the start's own overhang: the view shows it
    assert room.width() * scale < canvas.viewport().width()  # the graph with its room fits across:
    assert _bar_range(canvas.horizontalScrollBar()) == 0  # no horizontal scroll (263 px before)
    assert not canvas.horizontalScrollBar().isVisible()
    first = canvas.mapFromScene(canvas.node_scene_rect("c0r0").center())
    assert canvas.viewport().rect().contains(first)  # where the centre-on put it
    legend = canvas.legend_rect()
    assert not legend.contains(first)
    px = 2 / scale  # the view shows no more than the range, to the pixel Qt rounds the scroll position to
    assert shown.left() >= rect.left() - px and shown.right() <= rect.right() + px


def test_a_search_after_fit_scrolls_over_the_graph_only(qtbot, make_canvas):
    canvas = _opened(qtbot, make_canvas)
    canvas.fit()
    _settled(qtbot, canvas)
    canvas.search("c2r59")
    _settled(qtbot, canvas)
    scale = canvas.transform().m11()
    assert scale == 1.0  # the hit at 100 %
    rect, room, shown = canvas.sceneRect(), _room(canvas), _shown(canvas)
    both = room.united(shown).adjusted(-1, -1, 1, 1)
    assert both.contains(rect), (rect, both)  # was 7,078 units across (the fit's rectangle)
    assert rect.width() < 1100
    assert _bar_range(canvas.horizontalScrollBar()) <= round(both.width() * scale) - canvas.viewport().width()
    hit = canvas.mapFromScene(canvas.node_scene_rect("c2r59").center())
    assert canvas.viewport().rect().contains(hit)
    bar = canvas.verticalScrollBar()  # the whole graph still scrolls into view
    bar.setValue(bar.minimum())
    assert _shown(canvas).top() <= canvas.scene_bounds().top()
    bar.setValue(bar.maximum())
    assert _shown(canvas).bottom() >= canvas.scene_bounds().bottom()
