"""The app exports QONNX as the CLI does, and Ctrl+E exports in the open project's format.

The CLI (``quantize --format qonnx``, and the replay of a project whose ``export`` section says QONNX)
writes static input shapes (qonnx's executor needs every shape static; its cleanup turns a symbolic
batch into 0) and records ``{"format": "qonnx", "input_shapes": ...}`` in the project. The app's QONNX
export wrote the symbolic batch and recorded nothing; Ctrl+E on a QONNX project wrote QDQ.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from bundled_example import EXAMPLE
from cli_projects import cli_quantize, read_json, run_job
from latency_fakes import fixed_latency
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtWidgets import QFileDialog


def _example(tmp_path: Path) -> Path:
    """A copy of the bundled example (model and its calibration data beside it) in ``tmp_path``."""
    folder = tmp_path / "example"
    folder.mkdir()
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, folder / name)
    return folder / "digits_cnn.onnx"


def _input_shapes(path: Path) -> dict[str, list]:
    return {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
            for i in onnx.load(str(path)).graph.input}


def _ops(path: Path) -> set[str]:
    return {n.op_type for n in onnx.load(str(path)).graph.node}


def test_app_qonnx_export_has_the_cli_static_shapes_and_section(qtbot, window, open_file, tmp_path, monkeypatch):
    # fixed probe results: a unit the latency placement keeps float at an export is an undo step of its own, so
    # two exports that measured digits_cnn's first Conv and AveragePool differently would add one before the undo
    fixed_latency(monkeypatch)
    model = _example(tmp_path)
    calib = model.with_name("digits_cnn_calib.npz")
    cli_quantize(model, "--data", calib, "--samples", "32", "--format", "qonnx", "-o", tmp_path / "cli.onnx",
                 "--save-project", tmp_path / "cli.wbproj", fixed_latency=True)
    cli_shapes = _input_shapes(tmp_path / "cli.onnx")
    assert cli_shapes == {"input": [1, 1, 8, 8]}  # the symbolic batch N fixed to 1

    open_file(window, model)
    window.calibration.set_data_spec({"kind": "npz", "path": str(calib)}, 32)
    window._on_spec_changed()
    state, res = run_job(qtbot, window, lambda: window.export_to(tmp_path / "app.onnx", "qonnx"))
    assert state == "succeeded", res
    assert "Quant" in _ops(tmp_path / "app.onnx")
    assert _input_shapes(tmp_path / "app.onnx") == cli_shapes
    # every tensor's shape static, as qonnx's executor needs
    proto = onnx.load(str(tmp_path / "app.onnx"))
    dims = [d for vi in proto.graph.value_info for d in vi.type.tensor_type.shape.dim]
    assert dims and all(d.HasField("dim_value") and d.dim_value > 0 for d in dims)

    # the project records the export as the CLI's --save-project does; undoable
    assert window.doc.export == read_json(tmp_path / "cli.wbproj")["export"] == {"format": "qonnx", "input_shapes": {}}
    assert window.doc.modified
    saved = window.save_project_to(tmp_path / "app.wbproj")
    assert read_json(saved)["export"] == read_json(tmp_path / "cli.wbproj")["export"]
    # its replay writes QONNX with the same shapes
    cli_quantize(saved, "-o", tmp_path / "replay.onnx", fixed_latency=True)
    assert "Quant" in _ops(tmp_path / "replay.onnx") and _input_shapes(tmp_path / "replay.onnx") == cli_shapes
    # exporting QDQ afterwards records the default again (no section), as the CLI does for QDQ
    state, res = run_job(qtbot, window, lambda: window.export_to(tmp_path / "app.qdq.onnx", "qdq"))
    assert state == "succeeded", res
    assert window.doc.export is None and "QuantizeLinear" in _ops(tmp_path / "app.qdq.onnx")
    window.doc.undo_stack.undo()
    assert window.doc.export == {"format": "qonnx", "input_shapes": {}}


def test_ctrl_e_exports_in_the_project_format_with_its_input_shapes(qtbot, window, open_file, tmp_path,
                                                                   monkeypatch):
    model = _example(tmp_path)
    calib = model.with_name("digits_cnn_calib.npz")
    proj = tmp_path / "q.wbproj"
    # fixed probe results in the CLI and the app: units the app's export measured differently from the CLI's
    # would be an edit (kept float) and leave the project modified
    fixed_latency(monkeypatch)
    cli_quantize(model, "--data", calib, "--samples", "32", "--format", "qonnx", "--input-shape", "input:4,1,8,8",
                 "-o", tmp_path / "cli.onnx", "--save-project", proj, fixed_latency=True)
    assert read_json(proj)["export"] == {"format": "qonnx", "input_shapes": {"input": [4, 1, 8, 8]}}
    cli_quantize(proj, "-o", tmp_path / "replay.onnx", fixed_latency=True)
    replay_shapes = _input_shapes(tmp_path / "replay.onnx")
    assert replay_shapes == {"input": [4, 1, 8, 8]}

    open_file(window, proj)
    target = tmp_path / "ctrl_e"  # no suffix typed: .onnx added
    asked = []

    def fake(parent, title, start, filters, selected="", *a, **k):
        asked.append((start, filters, selected))
        return str(target), selected  # the user accepts the file type offered first

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(fake))
    assert window.act_export.shortcut().toString() == "Ctrl+E"
    state, res = run_job(qtbot, window, window.act_export.trigger)
    assert state == "succeeded", res
    assert asked[0][2] == "QONNX (*.onnx)" and asked[0][0].endswith("digits_cnn.qonnx.onnx")
    written = target.with_suffix(".onnx")
    assert "Quant" in _ops(written) and "QuantizeLinear" not in _ops(written)
    assert _input_shapes(written) == replay_shapes
    assert window.doc.export == read_json(proj)["export"]  # unchanged: no edit
    assert not window.doc.modified


def _project_exporting_qonnx(window, open_file, tmp_path, shapes):
    """The example model's project saved from ``window``, with an export section asking for QONNX at
    ``shapes`` written into the file (as a hand edit would)."""
    open_file(window, _example(tmp_path))
    proj = window.save_project_to(tmp_path / "p.wbproj")
    doc = read_json(proj)
    doc["export"] = {"format": "qonnx", "input_shapes": shapes}
    proj.write_text(json.dumps(doc), encoding="utf-8")
    return proj


@pytest.mark.parametrize(("shapes", "message"), [
    ({"input": [2, 3, 8, 8]},  # the model has 1 channel
     "p.wbproj: field export.input_shapes: input:2,3,8,8: dimension 1 of input 'input' is fixed to 1 in "
     "digits_cnn.onnx (N x 1 x 8 x 8)."),
])
def test_project_input_shapes_that_do_not_fit_are_refused_before_any_work(qtbot, window, open_file, dialogs,
                                                                         tmp_path, monkeypatch, shapes, message):
    proj = _project_exporting_qonnx(window, open_file, tmp_path, shapes)
    open_file(window, proj)
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda parent, title, start, filters, selected, *a: (str(tmp_path / "out.onnx"),
                                                                                          selected)))
    window.act_export.trigger()  # Ctrl+E: the project's format, QONNX
    assert not window.runs.busy
    [(kind, _title, text)] = dialogs
    dialogs.clear()
    assert kind == "critical"
    assert text.splitlines()[0] == message
    assert not (tmp_path / "out.onnx").exists()


def test_qonnx_of_a_model_with_symbolic_image_size_says_why_it_stays_symbolic(qtbot, window, open_file, tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "H", "W"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, "H", "W"])
    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(2, 2, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                               helper.make_node("Relu", ["c"], ["y"], name="relu")], "g", [x], [y], [w])
    path = tmp_path / "hw.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(1).normal(size=(8, 2, 6, 6)).astype(np.float32))
    open_file(window, path)
    assert window.doc.data["path"] == str(tmp_path / "calib.npz")
    state, res = run_job(qtbot, window, lambda: window.export_to(tmp_path / "out.onnx", "qonnx"))
    assert state == "succeeded", res
    assert _input_shapes(tmp_path / "out.onnx") == {"x": ["N", 2, "H", "W"]}  # as the CLI writes it
    status = window.status_label.text()
    assert "Note: hw.onnx: QONNX written with symbolic input shapes" in status and "x [N, 2, H, W]" in status


@pytest.mark.parametrize(("shapes", "field", "why"), [
    ({"input": 4}, "export.input_shapes.input", "Input should be a valid list"),
    ([4, 1, 8, 8], "export.input_shapes", "Input should be a valid dictionary"),
])
def test_a_project_whose_input_shapes_are_malformed_is_refused_when_opened(qtbot, window, open_file, dialogs,
                                                                          tmp_path, shapes, field, why):
    proj = _project_exporting_qonnx(window, open_file, tmp_path, shapes)
    window.open_path(proj)
    assert not window.runs.busy and window._open_job is None
    [(kind, _title, text)] = dialogs
    dialogs.clear()
    assert kind == "critical"
    assert text.splitlines()[0] == f"{proj}: invalid project field {field}: {why}."
    assert window.doc.project_path == proj and window.doc.export is None  # the saved project stays open
