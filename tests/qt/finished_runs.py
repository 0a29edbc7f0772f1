"""A model opened and calibrated on 8 rows (not the first 8) in a window, then a run finished on it: the autotune of
digits_cnn (cosine on 16 eval samples, target 0: every recipe of the curve measured) or an end-to-end sweep.
The tests then change the rows or the recipe and set them back."""

from __future__ import annotations

from pathlib import Path

from test_app_flow import run_job

DIGITS_CNN = "digits_cnn/model_opset17.onnx"


def calibrated(win, open_file, model: Path) -> None:
    """Open ``model`` in ``win`` and calibrate on 8 rows, not the first 8."""
    open_file(win, model)
    win.calibration.samples.setValue(8)
    win.calibration.choose_first.setChecked(False)


def finished(qtbot, win, action) -> dict:
    """Trigger ``action``, wait for its job and check it succeeded; returns the job's result."""
    state, res = run_job(qtbot, win, action.trigger, timeout=300_000)
    assert state == "succeeded", res
    return res


def finished_autotune(qtbot, win, open_file, corpus: Path) -> dict:
    """digits_cnn calibrated and autotuned (cosine on 16 eval samples, target 0); returns the run's result."""
    calibrated(win, open_file, corpus / DIGITS_CNN)
    win.evaluate_panel.settings.set_metric("cosine")
    win.evaluate_panel.settings.samples.setValue(16)
    win.autotune_panel.target.setValue(0.0)
    return finished(qtbot, win, win.act_autotune)


def finished_sweep(qtbot, win, open_file, model: Path) -> dict:
    """``model`` calibrated and swept end to end (Run > Sensitivity); returns the sweep's result."""
    calibrated(win, open_file, model)
    return finished(qtbot, win, win.act_sensitivity)
