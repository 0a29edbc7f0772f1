"""The report leaves out a sweep measured on other calibration rows, as it leaves out one of another recipe.

Found by a user pass: after the sweep of digits_cnn and a new calibration sample count, the Sensitivity dock
said "Out of date: swept with ... other calibration data", while File > Export Report put the old sweep's
figures in the page as this model's, beside figures measured on the new rows."""

from __future__ import annotations

import pytest
from finished_runs import finished_sweep
from latency_fakes import quantized_faster
from report_sections import report_section

NO_SWEEP = "No end-to-end sweep in this report"


@pytest.fixture(autouse=True)
def _latency_scripted(monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized, whatever this machine measures


def test_a_sweep_of_other_rows_is_left_out_of_the_report(qtbot, window, open_file, corpus, tmp_path):
    win = window
    finished_sweep(qtbot, win, open_file, corpus / "digits_cnn/model_opset17.onnx")
    swept = report_section(qtbot, win, tmp_path / "current.html", "sensitivity")
    assert NO_SWEEP not in swept and f"({win.doc.sensitivity.samples} samples," in swept

    win.calibration.samples.setValue(5)  # other rows: the sweep is out of date
    assert win.sensitivity.stale
    assert NO_SWEEP in report_section(qtbot, win, tmp_path / "other_rows.html", "sensitivity")
    win.calibration.samples.setValue(8)  # its rows again
    assert NO_SWEEP not in report_section(qtbot, win, tmp_path / "again.html", "sensitivity")
