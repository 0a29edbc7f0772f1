"""A calibration data file opened or dropped where a model goes.

A new user who dropped calib.npz on the window (or opened it with File > Open) got "Cannot open calib.npz: ... is a
NumPy data file (.npz, arrays input), not an ONNX model. Give it as data (--data calib.npz) and a .onnx model in its
place.": a CLI option the app does not have. With a float model open the file is now its calibration data (one
undoable edit); without one the error says in the app's terms what to open first.
"""

from __future__ import annotations

import shutil

import numpy as np
from bundled_example import EXAMPLE


def test_data_opened_with_a_model_open_becomes_its_calibration_data(qtbot, window, open_file, tmp_path, dialogs):
    shutil.copy(EXAMPLE / "digits_cnn.onnx", tmp_path / "digits_cnn.onnx")  # no data beside it
    open_file(window, tmp_path / "digits_cnn.onnx")
    assert window.doc.data is None
    data = tmp_path / "rows.npz"
    np.savez(data, input=np.zeros((4, 1, 8, 8), np.float32))
    window.open_path(data)
    assert window.doc.data == {"kind": "npz", "path": str(data)}
    assert window.calibration.data_spec() == {"kind": "npz", "path": str(data)}
    assert window.doc.model_path == tmp_path / "digits_cnn.onnx"  # the model stays open
    assert window.status_label.text() == ("rows.npz is now the calibration data of digits_cnn.onnx (Calibration "
                                          "panel; Ctrl+Z undoes): Run > Calibrate (F5) calibrates on it.")
    assert dialogs.texts() == ""
    window.doc.undo_stack.undo()
    assert window.doc.data is None and window.calibration.data_spec() is None


def test_a_npy_file_is_taken_as_npy(qtbot, window, open_file, tmp_path):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    data = tmp_path / "rows.NPY"
    np.save(tmp_path / "rows.npy", np.zeros((4, 1, 8, 8), np.float32))
    (tmp_path / "rows.npy").rename(data)
    window.open_path(data)
    assert window.doc.data == {"kind": "npy", "path": str(data)}


def test_data_opened_with_no_model_says_what_to_open_first(qtbot, window, dialogs):
    data = EXAMPLE / "digits_cnn_calib.npz"
    window.open_path(data)
    assert dialogs.texts() == (
        f"Cannot open digits_cnn_calib.npz: {data} is calibration data (a NumPy .npz file), not a model.\n\nTo "
        "calibrate on it, open its float .onnx model first (File > Open), then open or drop this file again, or "
        "choose it in the Calibration panel (Browse...).")
    assert "--data" not in dialogs.texts()
    assert window.doc.model is None and window.status_label.text() == "Could not open digits_cnn_calib.npz."
    dialogs.clear()


def test_data_dropped_on_the_window_becomes_the_calibration_data(qtbot, window, open_file, tmp_path):
    from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
    from PySide6.QtGui import QDropEvent

    open_file(window, EXAMPLE / "digits_cnn.onnx")
    data = tmp_path / "rows.npz"
    np.savez(data, input=np.zeros((4, 1, 8, 8), np.float32))
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(data))])
    event = QDropEvent(QPoint(1, 1), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    event.setAccepted(False)
    window.dragEnterEvent(event)
    assert event.isAccepted()  # the drop was refused before: only .onnx and .wbproj were taken
    window.dropEvent(event)
    assert window.doc.data == {"kind": "npz", "path": str(data)}
    assert window.doc.model_path == EXAMPLE / "digits_cnn.onnx"
