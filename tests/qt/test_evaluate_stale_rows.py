"""The Evaluate panel says when its figures were measured with other calibration rows.

Found by a user pass: after a new calibration sample count (or data file), the Evaluate panel still showed
the quantized metric of the ranges of the old rows as current; only a recipe change was said."""

from __future__ import annotations

from bundled_example import EXAMPLE
from test_app_flow import run_job

STALE_ROWS = " The calibration data changed since: evaluate again (F9)."


def test_evaluate_figures_of_other_calibration_rows_are_marked(qtbot, window, open_file):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    window.calibration.samples.setValue(16)
    settings, panel = window.evaluate_panel.settings, window.evaluate_panel
    settings.data.setText(str(EXAMPLE / "digits_cnn_eval.npz"))
    settings.set_metric("cosine")
    settings.samples.setValue(16)
    state, res = run_job(qtbot, window, window.act_evaluate.trigger, timeout=300_000)
    assert state == "succeeded", res
    current = panel.summary.text()
    assert current.startswith("16 samples of digits_cnn_eval.npz") and "changed since" not in current
    window.calibration.samples.setValue(8)
    assert panel.summary.text() == current + STALE_ROWS
    window.calibration.samples.setValue(16)  # the rows it was measured on
    assert panel.summary.text() == current
