"""Several nodes selected: the Errors dock showed empty [0, 1] axes under "N nodes selected: select one node ...".
(nudenet_320n calibrated, search 'Conv', Enter: 64 Convs selected). MainWindow._request_histogram passed the
message to ErrorView.clear_histogram, which kept the plots shown for a histogram that never came. Now the plots
hide (the bars take their room) and the caption alone says what to do; one node selected again shows them."""

from __future__ import annotations

from bundled_example import EXAMPLE
from cli_projects import run_job
from latency_fakes import quantized_faster
from PySide6.QtCore import Qt


def test_several_selected_hides_the_empty_plot(qtbot, window, open_file, monkeypatch):
    quantized_faster(monkeypatch)
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    state, res = run_job(qtbot, win, win.act_calibrate.trigger)
    assert state == "succeeded", res
    win.canvas.select_nodes(["/f/f.3/Conv"])
    qtbot.waitUntil(lambda: (win.errors.hist or {}).get("unit") == "/f/f.3/Conv", timeout=60_000)
    assert win.errors.hists.isVisible() and win.errors.hist_plot.getPlotItem().listDataItems()
    win.search.setText("Conv")
    qtbot.keyClick(win.search, Qt.Key.Key_Return)  # selects every match
    assert sorted(win.canvas.selected_nodes()) == ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv"]
    qtbot.waitUntil(lambda: win.errors.hist_title.text().startswith("3 nodes selected"), timeout=10_000)
    assert win.errors.hist_title.text() == "3 nodes selected: select one node to see the histogram of its output."
    assert win.errors.hist is None
    assert not win.errors.hists.isVisible()  # was shown: empty 0-1 axes
    win.canvas.select_nodes(["/f/f.7/Conv"])
    qtbot.waitUntil(lambda: (win.errors.hist or {}).get("unit") == "/f/f.7/Conv", timeout=60_000)
    assert win.errors.hists.isVisible() and win.errors.hist_plot.getPlotItem().listDataItems()


def test_a_failed_histogram_hides_the_plot(qtbot, window, open_file):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    win.errors.clear_histogram("Computing the histogram of x...")  # the plot stays while one computes
    win.errors._show_histogram(True)
    assert not win.errors.hists.isHidden()
    win._on_histogram_failed("x", "no such tensor")
    assert win.errors.hists.isHidden()
    assert win.errors.hist_title.text() == "No histogram of x: no such tensor"
