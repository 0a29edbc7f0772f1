"""The selected unit's histogram has room in a 1400 x 860 window (offscreen).

Its plot was 70 px high there: the Errors row shared its height with the summary, a row of two buttons above
the bars, a two-line colour legend, the caption, and the histogram's own value-axis title and legend row
under it. The buttons now sit beside the (one-line) colour legend and the histogram's legend beside its view
box, in a plot that wide; everything stays in the window."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect
from test_app_stale_results import calibrated_digits

from workbench.qt.hist_plot import LEGEND_BESIDE

pytestmark = pytest.mark.usefixtures("latency_pays")  # nothing left float by this machine's timings


#: the least height (pixels) of the histogram's view box at 1400 x 860
MIN_PLOT_HEIGHT = 140


def _in_window(win, widget) -> QRect:
    return QRect(widget.mapTo(win, widget.rect().topLeft()), widget.size())


def test_the_histogram_of_a_selected_unit_has_room_at_1400_by_860(qtbot, window, open_file, corpus):
    window.resize(1400, 860)
    win = calibrated_digits(qtbot, window, open_file, corpus)
    assert (win.width(), win.height()) == (1400, 860)
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.focus_node(win.doc.errors[0].node)
    errors = win.errors
    item = errors.hist_plot.getPlotItem()
    qtbot.waitUntil(lambda: len(item.legend.items) == 3, timeout=10_000)
    qtbot.wait(50)  # the layout settled
    assert item.vb.height() >= MIN_PLOT_HEIGHT, item.vb.height()  # was 70
    legend = item.legend
    assert [label.text.split(" (")[0] for _s, label in legend.items] == ["output values", "clip range",
                                                                         "quantization grid"]
    grid = item.layout
    assert grid.itemAt(*LEGEND_BESIDE) is legend and legend.columnCount == 1 and legend.isVisible()
    placed = legend.sceneBoundingRect()
    assert placed.left() >= item.vb.sceneBoundingRect().right() - 1  # beside the view box (they share an edge)
    on_plot = errors.hist_plot.mapFromScene(placed).boundingRect()
    assert errors.hist_plot.rect().contains(on_plot), (on_plot, errors.hist_plot.rect())
    shown = QRect(errors.hist_plot.mapTo(win, on_plot.topLeft()), on_plot.size())
    assert win.rect().contains(shown), shown
    # the text lines and the buttons stay whole in the window, the colour legend on one line beside the buttons
    for part in (errors.summary, errors.bar_legend, errors.color_button, errors.node_data_button, errors.hist_title):
        assert part.isVisible() and win.rect().contains(_in_window(win, part)), part
    line = errors.bar_legend.fontMetrics().lineSpacing()
    assert errors.bar_legend.height() < 2 * line
    assert abs(_in_window(win, errors.bar_legend).center().y() - _in_window(win, errors.color_button).center().y()) <= 4
