"""The rows of the Cost and Sensitivity docks follow the graph's selection, as the Errors dock's bars do.

Found by a user pass: a click on the first Conv's row in the Cost dock selected it on the graph; a click on the
Gemm on the graph then left the Conv's row highlighted in the dock (and in the sweep's table), beside a graph
and an Inspector showing the Gemm."""

from __future__ import annotations

import pytest
from latency_fakes import quantized_faster
from test_app_flow import run_job


@pytest.fixture(autouse=True)
def _latency_scripted(monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized: the sweep has a row per compute node


def selected_nodes(panel) -> list[str]:
    return [panel.node_at(i.row()) for i in panel.table.selectionModel().selectedRows()]


def test_cost_and_sweep_rows_follow_the_graph_selection(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    win.calibration.samples.setValue(8)
    win.calibration.choose_first.setChecked(False)
    with qtbot.waitSignal(win.cost.updated, timeout=300_000):
        win.docks["Cost"].toggleViewAction().trigger()
    state, res = run_job(qtbot, win, win.act_sensitivity.trigger, timeout=300_000)
    assert state == "succeeded", res
    graph = win.doc.model.graph.node
    convs = [n.name for n in graph if n.op_type == "Conv"]
    gemm = next(n.name for n in graph if n.op_type == "Gemm")
    relu = next(n.name for n in graph if n.op_type == "Relu")

    cost = win.cost
    cost.table.sortItems(2)  # by MACs: the rows are not in graph order
    cost.click_row(cost.row_of(convs[0]))
    assert win.canvas.selected_nodes() == [convs[0]] and selected_nodes(cost) == [convs[0]]
    win.canvas.select_nodes([gemm])  # on the graph
    assert selected_nodes(cost) == [gemm]
    sweep = win.sensitivity
    assert selected_nodes(sweep) == [gemm] and sweep.table.rowCount() >= 4
    win.canvas.select_nodes([convs[1]])
    assert selected_nodes(cost) == [convs[1]] == selected_nodes(sweep)
    win.canvas.select_nodes([relu])  # no row of its own in either table
    assert selected_nodes(cost) == [] == selected_nodes(sweep)
    win.canvas.select_nodes([convs[0], gemm])  # several: no one row stands for them
    assert selected_nodes(cost) == [] == selected_nodes(sweep)
    win.canvas.select_nodes([gemm])
    assert selected_nodes(cost) == [gemm] == selected_nodes(sweep)
