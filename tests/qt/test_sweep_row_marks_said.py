"""The sweep's table says what its bold and greyed rows mean (they were said only in the rows' tooltips).

Found by a user pass: after the sweep of ppocr_mobile_v2_cls and its suggestion applied, the table showed bold
rows and greyed rows, nothing under or above it saying which were the suggestion and which the recipe keeps
float."""

from __future__ import annotations

import pytest
from finished_runs import finished_sweep
from latency_fakes import quantized_faster
from PySide6.QtCore import Qt

from workbench.qt.commands import push_edit, set_exclude

BOLD = "in bold: suggested to keep in float"
GREY = "greyed: kept in float by the current recipe"


@pytest.fixture(autouse=True)
def _latency_scripted(monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized, whatever this machine measures


def bold_rows(panel) -> set[str]:
    return {panel.node_at(r) for r in range(panel.table.rowCount()) if panel.table.item(r, 0).font().bold()}


def grey_rows(panel) -> set[str]:
    return {
        panel.node_at(r)
        for r in range(panel.table.rowCount())
        if panel.table.item(r, 0).data(Qt.ItemDataRole.ForegroundRole) is not None
    }


def test_the_bold_and_greyed_rows_are_said(qtbot, window, open_file, corpus):
    win = window
    finished_sweep(qtbot, win, open_file, corpus / "digits_cnn/model_opset17.onnx")
    panel, suggested = win.sensitivity, set(win.doc.suggestion)
    assert suggested and bold_rows(panel) == suggested and not grey_rows(panel)
    assert f"Rows {BOLD}." in panel.summary.text() and GREY not in panel.summary.text()

    win.act_apply_suggestion.trigger()  # the recipe keeps them float: their rows greyed
    assert grey_rows(panel) == suggested
    assert f"Rows {BOLD}; {GREY}." in panel.summary.text()
    win.act_undo.trigger()
    assert not grey_rows(panel) and GREY not in panel.summary.text()

    other = next(r.node for r in win.doc.sensitivity.rows if r.node not in suggested)
    push_edit(win.doc, set_exclude(win.doc.recipe, [other], True), "Keep in float")
    assert grey_rows(panel) == {other} and f"Rows {BOLD}; {GREY}." in panel.summary.text()
