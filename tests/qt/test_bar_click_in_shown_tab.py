"""A bar clicked in the Errors dock selects its node in the shown tab when that tab draws it, instead of jumping to
the Graph tab: the exported file's tab (the export keeps the float nodes' names, as the dock's outline there reads
them) and a subgraph body's tab (a node of that body). Netron (its selection does not reach the app) and a body
without the node still bring the Graph tab forward with the node selected. Offscreen, bundled digits_cnn calibrated
in the app (latencies fixed) with our QDQ export of it; case 20 (If with then_mm / else_mm bodies -> relu).
"""

from __future__ import annotations

from diff_app import calibrate_example, open_exported_tab, outlined, settle
from latency_fakes import fixed_latency
from shared_paths import CASES

CASE20 = CASES / "20_if_subgraph_matmul"


def _click(win, node: str) -> None:
    win.errors.click_row([r.node for r in win.errors.rows].index(node))
    settle()


def test_a_bar_click_selects_in_the_exported_tab_and_netron_goes_to_the_graph(
    qtbot, window, open_file, example_qdq_file, monkeypatch
):
    fixed_latency(monkeypatch)
    win = window
    calibrate_example(qtbot, win, open_file)
    settle()
    graph_index = win.tabs.indexOf(win.canvas)
    win.canvas.select_nodes(["/f/f.0/Conv"], center=True)
    settle()
    tab = open_exported_tab(qtbot, win, example_qdq_file)
    tab_index = win.tabs.indexOf(tab)
    assert (graph_index, tab_index) == (0, 1) and win.tabs.currentIndex() == tab_index
    # the exported file has the clicked unit's node (same name): selected there, the tab stays shown
    _click(win, "/head/head.2/Gemm")
    assert win.tabs.currentIndex() == tab_index  # was the Graph tab's
    assert tab.canvas.selected_nodes() == ["/head/head.2/Gemm"]
    assert win.canvas.selected_nodes() == ["/f/f.0/Conv"]  # the Graph tab's selection untouched
    assert outlined(win.errors) == "/head/head.2/Gemm"
    assert "/head/head.2/Gemm" in tab.details.text()  # the tab's own parameter line follows the selection
    _click(win, "/f/f.3/Conv")
    assert win.tabs.currentIndex() == tab_index and tab.canvas.selected_nodes() == ["/f/f.3/Conv"]
    assert outlined(win.errors) == "/f/f.3/Conv"
    # Netron: its selection does not reach the app, so the Graph tab comes forward with the node
    win.open_in_netron()
    settle()
    assert win.tabs.currentWidget() is win.netron
    _click(win, "/f/f.7/Conv")
    assert win.tabs.currentIndex() == graph_index
    assert win.canvas.selected_nodes() == ["/f/f.7/Conv"] and outlined(win.errors) == "/f/f.7/Conv"
    assert tab.canvas.selected_nodes() == ["/f/f.3/Conv"]
    # on the Graph tab as before
    _click(win, "/head/head.2/Gemm")
    assert win.tabs.currentIndex() == graph_index and win.canvas.selected_nodes() == ["/head/head.2/Gemm"]


def test_a_bar_click_selects_in_a_subgraph_tab_that_has_the_node(qtbot, window, open_file, cases):
    # units inside If / Loop / Scan bodies have no bar yet (the dock shows none on a body's tab): the dock's click
    # signal is emitted as a bar's click emits it
    win = window
    open_file(win, CASE20.with_suffix(".onnx"))
    graph_index = win.tabs.indexOf(win.canvas)
    win.canvas.select_nodes(["relu"], center=True)
    settle()
    assert win.open_subgraphs("branch") == ["branch: else_branch", "branch: then_branch"]
    body = win.tabs.currentWidget()
    with qtbot.waitSignal(body.layoutReady, timeout=120_000):
        pass
    settle()
    body_index = win.tabs.currentIndex()
    assert (graph_index, body_index) == (0, 2) and body.node_names() == ["then_mm"]
    win.errors.nodeClicked.emit("then_mm")
    settle()
    assert win.tabs.currentIndex() == body_index  # was the Graph tab's (then_mm is not drawn there)
    assert body.selected_nodes() == ["then_mm"] and win.canvas.selected_nodes() == ["relu"]
    assert win.inspector.nodes == ["then_mm"]
    # a node the body does not draw: on the Graph tab
    win.canvas.select_nodes([], center=False)
    settle()
    win.errors.nodeClicked.emit("relu")
    settle()
    assert win.tabs.currentIndex() == graph_index
    assert win.canvas.selected_nodes() == ["relu"] and body.selected_nodes() == ["then_mm"]
