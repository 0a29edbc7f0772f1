"""The Sensitivity table explains a negative "Gain if float" and never shows "-0.00"; its headline says which rows
it is over and why the Errors panel's output SQNR differs (ppocrv4_rec: -3.04 dB for p2o.Conv.7 unexplained;
ppocr_mobile_v2_cls: "69.97 dB over 8 samples" beside the Errors panel's 23.8 dB over 64 rows)."""

from __future__ import annotations

from test_app_flow import run_job
from test_local_sqnr_view import _chain

from workbench.core.analysis.sensitivity import SweepResult, UnitSensitivity
from workbench.qt.sensitivity_panel import SensitivityPanel


def _panel(qtbot) -> SensitivityPanel:
    panel = SensitivityPanel()
    qtbot.addWidget(panel)
    rows = [UnitSensitivity("p2o.Conv.6", "Conv", 12.58, 12.43, 28.12, 2.80),
            UnitSensitivity("p2o.Mul.26", "Mul", 13.92, 9.63, 28.86, -0.0001),
            UnitSensitivity("p2o.Conv.7", "Conv", 14.06, 6.59, 25.98, -3.04)]
    panel.set_result(SweepResult(rows, 9.63, 8, 6), ["p2o.Conv.6"])
    return panel


def _cell(panel, node: str, column: int) -> str:
    row = next(r for r in range(panel.table.rowCount()) if panel.node_at(r) == node)
    return panel.table.item(row, column).text()


def test_a_negative_gain_is_explained_and_minus_zero_reads_zero(qtbot):
    panel = _panel(qtbot)
    gain = panel.table.columnCount() - 1
    assert panel.table.horizontalHeaderItem(gain).text() == "Gain if\nfloat\n(dB)"
    assert _cell(panel, "p2o.Conv.7", gain) == "-3.04"
    assert _cell(panel, "p2o.Mul.26", gain) == "0.00"  # was "-0.00"
    tip = panel.table.horizontalHeaderItem(gain).toolTip().replace("\n", " ")
    assert "Negative: keeping it float made the output worse" in tip
    assert "ranges downstream were calibrated with this unit quantized" in tip and "cancelled" in tip
    assert all(panel.table.horizontalHeaderItem(c).toolTip() for c in range(2, gain + 1))
    assert ("1 unit has a negative gain if float: keeping it float made the output worse (hover the column "
            "title for why).") in panel.summary.text()


def test_the_headline_names_its_rows_and_why_the_errors_figure_differs(qtbot):
    panel = _panel(qtbot)
    assert "all quantized: 9.63 dB over the first 8 calibration rows." in panel.summary.text()
    panel.set_errors_outputs([{"name": "y", "sqnr_db": 23.8, "samples": 64, "worst_row_sqnr_db": 2.7,
                               "worst_row": 32, "analysis_samples": 32}])
    assert ("The Errors panel's output SQNR, 23.8 dB, is over all 64 calibration rows (its worst row, 32 at 2.7 dB, "
            "is not among the sweep's), with onnxruntime's fused kernels (the sweep runs the QDQ graph as "
            "written).") in panel.summary.text()
    panel.set_errors_outputs([{"name": "y", "sqnr_db": 9.63, "samples": 8, "worst_row_sqnr_db": 2.7,
                               "worst_row": 3, "analysis_samples": 8}])  # the same rows, the same figure
    assert "Errors panel" not in panel.summary.text()


def test_the_sweep_says_which_rows_its_headline_is_over(qtbot, window, open_file, tmp_path, monkeypatch):
    """The sweep measured the first 8 rows; the Errors panel's output SQNR is over all 40 (ppocr_mobile_v2_cls:
    69.97 dB against 23.8 dB, the worst row not among the sweep's)."""
    win, _path, res = _chain(qtbot, window, open_file, tmp_path, monkeypatch)
    state, sweep = run_job(qtbot, win, win.act_sensitivity.trigger, timeout=300_000)
    assert state == "succeeded", sweep
    out = res["outputs"][0]
    assert out["samples"] == 40 and sweep["sweep"]["samples"] == 8
    text = win.sensitivity.summary.text()
    assert f"all quantized: {sweep['sweep']['all_quant_db']:.2f} dB over the first 8 calibration rows." in text
    assert f"The Errors panel's output SQNR, {out['sqnr_db']:.1f} dB, is over all 40 calibration rows" in text
    assert "(the sweep runs the QDQ graph as written)" in text
