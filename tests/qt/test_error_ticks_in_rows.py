"""A bar's tick (the figure not ranked by) stays inside its row: at 16 px in a 17 px row, the tick of the first
bar below the view was drawn over the axis line under the last bar shown (ppocrv4_rec's 163 units, the Errors
dock of a 1600 x 1000 window), a stray mark with no bar (pytest-qt, offscreen)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPointF  # noqa: E402

from workbench.qt.error_view import ErrorView  # noqa: E402
from workbench.qt.theme import LIGHT, style_plot  # noqa: E402

UNITS = 40
HIDDEN_TICK_DB = 36.0  # the first bar out of view has its tick here; every other tick is at 10 dB


def _view(qtbot, height: int) -> ErrorView:
    view = ErrorView()
    qtbot.addWidget(view)
    view.resize(1050, height)
    view.show()
    qtbot.waitExposed(view)
    style_plot(view.bars_plot, LIGHT)
    rows = [SimpleNamespace(node=f"n{i}", op_type="Conv", sqnr_db=2.0 + 0.05 * i, tensor=f"t{i}") for i in range(UNITS)]
    shown = 0
    for _ in range(2):  # the rows shown depend on the height: set the local figures for that count
        view.set_local({f"n{i}": (HIDDEN_TICK_DB if i == shown else 10.0) for i in range(UNITS)})
        view.set_rows(rows)
        qtbot.wait(50)
        shown = view.rows_shown()
    return view


@pytest.mark.parametrize("height", [300, 330, 360])
def test_tick_of_a_bar_out_of_view_is_not_drawn(qtbot, height):
    view = _view(qtbot, height)
    shown = view.rows_shown()
    assert 3 <= shown < UNITS and view.top_row == 0
    plot, vb = view.bars_plot, view.bars_plot.getPlotItem().vb
    image = plot.grab().toImage()
    ratio = image.devicePixelRatio()

    def pixel(x_db: float, row: float):
        at = plot.mapFromScene(vb.mapViewToScene(QPointF(x_db, row)))
        return image.pixelColor(int(at.x() * ratio), int(at.y() * ratio))

    # in the hidden tick's column, from the last bar's bottom (row shown - 1 + 0.4) to the view's edge: background
    bottom = [pixel(HIDDEN_TICK_DB, shown - 1 + 0.4 + k * 0.02) for k in range(1, 5)]
    assert all(c.lightness() > 200 for c in bottom), [c.name() for c in bottom]
    # the ticks in view are drawn, dark on the white plot, across their bar
    assert pixel(10.0, 0.0).lightness() < 120 and pixel(10.0, shown - 1).lightness() < 120
