"""The canvas legend never runs past the bottom of the graph's viewport: when the whole of it would not fit, its
notes are left out (into the title's tooltip) and the colour rows stay. Under the Sensitivity dock of a 1024 x 700
window the viewport was about 180 px high and the sensitivity legend's notes were cut mid-line at its bottom edge
(seen under Xvfb). The same with the SQNR legend here, offscreen."""

from __future__ import annotations

from latency_fakes import quantized_faster
from PySide6.QtCore import Qt
from test_app_stale_results import calibrated_digits


def _bottom_in_viewport(canvas) -> int:
    """Pixels from the legend's bottom edge to the viewport's (negative: the legend runs past it)."""
    legend = canvas.legend_overlay
    return canvas.viewport().geometry().bottom() - legend.geometry().bottom()


def test_sqnr_legend_notes_go_to_the_tooltip_in_a_low_viewport(qtbot, window, open_file, corpus, monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized: the SQNR colours and their notes
    window.resize(1024, 900)
    win = calibrated_digits(qtbot, window, open_file, corpus, choose=False)
    win.color_by_sqnr()
    canvas, legend = win.canvas, win.canvas.legend_overlay
    qtbot.waitUntil(lambda: "no value" in legend.label.text(), timeout=5_000)
    whole = legend.label.text()
    assert not legend.notes_left_out and "linear between the stops" in whole
    assert _bottom_in_viewport(canvas) >= 0
    tall = legend.height()

    errors = win.docks["Errors"]
    win.resizeDocks([errors], [win.height() - 300], Qt.Orientation.Vertical)
    qtbot.waitUntil(lambda: canvas.viewport().height() < tall + 16, timeout=5_000)  # the whole legend no longer fits
    qtbot.wait(100)  # the legend placed for the new height
    assert _bottom_in_viewport(canvas) >= 0, (canvas.viewport().height(), legend.height())  # ran past before
    assert legend.notes_left_out
    assert "linear between the stops" not in legend.label.text() and "&gt;= 45 dB" in legend.label.text()
    assert "linear between the stops" in legend.title.toolTip()  # still reachable

    win.resizeDocks([errors], [120], Qt.Orientation.Vertical)
    qtbot.waitUntil(lambda: not legend.notes_left_out, timeout=5_000)  # room again: the notes are back
    assert legend.label.text() == whole
    assert "linear between the stops" not in legend.title.toolTip()
