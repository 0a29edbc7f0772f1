"""The project fields the app adds (``analysis_samples``, ``evaluation``) are optional, and the rule that gives a
path-only data spec its kind is the loader's own (the app shows a CLI project's ``--data FOLDER`` by it)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from workbench.core import api
from workbench.core.errors import ProjectError


def _project(tmp_path, **fields):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"not read: check_model=False")
    doc = {"schema_version": 1, "tool_version": "0.1.0", "model": {"path": "m.onnx", "sha256": "0" * 64},
           "recipe": {}, "data": {"path": "calibdir"}, **fields}
    path = tmp_path / "p.wbproj"
    path.write_text(json.dumps(doc))
    return path


def test_a_project_without_the_app_fields_opens_and_one_with_them_keeps_them(tmp_path):
    old = api.load_project(_project(tmp_path), check_model=False)
    assert old.analysis_samples is None and old.export is None
    project = api.load_project(_project(tmp_path, analysis_samples=12), check_model=False)
    assert project.analysis_samples == 12
    api.save_project(project, tmp_path / "again.wbproj")
    assert json.loads((tmp_path / "again.wbproj").read_text())["analysis_samples"] == 12


def test_a_bad_analysis_sample_count_names_the_field(tmp_path):
    with pytest.raises(ProjectError, match="invalid project field analysis_samples"):
        api.load_project(_project(tmp_path, analysis_samples=0), check_model=False)


def test_data_kind_is_what_the_loader_opens_a_path_as(tmp_path):
    (tmp_path / "arrays").mkdir()
    np.savez(tmp_path / "arrays" / "a.npz", x=np.zeros(2))
    (tmp_path / "imgs").mkdir()
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(tmp_path / "imgs" / "a.png")
    kinds = {name: api.data_kind(tmp_path / name) for name in ("arrays", "imgs", "x.npz", "x.npy", "r.py")}
    assert kinds == {"arrays": "folder", "imgs": "images", "x.npz": "npz", "x.npy": "npy", "r.py": "python"}


def test_only_a_python_reader_runs_code():
    assert api.data_runs_code({"kind": "python", "path": "r.py"})
    assert api.data_runs_code({"path": "r.py"})
    assert not api.data_runs_code({"kind": "npz", "path": "c.npz"})


def test_evaluation_files_are_saved_relative_and_read_absolute(tmp_path):
    project = api.load_project(_project(tmp_path, evaluation={"data": "eval.npz", "metric": "m.py", "samples": 5}),
                               check_model=False)
    spec = project.evaluation_spec(tmp_path / "p.wbproj")
    assert spec == {"data": str(tmp_path / "eval.npz"), "metric": str(tmp_path / "m.py"), "samples": 5}
    project.evaluation = dict(spec, metric="top1")
    api.save_project(project, tmp_path / "again.wbproj")
    saved = json.loads((tmp_path / "again.wbproj").read_text())["evaluation"]
    assert saved == {"data": "eval.npz", "metric": "top1", "samples": 5}


def test_a_bad_evaluation_field_names_it(tmp_path):
    project = api.load_project(_project(tmp_path, evaluation={"data": 3}), check_model=False)
    with pytest.raises(ProjectError, match="evaluation.data must be a string"):
        project.evaluation_spec(tmp_path / "p.wbproj")
