"""The Errors bars' axis title stays centred under the bars when it changes with the plot's width.

With ppocrv4_rec calibrated in a 1024 x 700 window and a node's histogram shown, "accumulated SQNR (dB)" sat
93 px right of the axis's left end instead of 34 px and ran 24 px past the plot's right edge (shown as
"accumulated SQNR ("): the title is shortened to "(dB)" while the bars are too narrow for it and given back once
they are wide enough, after pyqtgraph placed it for the short text (it places the title on resizes only)."""

from __future__ import annotations

import pytest
from test_app_stale_results import calibrated

pytestmark = pytest.mark.usefixtures("latency_pays")  # nothing left float by this machine's timings


def test_the_axis_title_is_centred_under_the_bars_at_1024_by_700(qtbot, window, open_file, corpus):
    window.resize(1024, 700)
    calibrated(qtbot, window, open_file, corpus / "ppocrv4_rec/model.onnx", samples=8, choose=False)
    win = window
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.focus_node(win.doc.errors[0].node)
    qtbot.wait(300)  # the bars relabelled after the resize
    plot = win.errors.bars_plot
    axis = plot.getPlotItem().getAxis("bottom")
    title = axis.label
    assert title.toPlainText() == "accumulated SQNR (dB)"
    placed = title.mapRectToItem(axis, title.boundingRect())
    assert abs(placed.center().x() - axis.size().width() / 2) <= 1.0, (placed, axis.size())  # 59 px right before
    on_plot = title.sceneBoundingRect()
    assert on_plot.left() >= 0 and on_plot.right() <= plot.width(), (on_plot, plot.width())  # 24 px past before
