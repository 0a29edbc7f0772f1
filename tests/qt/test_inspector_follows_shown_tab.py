"""The Inspector kept describing the Graph tab's selection on a subgraph tab (case 20: relu selected, its If's
then_branch tab shown, nothing selected there: the Inspector still read relu). It now follows the shown tab's
selection, as the Errors dock does since 700b2b3: the body's own nodes there, the Graph tab's again when it is shown."""

from __future__ import annotations

from diff_app import settle
from shared_paths import CASES

CASE20 = CASES / "20_if_subgraph_matmul"


def test_the_inspector_follows_a_subgraph_tab(qtbot, window, open_file, cases):
    win = window
    open_file(win, CASE20.with_suffix(".onnx"))
    win.canvas.select_nodes(["relu"], center=True)
    settle()
    assert win.inspector.nodes == ["relu"]
    win.open_subgraphs("branch")
    body = win.tabs.currentWidget()
    with qtbot.waitSignal(body.layoutReady, timeout=120_000):
        pass
    settle()
    assert win.tabs.tabText(win.tabs.currentIndex()) == "branch: then_branch"
    assert win.inspector.nodes == []  # was ['relu']: the Graph tab's
    body.select_nodes(["then_mm"])
    settle()
    assert win.inspector.nodes == ["then_mm"]
    win.tabs.setCurrentWidget(win.canvas)
    settle()
    assert win.inspector.nodes == ["relu"]
    win.tabs.setCurrentWidget(body)
    settle()
    assert win.inspector.nodes == ["then_mm"]
