"""A folder or a reader typed in the Calibration panel's Path while Source is "Array file (.npz / .npy)".

The placeholder offers "calib.npz, a folder, or a reader.py", but a folder typed there was read as an .npz: F5 said
"FOLDER: no such data file. Check the path." of a folder that exists. Source now follows what was typed, as
``workbench-cli quantize --data PATH`` opens it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from bundled_example import EXAMPLE


def _type_path(window, text: str) -> None:
    window.calibration.path.setText(text)
    window.calibration.path.editingFinished.emit()


def _folder_of_arrays(tmp_path: Path) -> Path:
    folder = tmp_path / "rows"
    folder.mkdir()
    shutil.copy(EXAMPLE / "digits_cnn_calib.npz", folder / "a.npz")
    return folder


def test_a_folder_typed_as_an_array_file_is_read_as_a_folder(qtbot, window, open_file, tmp_path):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    assert window.calibration.kind.currentData() == "file"
    folder = _folder_of_arrays(tmp_path)
    _type_path(window, str(folder))
    assert window.calibration.kind.currentData() == "folder"
    assert window.doc.data == {"kind": "folder", "path": str(folder)}
    window.doc.undo_stack.undo()  # one edit: the data beside the model back
    assert window.doc.data == {"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}


@pytest.mark.parametrize(("name", "kind"), [("reader.py", "python"), ("pictures", "images")])
def test_a_reader_or_an_image_folder_typed_takes_its_source(qtbot, window, open_file, tmp_path, name, kind):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    path = tmp_path / name
    if kind == "images":
        from PIL import Image

        path.mkdir()
        Image.fromarray(np.zeros((8, 8), np.uint8)).save(path / "0.png")
    else:
        path.write_text("def read(): return []\n")
    _type_path(window, str(path))
    assert window.calibration.kind.currentData() == kind
    assert window.doc.data["kind"] == kind and window.doc.data["path"] == str(path)


def test_a_file_typed_keeps_the_array_source(qtbot, window, open_file, tmp_path):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    missing = tmp_path / "typo.npz"  # a typo: the job says "no such data file", the Source stays
    _type_path(window, str(missing))
    assert window.calibration.kind.currentData() == "file"
    assert window.doc.data == {"kind": "npz", "path": str(missing)}
