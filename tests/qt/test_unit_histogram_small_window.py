"""The selected unit's histogram stays readable in a small (1024 x 700) window (offscreen).

There the histogram plot was 233 x 64 px: its legend (three entries, one a line under the value axis of so narrow a
plot) and the axis took all of it, the view box was 0 px high and the plot item (89 px) ran past its widget, so no
bar of the histogram was drawn and the count axis was cut."""

from __future__ import annotations

import pytest
from test_app_stale_results import calibrated_digits

pytestmark = pytest.mark.usefixtures("latency_pays")  # nothing left float by this machine's timings


#: the least height (pixels) of the histogram's view box in a 1024 x 700 window
MIN_VIEW_HEIGHT = 60


def test_the_histogram_view_box_has_room_at_1024_by_700(qtbot, window, open_file, corpus):
    window.resize(1024, 700)
    win = calibrated_digits(qtbot, window, open_file, corpus)
    assert (win.width(), win.height()) == (1024, 700)
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.focus_node(win.doc.errors[0].node)
    plot = win.errors.hist_plot
    item = plot.getPlotItem()
    qtbot.waitUntil(lambda: len(item.legend.items) == 3, timeout=10_000)
    qtbot.waitUntil(lambda: not win.errors._relabel.isActive(), timeout=5_000)  # the bars relabelled (80 ms on)
    qtbot.wait(50)  # the layout settled
    assert item.vb.height() >= MIN_VIEW_HEIGHT, item.vb.height()  # was 0
    hists = win.errors.hists  # not squeezed under its minimum by the wrapped lines of the dock (119 of 195 px)
    assert hists.height() >= hists.minimumSizeHint().height(), (hists.height(), hists.minimumSizeHint())
    # the plot item, its legend with it, fits its widget, and the widget the window
    assert item.geometry().height() <= plot.height() + 1, (item.geometry(), plot.size())
    assert item.legend.sceneBoundingRect().bottom() <= plot.height() + 1
    top_left = plot.mapTo(win, plot.rect().topLeft())
    assert top_left.y() >= 0 and top_left.y() + plot.height() <= win.height()
    # the rest of the Errors dock stays whole, and the canvas keeps room
    errors = win.errors
    for part in (errors.summary, errors.bar_legend, errors.color_button, errors.hist_title, errors.bars_plot):
        at = part.mapTo(win, part.rect().topLeft())
        assert part.isVisible() and at.y() >= 0 and at.y() + part.height() <= win.height(), part
    assert win.canvas.height() >= 200, win.canvas.height()


def test_the_weight_histogram_with_a_channel_has_room_at_1024_by_700(qtbot, window, open_file, corpus):
    """The Weight tab of a per-channel weight draws one channel over all of them: four legend entries, one a line
    under the value axis, left its view box 44 px (offscreen) at the least plot height."""
    window.resize(1024, 700)
    win = calibrated_digits(qtbot, window, open_file, corpus)
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.focus_node(win.doc.errors[0].node)
    hists = win.errors.hists
    hists.setCurrentIndex(2)  # Weight
    item = hists.weight_plot.getPlotItem()
    qtbot.waitUntil(lambda: item.legend is not None and len(item.legend.items) == 4, timeout=30_000)
    qtbot.wait(300)  # the layout settled
    assert item.vb.height() >= MIN_VIEW_HEIGHT, item.vb.height()  # 44 px offscreen before
    assert item.legend.columnCount == 1  # one entry a line: four lines under the axis
    plot = hists.weight_plot
    for _sample, label in item.legend.items:  # every entry's text whole ("weight values (all channels" was cut)
        text = plot.mapFromScene(label.sceneBoundingRect()).boundingRect()
        assert text.right() <= plot.viewport().width(), (label.text, text, plot.viewport().width())
    assert item.geometry().height() <= hists.weight_plot.height() + 1, (item.geometry(), hists.weight_plot.size())
    assert hists.height() >= hists.minimumSizeHint().height()
    assert win.canvas.height() >= 200, win.canvas.height()
