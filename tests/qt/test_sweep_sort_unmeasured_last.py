"""Sorting the sweep's table by a figure puts the units it did not measure ("-") last in either order.

Found by a user pass: the sweep of ppocr_mobile_v2_cls measures 32 of its units end to end and the others by
their own output only; sorted by "Gain if float" highest first (the most sensitive first), the table showed the
unmeasured units' "-" rows on top and the measured ones from row 104 down."""

from __future__ import annotations

import math

import pytest
from finished_runs import finished, finished_sweep
from latency_fakes import quantized_faster
from PySide6.QtCore import Qt

from workbench.core.api import FIGURES


@pytest.fixture(autouse=True)
def _latency_scripted(monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized, whatever this machine measures


def column(panel, key: str) -> list[float]:
    col = 2 + list(FIGURES).index(key)
    return [panel.table.item(r, col).value for r in range(panel.table.rowCount())]


def test_unmeasured_units_sort_last_both_ways(qtbot, window, open_file, corpus):
    win = window
    finished_sweep(qtbot, win, open_file, corpus / "ppocr_mobile_v2_cls/model.onnx")
    panel = win.sensitivity
    measured = [r.gain_db for r in win.doc.sensitivity.rows if not math.isnan(r.gain_db)]
    unmeasured = len(win.doc.sensitivity.rows) - len(measured)
    assert measured and unmeasured  # the case: both kinds of rows
    header = panel.table.horizontalHeader()
    for order, want in (
        (Qt.SortOrder.DescendingOrder, sorted(measured, reverse=True)),
        (Qt.SortOrder.AscendingOrder, sorted(measured)),
    ):
        header.setSortIndicator(2 + list(FIGURES).index("gain_db"), order)  # a click on the header
        shown = column(panel, "gain_db")
        assert shown[: len(measured)] == want
        assert all(math.isnan(v) for v in shown[len(measured) :])
    # the sweep's own order: worst first by "only quantized", the unmeasured last
    only = [r.only_quant_db for r in win.doc.sensitivity.rows if not math.isnan(r.only_quant_db)]
    finished(qtbot, win, win.act_sensitivity)
    assert column(panel, "only_quant_db")[: len(only)] == sorted(only)
