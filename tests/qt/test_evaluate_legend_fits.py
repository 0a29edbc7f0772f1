"""The Evaluate panel's bar legend is drawn whole and off the bars: inside the view box, "quantized 0.9956" was
cut off at the right edge of the plot (the Evaluate dock beside the Errors bars of a 1600 px window gives it
about 190 px) and its box reached the top of the bars (pytest-qt, offscreen)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF  # noqa: E402


@pytest.mark.parametrize("plot_width", [190, 320])
def test_metric_legend_whole_and_clear_of_the_bars(qtbot, window, plot_width):
    panel = window.evaluate_panel
    window.docks["Evaluate"].show()
    rep = SimpleNamespace(metric="top1", float_metric=0.9956, quant_metric=0.9911, outputs=[], samples=450,
                          optimization_level="ORT_ENABLE_ALL", seconds=0.5, notes=[])
    panel.set_result({"report": rep, "metric": "top1", "eval_data": "/data/eval.npz"})
    panel.plot.setFixedSize(plot_width, 200)
    qtbot.waitUntil(lambda: panel.plot.isVisible())
    qtbot.wait(50)
    labels = [label.text for _sample, label in panel.legend.items]
    assert labels == ["float 0.9956", "quantized 0.9911"]

    view = QRectF(panel.plot.viewport().rect())
    legend = panel.plot.mapFromScene(panel.legend.sceneBoundingRect()).boundingRect()
    for _sample, label in panel.legend.items:  # every entry's text lies inside the widget, whole
        text = panel.plot.mapFromScene(label.sceneBoundingRect()).boundingRect()
        assert view.contains(QRectF(text)), (label.text, text, view)
    vb = panel.plot.getPlotItem().vb
    bars = [item for item in vb.addedItems if hasattr(item, "opts") and "height" in item.opts]
    assert len(bars) == 2
    for bar in bars:
        drawn = panel.plot.mapFromScene(bar.sceneBoundingRect()).boundingRect()
        assert not drawn.intersects(legend), (drawn, legend)
    # the bars keep their values: the float bar reaches 0.9956 on the axis, under the top of the view
    assert vb.viewRange()[1][0] <= 0.0 and 0.9956 < vb.viewRange()[1][1]
