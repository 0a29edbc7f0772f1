"""The project writer never writes a project onto a file the project names: its model, calibration data,
eval data or metric file (a save-as onto one replaced it with JSON)."""

from __future__ import annotations

import os

import pytest

from workbench.core import api
from workbench.core.errors import ExportError

FILES = {"model.onnx": b"model bytes", "calib.npz": b"calib bytes", "eval.npz": b"eval bytes",
         "metric.py": b"def metric(outputs, batch):\n    return 0.0\n", "reader.py": b"def read():\n    return []\n"}


@pytest.fixture
def folder(tmp_path):
    for name, data in FILES.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


def _project(folder, data="calib.npz"):
    project = api.new_project(folder / "model.onnx", api.make_recipe("cpu-u8s8"), data=folder / data, samples=4,
                              sha256="0" * 64)
    project.evaluation = {"data": str(folder / "eval.npz"), "metric": "metric.py", "samples": None}
    return project


@pytest.mark.parametrize(("name", "what"), [("model.onnx", "the project's model"),
                                            ("calib.npz", "the project's calibration data"),
                                            ("eval.npz", "the project's eval data"),
                                            ("metric.py", "the project's metric file")])
@pytest.mark.parametrize("write", [api.save_project, api.stage_project])
def test_a_project_is_never_written_onto_a_file_it_names(folder, name, what, write):
    project = _project(folder)
    with pytest.raises(ExportError) as err:
        write(project, folder / name)
    assert f"{folder / name} is {what}" in err.value.message and "\n" not in str(err.value.message)
    assert (folder / name).read_bytes() == FILES[name]
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)  # no temporary file left


def test_a_python_reader_a_symlink_and_relative_paths_are_refused_too(folder):
    project = _project(folder, data="reader.py")
    with pytest.raises(ExportError, match="calibration data"):
        api.save_project(project, folder / "reader.py")
    os.symlink(folder / "eval.npz", folder / "link.wbproj")
    with pytest.raises(ExportError, match="eval data"):
        api.save_project(_project(folder), folder / "link.wbproj")
    saved = api.save_project(_project(folder), folder / "p.wbproj")
    loaded = api.load_project(saved, check_model=False)  # paths now relative to the project
    assert loaded.evaluation["data"] == "eval.npz" and loaded.data["path"] == "calib.npz"
    with pytest.raises(ExportError, match="eval data"):
        api.save_project(loaded, folder / "eval.npz")
    assert (folder / "eval.npz").read_bytes() == FILES["eval.npz"]


def test_a_project_saved_elsewhere_is_written(folder):
    saved = api.save_project(_project(folder), folder / "p.wbproj")
    again = api.save_project(api.load_project(saved, check_model=False), saved)  # Ctrl+S onto itself
    assert again.read_bytes() == saved.read_bytes()
