"""A failed calibration's line stayed in the Calibration panel after other data was chosen: F5 on wrongnames.npz
failed ("Calibrate failed: wrongnames.npz has no array for input 'input' ..."), then another .npz dropped on the
window (or typed in Path, Enter) left the panel reading that failure beside the new path, as if the new data had
failed too (a recipe edit marked it stale, a data edit did not). The line now says the data changed since."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from bundled_example import EXAMPLE
from PySide6.QtCore import Qt
from test_app_flow import run_job

from workbench.qt.calibration_panel import DATA_CHANGED


def _example(tmp_path: Path) -> Path:
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    shutil.copy(EXAMPLE / "digits_cnn_calib.npz", tmp_path / "wrongnames.npz")  # fits until rewritten
    shutil.copy(EXAMPLE / "digits_cnn_calib.npz", tmp_path / "other.npz")
    return tmp_path / "digits_cnn.onnx"


def _fail_on_wrong_names(qtbot, window, tmp_path, dialogs) -> str:
    window.open_path(tmp_path / "wrongnames.npz")  # dropped on the window: the model's calibration data
    # rewritten after it was taken (a file that does not fit when dropped is refused: test_data_checked_when_chosen)
    np.savez(tmp_path / "wrongnames.npz", image=np.zeros((4, 1, 8, 8), np.float32))
    state, _err = run_job(qtbot, window, window.act_calibrate.trigger, timeout=300_000)
    assert state == "failed"
    failed = window.calibration.status.text()
    assert failed.startswith("Calibrate failed: wrongnames.npz has no array for input 'input'")
    assert [d[1] for d in dialogs] == ["Calibrate failed"]
    dialogs.clear()
    return failed


def test_data_dropped_after_a_failure_marks_the_line(qtbot, window, open_file, tmp_path, dialogs):
    open_file(window, _example(tmp_path))
    failed = _fail_on_wrong_names(qtbot, window, tmp_path, dialogs)
    window.open_path(tmp_path / "other.npz")
    assert window.doc.data["path"] == str(tmp_path / "other.npz")
    assert window.calibration.status.text() == f"{failed} {DATA_CHANGED}"
    window.open_path(tmp_path / "digits_cnn_calib.npz")  # once only
    assert window.calibration.status.text() == f"{failed} {DATA_CHANGED}"


def test_a_path_typed_after_a_failure_marks_the_line(qtbot, window, open_file, tmp_path, dialogs):
    open_file(window, _example(tmp_path))
    failed = _fail_on_wrong_names(qtbot, window, tmp_path, dialogs)
    path = window.calibration.path
    path.setText(str(tmp_path / "other.npz"))
    qtbot.keyClick(path, Qt.Key.Key_Return)
    assert window.doc.data["path"] == str(tmp_path / "other.npz")
    assert window.calibration.status.text() == f"{failed} {DATA_CHANGED}"


def test_the_same_data_keeps_the_failure_as_it_was(qtbot, window, open_file, tmp_path, dialogs):
    open_file(window, _example(tmp_path))
    failed = _fail_on_wrong_names(qtbot, window, tmp_path, dialogs)
    window.calibration.analysis_samples.setValue(8)  # not the data
    window.open_path(tmp_path / "wrongnames.npz")  # the same file again (refused now: it does not fit)
    assert [d[1] for d in dialogs] == ["Cannot calibrate on wrongnames.npz"]
    dialogs.clear()
    assert window.calibration.status.text() == failed
