"""The histogram's caption with no node selected. After a click on the canvas's background (the example
calibrated, a bar clicked first) it read "0 nodes selected: select one node to see the histogram of its output."
over the empty plot; it now says that none is selected and what to click."""

from __future__ import annotations

from bundled_example import EXAMPLE
from cli_projects import run_job
from latency_fakes import quantized_faster


def test_no_node_selected_reads_as_none(qtbot, window, open_file, monkeypatch):
    quantized_faster(monkeypatch)
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    window.canvas.select_nodes(["/f/f.3/Conv"])
    window.canvas.select_nodes([])
    qtbot.waitUntil(lambda: window.errors.hist_title.text().startswith("No node selected"), timeout=10_000)
    assert window.errors.hist_title.text() == ("No node selected: click a node or a bar to see the histogram of its "
                                               "output.")
