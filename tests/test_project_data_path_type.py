"""A project whose ``data.path`` is no string is refused when loaded, naming the field, not by a traceback.

``"path": ["calib.npz"]`` loaded; the replay's Project.data_spec then raised, and its error handler read a
variable the failed call never set: ``workbench-cli quantize P.wbproj -o OUT`` ended in an UnboundLocalError
traceback (exit 1) instead of an error line.
"""

from __future__ import annotations

import json
import shutil

import pytest

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import ProjectError


def test_a_data_path_that_is_no_string_is_one_error_line(corpus, tmp_path, capsys):
    for name in ("model_opset17.onnx", "calib.npz"):
        shutil.copy(corpus / "digits_cnn" / name, tmp_path / name)
    base = api.save_project(api.new_project(tmp_path / "model_opset17.onnx", api.make_recipe("cpu-u8s8"),
                                            data=tmp_path / "calib.npz", samples=8), tmp_path / "p.wbproj")
    doc = json.loads(base.read_text(encoding="utf-8"))
    doc["data"]["path"] = ["calib.npz"]
    bad = tmp_path / "bad.wbproj"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    line = (f"{bad}: invalid project field data.path: must be a string (the calibration data file or folder), not "
            "['calib.npz'].")
    with pytest.raises(ProjectError) as caught:
        api.load_project(bad)
    assert caught.value.message == line
    out = tmp_path / "out.onnx"
    assert main(["quantize", str(bad), "-o", str(out)]) == 2  # failed before: UnboundLocalError
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: {line} Fix the field, or choose the calibration data again in the app and "
                                "re-save."]
    assert not out.exists()
