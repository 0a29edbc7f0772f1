"""A project the app saves records the sha256 of its model's external data files, as the CLI's does: saved
without them, its replay quantized retrained weights saved beside the same graph file with the project's
stale calibration ranges, without a word."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import onnx
from bundled_example import EXAMPLE_MODEL

from workbench.core import api


def _external_model(folder: Path) -> tuple[Path, Path]:
    folder.mkdir()
    onnx.save_model(onnx.load(str(EXAMPLE_MODEL)), str(folder / "m.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="m.onnx.data", size_threshold=0)
    return folder / "m.onnx", folder / "m.onnx.data"


def test_the_apps_project_records_the_external_data_files(window, open_file, tmp_path):
    model, data = _external_model(tmp_path / "a")
    recorded = [["m.onnx.data", hashlib.sha256(data.read_bytes()).hexdigest()]]
    open_file(window, model)
    project = tmp_path / "p.wbproj"
    window.save_project_to(project)
    assert json.loads(project.read_text())["model"]["external_data"] == recorded
    window.start_new_project()  # File > New Project: the same model, hashed when it was opened
    window.save_project_to(tmp_path / "p2.wbproj")
    assert json.loads((tmp_path / "p2.wbproj").read_text())["model"]["external_data"] == recorded
    # other weights beside the same graph file: the project no longer matches its model
    assert api.is_project_model(project, model)
    data.write_bytes(data.read_bytes()[:-4] + b"\0\0\0\0")
    assert not api.is_project_model(project, model)


def test_the_apps_project_of_a_model_without_external_data_records_none(window, open_file, tmp_path):
    open_file(window, EXAMPLE_MODEL)
    window.save_project_to(tmp_path / "p.wbproj")
    assert sorted(json.loads((tmp_path / "p.wbproj").read_text())["model"]) == ["path", "sha256"]
