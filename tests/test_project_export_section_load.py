"""A project's ``export`` section is checked when the project is read: a replay of a damaged one is one line
naming the project file and the field, not a traceback.

Found by a user pass: ``"input_shapes": {"input": 4}`` crashed ``workbench-cli quantize job.wbproj -o out.onnx``
with a TypeError traceback, ``{"input": ["a"]}`` was blamed on an ``--input-shape`` never given, and
``"format": "xyz"`` said "Use --format ..." without naming the project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bundled_example import EXAMPLE

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import ProjectError


@pytest.fixture
def project(tmp_path) -> Path:
    """A project of the example model (copied to ``tmp_path``) with its data and no export section."""
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    model = tmp_path / "digits_cnn.onnx"
    proj = api.new_project(model, api.make_recipe("cpu-u8s8"), data={"kind": "npz", "path": str(model.with_name(
        "digits_cnn_calib.npz"))}, samples=8)
    return api.save_project(proj, tmp_path / "job.wbproj")


def _with_export(path: Path, section) -> Path:
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["export"] = section
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(("section", "field", "why"), [
    ({"format": "qonnx", "input_shapes": {"input": 4}}, "export.input_shapes.input", "Input should be a valid list"),
    ({"format": "qonnx", "input_shapes": {"input": ["a"]}}, "export.input_shapes.input.0",
     "Input should be a valid integer"),
    ({"format": "qonnx", "input_shapes": {"input": [1.5, 1, 8, 8]}}, "export.input_shapes.input.0",
     "Input should be a valid integer"),
    ({"format": "qonnx", "input_shapes": {"input": [0, 1, 8, 8]}}, "export.input_shapes.input.0",
     "Input should be greater than or equal to 1"),
    ({"format": "qonnx", "input_shapes": {"input": []}}, "export.input_shapes.input",
     "List should have at least 1 item after validation, not 0"),
    ({"format": "qonnx", "input_shapes": [4, 1, 8, 8]}, "export.input_shapes", "Input should be a valid dictionary"),
    ({"format": "xyz"}, "export.format", "Input should be 'qdq' or 'qonnx'"),
    ({"format": "qonnx", "input_shape": {"input": [1, 1, 8, 8]}}, "export.input_shape",
     "unknown field 'input_shape' (did you mean 'input_shapes'?)"),
])
def test_a_damaged_export_section_is_one_line_naming_the_project_and_field(project, capsys, section, field, why):
    _with_export(project, section)
    out = project.with_name("out.onnx")
    code = main(["quantize", str(project), "-o", str(out)])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"error: {project}: invalid project field {field}: {why}."), lines[0]
    assert not out.exists() and sorted(p.name for p in project.parent.iterdir()) == [
        "digits_cnn.onnx", "digits_cnn_calib.npz", "job.wbproj"]


@pytest.mark.parametrize("section", [None, {"format": "qdq"}, {"format": "qonnx", "input_shapes": {}},
                                     {"format": "qonnx", "input_shapes": {"input": [2, 1, 8, 8]}}])
def test_good_export_sections_load_as_written(project, section):
    assert api.load_project(_with_export(project, section)).export == section


def test_load_project_raises_project_error(project):
    _with_export(project, {"format": "qonnx", "input_shapes": {"input": 4}})
    with pytest.raises(ProjectError, match=r"invalid project field export\.input_shapes\.input"):
        api.load_project(project)
