"""A graph that fits the view across (or down) but not the part of it beside the legend and the minimap: the view a
model opens with scrolled along that axis (``fit_readable`` sized the range by the free area), while a zoom back to
the same scale gave no scroll bar there (``_beyond_view`` asked whether the graph fits the whole viewport): a 6-column
grid at 900 x 700 opened with 65 px of horizontal scroll, and zoomed in and back out had none. Both now ask whether the
graph fits the part clear of the legend and the minimap, and along an axis where it does not the range is the graph's
scroll room (``scroll_content``: room to move any node clear of them) united with what the view shows."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from graph_models import grid_model  # noqa: E402
from PySide6.QtCore import QPointF, QRectF, QSizeF  # noqa: E402


def _ranges(canvas) -> tuple[int, int, int, int]:
    h, v = canvas.horizontalScrollBar(), canvas.verticalScrollBar()
    return h.minimum(), h.maximum(), v.minimum(), v.maximum()


@pytest.mark.parametrize("columns", [5, 6])
def test_the_opening_and_a_zoom_back_agree_across(qtbot, make_canvas, columns):
    canvas = make_canvas(900, 700, groups=False)
    with qtbot.waitSignal(canvas.layoutReady, timeout=120_000):
        canvas.set_model(grid_model(columns, 40))
    qtbot.wait(20)
    scale = canvas.transform().m11()
    width = (canvas._state.data.bounds.width() + 60) * scale
    assert width < canvas.viewport().width()  # the graph fits the view across
    opened = _ranges(canvas)
    assert opened[3] - opened[2] > 0  # it scrolls down
    area = canvas._free_area(QRectF(QPointF(0, 0), QSizeF(canvas.maximumViewportSize())),
                             canvas._state.data.bounds.adjusted(-30, -30, 30, 30))
    beside = width > area.width()  # 6 columns: wider than the room beside the legend; 5: not
    assert beside == (columns == 6)
    if beside:  # across, the graph's scroll room, as a centre-on's (to the pixel Qt rounds it to)
        room = canvas.scroll_content(QRectF(QPointF(0, 0), QSizeF(canvas.maximumViewportSize())), scale)
        assert abs(opened[0] - room.left() * scale) <= 1
        assert abs(opened[1] + canvas.viewport().width() - room.right() * scale) <= 1
        legend = canvas.legend_overlay.geometry().translated(-canvas.viewport().pos())
        assert not legend.contains(canvas.mapFromScene(canvas._state.data.bounds.topLeft()))  # opens clear of it
    else:
        assert opened[0] == opened[1]  # nothing to scroll to across
    for factor in (1.25, 2.0):  # in and back out, at the view's centre: the opening's bars exactly
        canvas._zoom(factor, QPointF(canvas.viewport().rect().center()))
        canvas._zoom(1 / factor, QPointF(canvas.viewport().rect().center()))
        qtbot.wait(20)
        assert abs(canvas.transform().m11() - scale) < 1e-9
        # was (0, 0, -107, 2032) after, (-219, -154, -107, 2046) opened, for 6 columns
        assert _ranges(canvas) == opened, (factor, _ranges(canvas), opened)
