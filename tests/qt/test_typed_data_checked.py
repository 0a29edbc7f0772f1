"""A calibration data path typed in the Calibration panel's Path field was not checked until F5, while a drop and
Browse... check the file against the model's inputs when chosen (test_data_checked_when_chosen). Now Enter (or leaving
the field after an edit) checks it the same way: on a mismatch the previous data stays, with the same status line and
dialog; a path set in code (setText, then sync_data_spec) is not checked there, as before."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from bundled_example import EXAMPLE
from PySide6.QtCore import Qt

SHAPE = "array for input 'input' has a feed of shape [1, 3, 8, 8] but the model fixes [N, 1, 8, 8] (axis 1 differs)"


def _example(tmp_path: Path) -> Path:
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    np.savez(tmp_path / "wrongshape.npz", input=np.zeros((4, 3, 8, 8), np.float32))
    np.savez(tmp_path / "other.npz", input=np.zeros((4, 1, 8, 8), np.float32))
    return tmp_path / "digits_cnn.onnx"


def _type(qtbot, window, path: Path) -> None:
    window.calibration.path.setText(str(path))
    qtbot.keyClick(window.calibration.path, Qt.Key.Key_Return)


def test_a_typed_path_that_does_not_fit_is_refused(qtbot, window, open_file, tmp_path, dialogs):
    open_file(window, _example(tmp_path))
    good = dict(window.doc.data)
    panel = window.calibration
    _type(qtbot, window, tmp_path / "wrongshape.npz")
    assert window.doc.data == good and panel.data_spec() == good  # the previous data stays
    assert panel.path.text() == good["path"]
    status = window.status_label.text()
    assert status.startswith("wrongshape.npz not taken, the previous calibration data stays: ") and SHAPE in status
    assert [d[1] for d in dialogs] == ["Cannot calibrate on wrongshape.npz"] and SHAPE in dialogs.texts()
    dialogs.clear()
    assert not window.doc.undo_stack.canUndo()  # no edit made
    qtbot.keyClick(panel.path, Qt.Key.Key_Return)  # Enter again on the path shown: nothing to check
    assert dialogs == [] and window.doc.data == good


def test_a_typed_path_that_fits_is_taken(qtbot, window, open_file, tmp_path, dialogs):
    open_file(window, _example(tmp_path))
    other = tmp_path / "other.npz"
    _type(qtbot, window, other)
    assert window.doc.data == {"kind": "npz", "path": str(other)}
    assert dialogs == []
    assert window.doc.undo_stack.canUndo()


def test_a_path_set_in_code_is_not_checked_there(qtbot, window, open_file, tmp_path, dialogs):
    open_file(window, _example(tmp_path))
    window.calibration.path.setText(str(tmp_path / "wrongshape.npz"))
    window.sync_data_spec()  # tests and the window set data so; F5 then reports the mismatch
    assert window.doc.data == {"kind": "npz", "path": str(tmp_path / "wrongshape.npz")}
    assert dialogs == []
