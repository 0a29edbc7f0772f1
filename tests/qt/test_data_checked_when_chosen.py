"""An .npz with the wrong input name or shape dropped on the window (or chosen with the Calibration panel's
Browse...) was taken ("wrongnames.npz is now the calibration data of digits_cnn.onnx ...") and the error came only
at F5. Now the file is checked against the model's inputs when chosen (the CLI's --data check: opening the data
source reads the arrays' headers): on a mismatch the previous data stays, and the status line and a dialog name
the file, the input, what is wrong and what to do."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from bundled_example import EXAMPLE
from PySide6.QtWidgets import QFileDialog

WRONG = [
    ("wrongnames.npz", {"image": np.zeros((4, 1, 8, 8), np.float32)},
     "wrongnames.npz has no array for input 'input'; arrays found: image"),
    ("wrongshape.npz", {"input": np.zeros((4, 3, 8, 8), np.float32)},
     "array for input 'input' has a feed of shape [1, 3, 8, 8] but the model fixes [N, 1, 8, 8] (axis 1 differs)"),
]


def _example(tmp_path: Path) -> Path:
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    return tmp_path / "digits_cnn.onnx"


def _refused(window, dialogs, name: str, words: str, good: dict) -> None:
    assert window.doc.data == good and window.calibration.data_spec() == good  # the previous data stays
    status = window.status_label.text()
    assert status.startswith(f"{name} not taken, the previous calibration data stays: ") and words in status, status
    assert "is now the calibration data" not in status
    assert [d[1] for d in dialogs] == [f"Cannot calibrate on {name}"] and words in dialogs.texts()
    dialogs.clear()
    assert not window.doc.undo_stack.canUndo()  # no edit made


@pytest.mark.parametrize("name, arrays, words", WRONG)
def test_a_dropped_file_that_does_not_fit_is_refused(qtbot, window, open_file, tmp_path, dialogs, name, arrays, words):
    open_file(window, _example(tmp_path))
    good = dict(window.doc.data)
    np.savez(tmp_path / name, **arrays)
    window.open_path(tmp_path / name)  # what a drop on the window does
    _refused(window, dialogs, name, words, good)


@pytest.mark.parametrize("name, arrays, words", WRONG)
def test_a_browsed_file_that_does_not_fit_is_refused(qtbot, window, open_file, tmp_path, dialogs, monkeypatch,
                                                     name, arrays, words):
    open_file(window, _example(tmp_path))
    good = dict(window.doc.data)
    np.savez(tmp_path / name, **arrays)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(tmp_path / name), "")))
    window.calibration.browse.click()
    _refused(window, dialogs, name, words, good)


def test_a_file_that_fits_is_taken(qtbot, window, open_file, tmp_path, dialogs, monkeypatch):
    open_file(window, _example(tmp_path))
    other = tmp_path / "other.npz"
    np.savez(other, input=np.zeros((4, 1, 8, 8), np.float32))
    window.open_path(other)
    assert window.doc.data == {"kind": "npz", "path": str(other)}
    assert "other.npz is now the calibration data" in window.status_label.text()
