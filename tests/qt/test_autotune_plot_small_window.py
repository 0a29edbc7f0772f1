"""The Autotune curve keeps its legend and axis titles whole in a small (1024 x 700) window (offscreen).

There the plot was 115 px high after a run on digits_cnn: the fifth legend entry ("float model 0.9956") was cut
at its bottom and the x axis title ("weight size (KiB)") was not drawn at all (no room under the ticks):
the dock's wrapped lines (what the run uses, the summary) were counted as one line each, and the plot had no
least height."""

from __future__ import annotations

import pytest
from test_app_flow import run_job
from test_app_stale_results import calibrated_digits

pytestmark = pytest.mark.usefixtures("latency_pays")  # nothing left float by this machine's timings


#: the least height (pixels) of the curve's view box in a 1024 x 700 window
MIN_VIEW_HEIGHT = 60


def test_the_autotune_legend_and_axis_titles_fit_at_1024_by_700(qtbot, window, open_file, corpus):
    window.resize(1024, 700)
    win = calibrated_digits(qtbot, window, open_file, corpus, choose=False)
    win.evaluate_panel.settings.data.setText(str(corpus / "digits_cnn/eval.npz"))
    status, res = run_job(qtbot, win, win.act_autotune.trigger, timeout=300_000)
    assert status == "succeeded", res
    panel = win.autotune_panel
    qtbot.waitUntil(lambda: panel.plot.isVisible() and len(panel.legend.items) == 5, timeout=10_000)
    qtbot.wait(50)  # the layout settled
    assert (win.width(), win.height()) == (1024, 700)
    plot = panel.plot
    height = plot.viewport().height()
    labels = [label.text for _sample, label in panel.legend.items]
    assert labels[-1].startswith("float model ")
    for _sample, label in panel.legend.items:  # every entry whole inside the widget (the last was cut at 115 px)
        text = plot.mapFromScene(label.sceneBoundingRect()).boundingRect()
        assert 0 <= text.top() and text.bottom() <= height, (label.text, text, height)
    bottom = panel.plot_item.getAxis("bottom")
    assert bottom.label.isVisible() and bottom.label.toPlainText().strip() == "weight size (KiB)"
    title = plot.mapFromScene(bottom.label.sceneBoundingRect()).boundingRect()
    assert title.bottom() <= height, (title, height)
    assert panel.plot_item.vb.height() >= MIN_VIEW_HEIGHT, panel.plot_item.vb.height()
    at = plot.mapTo(win, plot.rect().topLeft())
    assert at.y() >= 0 and at.y() + plot.height() <= win.height()
