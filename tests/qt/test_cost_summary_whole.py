"""The Cost dock's summary is shown whole in a small (1024 x 700) window, beside the Problems dock (offscreen).

There the dock is about 190 px wide, its summary wraps to a dozen lines, and the dock, sized for its summary as one
line, cut it mid-sentence ("... the current recipe's plan, input images: shape" and nothing under it)."""

from __future__ import annotations

import pytest
from test_app_stale_results import calibrated

pytestmark = pytest.mark.usefixtures("latency_pays")  # nothing left float by this machine's timings


def test_the_cost_summary_is_whole_beside_the_problems_at_1024_by_700(qtbot, window, open_file, corpus):
    window.resize(1024, 700)
    calibrated(qtbot, window, open_file, corpus / "digits_cnn/model_opset17.onnx", choose=False)
    win = window
    win.show_problems()
    cost = win.docks["Cost"]
    cost.show()
    cost.raise_()
    panel = cost.widget()
    qtbot.waitUntil(lambda: panel.table.rowCount() > 0 and "Total over" in panel.summary.text(), timeout=60_000)
    qtbot.wait(100)  # the layout settled
    assert (win.width(), win.height()) == (1024, 700)
    summary = panel.summary
    assert summary.height() >= summary.heightForWidth(summary.width()), (summary.height(),
                                                                          summary.heightForWidth(summary.width()))
    at = summary.mapTo(win, summary.rect().bottomLeft())
    assert at.y() < win.height()
    assert panel.table.isVisible() and panel.table.height() > 0
    assert win.canvas.height() >= 150, win.canvas.height()
