"""A project saved before calibration data was chosen (no ``data``, no calibration cache) replayed by
``quantize`` / ``analyze`` / ``report`` / ``sweep``: one line naming the project and the field to add. The
calibration step's own error said "Pass --data FILE.npz", which a replay refuses (quantize) or reads only as
the rows to measure (analyze: the error came back with --data given). A dynamic recipe still replays."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from qdq_helpers import cli_model_files

from workbench.cli import main


def _project(folder: Path, preset: str = "cpu-u8s8") -> Path:
    cli_model_files(folder)
    project = folder / "p.wbproj"
    assert main(["quantize", str(folder / "m.onnx"), "--data", str(folder / "calib.npz"), "--preset", preset,
                 "--no-auto", "--no-latency-check", "-o", str(folder / "first.onnx"),
                 "--save-project", str(project)]) == 0
    doc = json.loads(project.read_text())
    doc["data"], doc["calibration"] = None, None  # as the app saves a model opened without data
    project.write_text(json.dumps(doc))
    (folder / "first.onnx").unlink()
    return project


@pytest.mark.parametrize("argv", [["quantize", "{p}", "-o", "{d}/out/q.onnx"],
                                  ["analyze", "{p}", "--data", "{d}/calib.npz"],
                                  ["report", "{p}", "-o", "{d}/out/r.html"],
                                  ["sweep", "{p}"]])
def test_static_project_without_data(tmp_path, capsys, argv):
    project = _project(tmp_path)
    (tmp_path / "out").mkdir()
    capsys.readouterr()
    code = main([a.format(p=project, d=tmp_path) for a in argv])
    lines = capsys.readouterr().err.splitlines()
    assert code == 2
    assert [ln for ln in lines if ln.startswith("error:")] == [lines[-1]]
    assert lines[-1] == (f"error: {project}: the project names no calibration data and holds no calibration cache, "
                         "so its recipe (preset cpu-u8s8) cannot be calibrated on replay. Add \"data\": {\"path\": "
                         "\"calib.npz\"} to the project file (a path relative to it), or open it in Workbench, pick the "
                         "data in the Calibration panel and save it.")
    assert "--data" not in lines[-1]
    assert list((tmp_path / "out").iterdir()) == []


def test_dynamic_project_without_data_replays(tmp_path, capsys):
    project = _project(tmp_path, preset="dynamic-u8")
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(project), "-o", str(out)]) == 0
    assert any(n.op_type == "DynamicQuantizeLinear" for n in onnx.load(str(out)).graph.node)
