"""A bar of the Errors dock clicked while a diff tab is shown selects its node on the model's graph, brought forward,
straight from nothing to that node: the graph came forward still showing its old selection, and the tab change made
the Errors dock outline the old selection's bar (scrolled to it) before the node clicked was selected. Offscreen,
the bundled digits_cnn calibrated in the app (latencies fixed) and compared with our QDQ export of it."""

from __future__ import annotations

from diff_app import calibrate_example, outlined, settle
from latency_fakes import fixed_latency


def test_a_bar_clicked_in_the_diff_tab_goes_straight_to_its_node(qtbot, window, open_file, example_qdq_file,
                                                                   monkeypatch):
    fixed_latency(monkeypatch)
    win = window
    calibrate_example(qtbot, win, open_file)
    with qtbot.waitSignal(win.diffReady, timeout=300_000) as sig:
        win.compare_with(example_qdq_file)
    tab = sig.args[0]
    with qtbot.waitSignal(tab.panesReady, timeout=300_000):
        pass
    settle()
    bars = [r.node for r in win.errors.rows]
    old, new = bars[0], bars[-1]
    win.tabs.setCurrentWidget(win.canvas)
    win.canvas.select_nodes([old], center=True)
    settle()
    assert outlined(win.errors) == old
    win.tabs.setCurrentWidget(tab)
    settle()
    tab.float_canvas.select_nodes([new], center=True)
    settle()
    assert win.tabs.currentWidget() is tab and outlined(win.errors) == new
    # what the graph shows when it comes forward and each selection it takes; the bars the dock outlines
    seen: list[list[str]] = []
    win.tabs.currentChanged.connect(lambda _i: seen.append(["shown:", *win.canvas.selected_nodes()]))
    win.canvas.selectionChangedNames.connect(lambda names: seen.append(list(names)))
    dock: list = []
    show_selected = win.errors.show_selected
    monkeypatch.setattr(win.errors, "show_selected", lambda node: (dock.append(node), show_selected(node)))
    win.errors.click_row(bars.index(new))
    settle()
    assert win.tabs.currentWidget() is win.canvas
    assert seen == [[new], ["shown:", new]], seen  # the old one ([old] shown first) never drawn
    assert set(dock) == {new}, dock  # the dock never went back to the old bar
    assert win.canvas.selected_nodes() == [new] and outlined(win.errors) == new
    canvas = win.canvas  # centred while the graph was behind the diff tab: in view now it is shown
    assert canvas.viewport().rect().contains(canvas.mapFromScene(canvas.node_scene_rect(new).center()))
