"""A failed calibration's line left the Calibration panel only at the next calibration: after the data path
was fixed, a sensitivity sweep and a comparison succeeded and the panel still read "Calibrate failed:
wrongnames.npz has no array for input 'x' ..."; and the panel's text box, where the status bar's "Details:
Calibration panel" points, showed two and a half lines."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from bundled_example import EXAMPLE
from test_app_flow import run_job


def _example(tmp_path: Path) -> Path:
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    np.savez(tmp_path / "wrongnames.npz", image=np.zeros((4, 1, 8, 8), np.float32))
    return tmp_path / "digits_cnn.onnx"


def _set_data(window, path: Path) -> None:
    window.calibration.path.setText(str(path))
    window.sync_data_spec()


def test_a_later_success_replaces_a_failed_calibrations_line(qtbot, window, open_file, tmp_path, dialogs):
    open_file(window, _example(tmp_path))
    window.calibration.samples.setValue(16)
    window.calibration.analysis_samples.setValue(8)
    _set_data(window, tmp_path / "wrongnames.npz")
    state, err = run_job(qtbot, window, window.act_calibrate.trigger, timeout=300_000)
    assert state == "failed"
    assert window.calibration.status.text().startswith("Calibrate failed: wrongnames.npz has no array")
    assert [d[1] for d in dialogs] == ["Calibrate failed"]
    dialogs.clear()
    _set_data(window, tmp_path / "digits_cnn_calib.npz")
    state, res = run_job(qtbot, window, window.act_sensitivity.trigger, timeout=300_000)
    assert state == "succeeded", res
    text = window.calibration.status.text()
    assert "failed" not in text and text.startswith("Done: sensitivity of "), text
    bar = window.calibration.progress
    assert bar.value() == bar.maximum() > 0  # not the failed calibration's 0 %


def test_a_failed_sweep_leaves_the_calibrations_own_line(qtbot, window, open_file, tmp_path, dialogs):
    open_file(window, _example(tmp_path))
    window.calibration.samples.setValue(16)
    window.calibration.analysis_samples.setValue(8)
    state, res = run_job(qtbot, window, window.act_calibrate.trigger, timeout=300_000)
    assert state == "succeeded", res
    done = window.calibration.status.text()
    _set_data(window, tmp_path / "wrongnames.npz")
    state, err = run_job(qtbot, window, window.act_sensitivity.trigger, timeout=300_000)
    assert state == "failed"
    assert [d[1] for d in dialogs] == ["Sensitivity failed"]
    dialogs.clear()
    assert window.calibration.status.text() == done  # only a failed job's line is replaced


def test_a_long_result_is_whole_in_the_boxs_tooltip(qtbot, window, open_file, tmp_path):
    """The status bar's "Details: Calibration panel" points to a box that may show two or three lines of it beside
    the Inspector (it scrolls); the box's tooltip holds the whole text."""
    open_file(window, _example(tmp_path))
    long = "Done: 48 node units analysed. " + "Recipe choice: compute+mse (output SQNR on 4 held-out rows). " * 4
    window.calibration.set_running(False, long)
    assert window.calibration.status.toolTip() == long
    window.calibration.set_running(False, "Idle.")
    assert window.calibration.status.toolTip() == ""
