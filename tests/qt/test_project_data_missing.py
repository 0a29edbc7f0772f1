"""A project whose calibration data was moved or deleted says so when it opens.

The status read "Project p.wbproj: recipe and data restored (no saved results)." and the Calibration panel's path
looked as usual; only F5 then failed with "...calib.npz: no such data file". The project still opens (the data can
be chosen again), and its status now names the missing data and what to do.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bundled_example import EXAMPLE


def _project(window, open_file, folder: Path) -> Path:
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, folder / name)
    open_file(window, folder / "digits_cnn.onnx")
    assert window.doc.data == {"kind": "npz", "path": str(folder / "digits_cnn_calib.npz")}
    return window.save_project_to(folder / "p.wbproj")


def test_a_project_whose_data_is_gone_says_so_when_opened(qtbot, window, open_file, tmp_path, dialogs):
    project = _project(window, open_file, tmp_path)
    data = tmp_path / "digits_cnn_calib.npz"
    data.unlink()
    open_file(window, project)
    assert window.doc.project_path == project and window.doc.data["path"] == str(data)  # opened, the path kept
    assert window.status_label.text() == (
        f"Opened digits_cnn.onnx: 10 nodes. Project p.wbproj: recipe and data restored (no saved results). Its "
        f"calibration data {data} was not found (moved or deleted): choose it in the Calibration panel (Browse...) "
        "before calibrating (F5).")
    assert dialogs.texts() == ""


def test_a_project_whose_data_is_there_says_nothing_of_it(qtbot, window, open_file, tmp_path):
    project = _project(window, open_file, tmp_path)
    open_file(window, project)
    assert window.status_label.text() == ("Opened digits_cnn.onnx: 10 nodes. Project p.wbproj: recipe and data "
                                          "restored (no saved results).")
