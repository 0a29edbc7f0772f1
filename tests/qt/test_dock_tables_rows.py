"""The Sensitivity and Cost tables show a useful number of rows when they fill (offscreen).

In a 1024 x 700 window the Sensitivity dock, at the row height a result dock first gets, gave its table 23 px after
a sweep on digits_cnn (under one of its 5 rows: the summary, the colour key and the three-line column titles took
the rest), and the Cost dock beside the Problems dock showed one row of 4. Their rows now grow for 5 rows (or all
of fewer), the graph keeping 30 % of the window's height; a Cost dock with under 240 px beside the Problems tabs
becomes one of their tabs. At 1400 x 860 (3.5 and 2.7 rows before) the same, the Cost dock beside them."""

from __future__ import annotations

import pytest
from latency_fakes import quantized_faster
from test_app_flow import run_job
from test_app_stale_results import calibrated_digits

from workbench.qt.table_room import GRAPH_SHARE, SIDE_WIDTH, WANTED_ROWS, shown_rows


def _rows_shown(table) -> float:
    """Rows the viewport has room for: its height over the row height."""
    return table.viewport().height() / table.rowHeight(0)


@pytest.mark.parametrize("size", [(1024, 700), (1400, 860)])
def test_sweep_and_cost_tables_show_five_rows_or_all(qtbot, window, open_file, corpus, monkeypatch, size):
    quantized_faster(monkeypatch)  # every unit quantized (none kept float by a timing)
    window.resize(*size)
    win = calibrated_digits(qtbot, window, open_file, corpus, choose=False)
    status, res = run_job(qtbot, win, win.act_sensitivity.trigger, timeout=300_000)
    assert status == "succeeded", res
    table = win.sensitivity.table
    assert table.rowCount() == 5  # digits_cnn's units
    qtbot.waitUntil(lambda: _rows_shown(table) >= WANTED_ROWS, timeout=10_000)  # 0.77 rows at 1024 x 700 before
    assert shown_rows(table) == _rows_shown(table)
    assert not win.docks["Sensitivity"].visibleRegion().isEmpty()  # in front
    central = win.centralWidget()
    assert central.height() >= round(GRAPH_SHARE * size[1]), central.height()  # the graph keeps its share
    assert (win.width(), win.height()) == size

    win.show_problems()
    cost = win.docks["Cost"]
    cost.toggleViewAction().trigger()  # View > Cost: beside the Problems dock
    panel = cost.widget()
    qtbot.waitUntil(lambda: panel.table.rowCount() > 0, timeout=60_000)
    problems = win.docks["Problems"]
    want = min(WANTED_ROWS, panel.table.rowCount())
    assert want == 4
    # 1.2 rows at 1024 x 700 before
    qtbot.waitUntil(lambda: _rows_shown(panel.table) >= want and cost.width() >= SIDE_WIDTH, timeout=10_000)
    assert central.height() >= round(GRAPH_SHARE * size[1]), central.height()
    # beside the Problems tabs when it gets SIDE_WIDTH there (1400 x 860), else a tab of their group (1024 x 700:
    # 109 px beside them, its summary 350 px high, the graph 132 px)
    tabbed = cost in win.tabifiedDockWidgets(problems)
    assert tabbed == (size[0] == 1024)
    assert not cost.visibleRegion().isEmpty()
    if not tabbed:  # the Problems dock keeps at least its minimum width (and the Errors dock's, tabbed with it)
        assert problems.width() >= max(problems.minimumSizeHint().width(),
                                       win.docks["Errors"].minimumSizeHint().width())
    # the window keeps its size: the Cost summary's "Computing the cost of model_opset17.onnx..." asked 155 px while
    # it counted, which widened a 1024 px window to 1026 px
    assert (win.width(), win.height()) == size
