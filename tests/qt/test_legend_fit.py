"""After "Fit graph" the colour legend overlay covers no node: the fit uses the viewport area the
legend leaves free (right of it or below it)."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE
from PySide6.QtCore import QRectF


def covered(canvas) -> list[str]:
    """Shown nodes and group boxes whose scene rectangle meets the legend's rectangle mapped to the scene."""
    legend = canvas.legend_overlay
    top_left = canvas.viewport().mapFrom(canvas, legend.geometry().topLeft())
    box = canvas.mapToScene(top_left.x(), top_left.y(), legend.width(), legend.height()).boundingRect()
    data = canvas._state.data
    hits = [data.structure.names[i] for i in range(len(data)) if data.shown(i) and data.rect(i).intersects(box)]
    hits += [f"group box {k}" for k in range(len(data.gx0))
             if QRectF(data.gx0[k], data.gy0[k], data.gx1[k] - data.gx0[k], data.gy1[k] - data.gy0[k]).intersects(box)]
    return hits


def check_fit(win) -> None:
    canvas = win.canvas
    assert sum(canvas._state.data.shown(i) for i in range(len(canvas._state.data))) > 0
    assert canvas.legend_overlay.isVisible() and canvas.legend_overlay.width() > 50
    assert covered(canvas) == []
    data = canvas._state.data
    shown = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    assert shown.contains(QRectF(data.bounds))  # the whole graph is still in view


def test_fit_keeps_digits_cnn_clear_of_the_legend(qtbot, window, open_file):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    check_fit(window)
    window.resize(700, 500)  # a smaller window, fitted again
    qtbot.waitUntil(lambda: window.canvas.viewport().width() < 700)
    window.canvas.fit()
    check_fit(window)
    window.act_legend.trigger()  # hidden legend: the fit may use the whole viewport
    window.canvas.fit()
    assert not window.canvas.legend_overlay.isVisible()


@pytest.mark.slow
def test_fit_keeps_nudenet_clear_of_the_legend(qtbot, window, open_file, corpus):
    open_file(window, corpus / "nudenet_320n" / "model.onnx", timeout=540_000)
    window.canvas.fit()  # Fit graph (it opens at a readable zoom, its start in view)
    check_fit(window)


def test_a_fitted_view_stays_clear_when_the_legend_grows(qtbot, window, open_file):
    """Fitted beside the small dtype legend, then coloured by SQNR: the taller, wider SQNR legend
    covered the top nodes (seen at 1400x900 on nudenet); a view the user zoomed is not refitted."""
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    canvas = window.canvas
    window.color_mode.setCurrentText("dtype")
    canvas.fit()
    small = canvas.legend_overlay.size()
    canvas.set_node_values(errors={n: 10.0 * i for i, n in enumerate(canvas.node_names())}, error_label="SQNR (dB)")
    window.color_mode.setCurrentText("error")
    assert canvas.legend_overlay.height() > small.height()
    check_fit(window)
    canvas.zoom_in()
    zoomed = canvas.transform()
    window.color_mode.setCurrentText("op type")
    assert canvas.transform() == zoomed
