"""The Errors dock outlines the node unit of the shown tab's selection, alike on the model's graph and in a diff tab.

On the Graph tab a bar was outlined only when the selected node was its unit's main node: ppocrv4_rec's hard-swish
Clip p2o.Clip.0, folded into unit p2o.Add.4, outlined nothing there, while the diff tab outlined p2o.Add.4. After a
selection in the diff tab, switching back to the Graph tab left the diff tab's bar outlined until the graph's
selection changed. Offscreen, ppocrv4_rec calibrated in the app on 4 rows (diff_app), latencies fixed.
"""

from __future__ import annotations

from diff_app import PPOCR, calibrate, calibrated_diff, outlined, ppocr_qdq, settle
from latency_fakes import fixed_latency, quantized_faster

from workbench.qt.diff_errors import outlined_unit

UNIT, MEMBER = (
    "p2o.Add.4",
    "p2o.Clip.0",
)  # the Clip after the Add of a hard-swish is folded into the Add's unit


def _select(canvas, names: list[str]) -> None:
    canvas.select_nodes(names, center=True)
    settle()
    assert canvas.selected_nodes() == sorted(names, key=canvas.node_names().index)


def test_a_folded_node_on_the_graph_outlines_its_unit(qtbot, window, open_file, monkeypatch, corpus):
    quantized_faster(monkeypatch)  # the latency placement keeps no unit float: p2o.Add.4 keeps its Clip
    win = window
    open_file(win, PPOCR / "model.onnx")
    # before results: the one selected node is the dock's selection, as it was (no bars to map it onto)
    _select(win.canvas, ["p2o.Conv.0"])
    assert win.errors.selected == "p2o.Conv.0"
    _select(win.canvas, [MEMBER])
    assert win.errors.selected == MEMBER
    _select(win.canvas, ["p2o.Conv.0", MEMBER])
    assert win.errors.selected is None
    _select(win.canvas, [MEMBER])
    calibrate(qtbot, win)
    settle()
    units = win.doc.plan.units
    shown = [r.node for r in win.errors.rows]
    assert MEMBER in units[UNIT].nodes and UNIT in shown and MEMBER not in shown
    # the results came with the folded Clip selected: its unit's bar
    assert win.canvas.selected_nodes() == [MEMBER]
    assert outlined(win.errors) == UNIT
    conv = next(n for n in shown if units[n].op_type == "Conv")
    _select(win.canvas, [conv])
    assert outlined(win.errors) == conv
    _select(win.canvas, [MEMBER])  # selected on the graph now, not before the results
    assert outlined(win.errors) == UNIT
    _select(win.canvas, [UNIT, MEMBER])  # both nodes of the unit: still that one unit
    assert outlined(win.errors) == UNIT
    _select(win.canvas, [conv, MEMBER])  # two units: none
    assert win.errors.selected is None
    _select(win.canvas, [])
    assert win.errors.selected is None


def test_switching_tabs_shows_the_shown_tabs_selection(
    qtbot, window, open_file, tmp_path, monkeypatch, corpus
):
    fixed_latency(monkeypatch)
    win = window
    tab = calibrated_diff(qtbot, win, open_file, ppocr_qdq(tmp_path))
    units = win.doc.plan.units
    shown = [r.node for r in win.errors.rows]
    convs = [n for n in shown if units[n].op_type == "Conv"]
    on_graph, on_diff = convs[0], convs[-1]
    win.tabs.setCurrentWidget(win.canvas)
    settle()
    _select(win.canvas, [on_graph])
    assert outlined(win.errors) == on_graph
    # the diff tab has nothing selected yet: no bar outlined while it is shown
    win.tabs.setCurrentWidget(tab)
    settle()
    assert tab.float_canvas.selected_nodes() == [] and win.errors.selected is None
    tab.float_canvas.select_nodes([on_diff], center=True)
    settle()
    assert outlined(win.errors) == on_diff
    # back on the graph: its selection's bar, not the diff tab's
    win.tabs.setCurrentWidget(win.canvas)
    settle()
    assert win.canvas.selected_nodes() == [on_graph]
    assert outlined(win.errors) == on_graph
    # and the diff tab again, now with a folded node selected there: the unit it is folded into
    unit, member = next((n, m) for n in units for m in units[n].nodes if m != n and n in shown)
    tab.float_canvas.select_nodes([member], center=True)
    win.tabs.setCurrentWidget(tab)
    settle()
    assert outlined(win.errors) == unit, (unit, member)
    win.tabs.setCurrentWidget(win.canvas)
    settle()
    assert outlined(win.errors) == on_graph


def test_before_results_the_one_node():
    class Unit:
        def __init__(self, node, nodes):
            self.node, self.nodes = node, nodes

    units = {"add": Unit("add", ["add", "clip"]), "conv": Unit("conv", ["conv"])}
    assert outlined_unit(["clip"], units, set()) == "clip"  # no bars yet: the node itself
    assert outlined_unit(["clip", "conv"], units, set()) is None
    assert outlined_unit([], units, set()) is None
    assert outlined_unit(["clip"], units, {"add", "conv"}) == "add"  # bars: its unit's
    assert outlined_unit(["add", "clip"], units, {"add", "conv"}) == "add"
    assert outlined_unit(["clip", "conv"], units, {"add", "conv"}) is None
