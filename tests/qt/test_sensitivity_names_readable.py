"""The Sensitivity table shows whole node names in a small (1024 x 700) window (offscreen).

There its four figure columns, sized to one-line titles ("Only quantized (dB)", "Gain if float (dB)"), (with room
for the sort arrow each) left the name column 55 px under X (26 px offscreen): digits_cnn's names read "/f/...onv" and
"/h...mm". The titles are on three lines now (last word and unit on their own), the name column gets the room."""

from __future__ import annotations

from latency_fakes import quantized_faster
from test_app_flow import run_job
from test_app_stale_results import calibrated_digits

PADDING = 12  # the cell's margins, pixels


def test_the_sweep_table_shows_whole_node_names_at_1024_by_700(qtbot, window, open_file, corpus, monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized (none kept float by a timing)
    window.resize(1024, 700)
    win = calibrated_digits(qtbot, window, open_file, corpus, choose=False)
    status, res = run_job(qtbot, win, win.act_sensitivity.trigger, timeout=300_000)
    assert status == "succeeded", res
    table = win.sensitivity.table
    qtbot.waitUntil(table.isVisible, timeout=10_000)
    qtbot.wait(50)  # the columns sized
    names = [table.item(r, 0).text() for r in range(table.rowCount())]
    assert {"/f/f.0/Conv", "/f/f.3/Conv", "/head/head.2/Gemm", "/f/f.9/AveragePool"} <= set(names)
    metrics = table.fontMetrics()
    widest = max(metrics.horizontalAdvance(n) for n in names)
    assert table.columnWidth(0) >= widest + PADDING, (table.columnWidth(0), widest)  # 55 px before
    titles = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    assert titles == ["Node", "Op", "Only\nquantized\n(dB)", "Only\nfloat\n(dB)", "Own\noutput\n(dB)", "Gain if\nfloat\n(dB)"]
    for c in range(2, table.columnCount()):  # the figures whole in their columns
        width = max(metrics.horizontalAdvance(table.item(r, c).text()) for r in range(table.rowCount()))
        assert table.columnWidth(c) >= width + PADDING, (titles[c], table.columnWidth(c), width)
    # no sideways scrolling: every column in the viewport
    assert table.horizontalHeader().length() <= table.viewport().width()
