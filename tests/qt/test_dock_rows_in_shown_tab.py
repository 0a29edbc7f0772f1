"""A row clicked in the Problems, Sensitivity, Cost or Recipe dock selects its node in the shown tab when that tab
draws it, as a bar of the Errors dock does (test_bar_click_in_shown_tab): each brought the Graph tab forward. The
exported file's tab keeps the float nodes' names, so it draws every node these docks list; on Netron (its selection
does not reach the app) the Graph tab still comes forward with the node selected. Offscreen, bundled digits_cnn
calibrated in the app (latencies fixed: /f/f.0/Conv and /f/f.9/AveragePool kept float, each a Problems row and a
Recipe override) with our QDQ export of it.
"""

from __future__ import annotations

import pytest
from diff_app import calibrate_example, open_exported_tab, settle
from latency_fakes import fixed_latency
from PySide6.QtCore import Qt
from test_app_flow import run_job

#: dock -> the two nodes clicked in it (rows it lists for digits_cnn calibrated with the latencies fixed)
CLICKED = {
    "problems": ("/f/f.9/AveragePool", "/f/f.0/Conv"),
    "sensitivity": ("/head/head.2/Gemm", "/f/f.3/Conv"),
    "cost": ("/head/head.2/Gemm", "/f/f.7/Conv"),
    "recipe": ("/f/f.9/AveragePool", "/f/f.0/Conv"),
}
#: selected on the Graph tab first, listed by none of the docks
GRAPH_SELECTION = ["/f/f.2/Relu"]


def _fill(qtbot, win, dock: str) -> None:
    """Give ``dock`` its rows: a sensitivity sweep, the Cost dock shown (it counts when shown)."""
    if dock == "sensitivity":
        status, res = run_job(qtbot, win, win.act_sensitivity.trigger, timeout=300_000)
        assert status == "succeeded", res
    elif dock == "cost":
        win.docks["Cost"].toggleViewAction().trigger()
        qtbot.waitUntil(lambda: win.cost.table.rowCount() > 0, timeout=60_000)


def _click(win, dock: str, node: str) -> None:
    """Click the row of ``node`` in ``dock`` as a user does (the recipe's override list: its itemClicked)."""
    if dock == "problems":
        win.problems.click_row(next(r for r, (_s, issue) in enumerate(win.problems.problems) if issue.node == node))
    elif dock == "sensitivity":
        panel = win.sensitivity
        panel.click_row(next(r for r in range(panel.table.rowCount()) if panel.node_at(r) == node))
    elif dock == "cost":
        win.cost.click_row(win.cost.row_of(node))
    else:
        ov = win.recipe_panel.overrides
        items = [ov.item(i) for i in range(ov.count())]
        ov.itemClicked.emit(next(it for it in items if it.data(Qt.ItemDataRole.UserRole) == node))
    settle()


@pytest.mark.parametrize("dock", list(CLICKED))
def test_a_dock_row_selects_in_the_exported_tab_and_netron_goes_to_the_graph(qtbot, window, open_file,
                                                                            example_qdq_file, monkeypatch, dock):
    fixed_latency(monkeypatch)
    win = window
    calibrate_example(qtbot, win, open_file)
    _fill(qtbot, win, dock)
    settle()
    first, second = CLICKED[dock]
    graph_index = win.tabs.indexOf(win.canvas)
    win.canvas.select_nodes(GRAPH_SELECTION, center=True)
    settle()
    tab = open_exported_tab(qtbot, win, example_qdq_file)
    tab_index = win.tabs.indexOf(tab)
    assert (graph_index, tab_index) == (0, 1) and win.tabs.currentIndex() == 1
    _click(win, dock, first)
    assert win.tabs.currentIndex() == 1  # was 0: the Graph tab came forward
    assert tab.canvas.selected_nodes() == [first]
    assert win.canvas.selected_nodes() == GRAPH_SELECTION  # the Graph tab's selection untouched
    _click(win, dock, second)
    assert win.tabs.currentIndex() == 1 and tab.canvas.selected_nodes() == [second]
    assert win.canvas.selected_nodes() == GRAPH_SELECTION
    # Netron: the Graph tab comes forward with the node selected, the exported tab keeps its selection
    win.open_in_netron()
    settle()
    assert win.tabs.currentWidget() is win.netron and win.tabs.currentIndex() == 2
    _click(win, dock, first)
    assert win.tabs.currentIndex() == 0 and win.canvas.selected_nodes() == [first]
    assert tab.canvas.selected_nodes() == [second]
    # on the Graph tab as before
    _click(win, dock, second)
    assert win.tabs.currentIndex() == 0 and win.canvas.selected_nodes() == [second]
