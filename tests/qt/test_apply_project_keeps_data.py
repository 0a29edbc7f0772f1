"""File > Apply Project to Model takes the project's calibration data when the open model has none chosen, as
``workbench-cli quantize PROJECT --model NEW.onnx`` reads the project's data: a recipe with bias correction reads
it (the Conv input means) even where every cached range serves. The app took the recipe alone, so a model
opened from a folder without data beside it had no calibration data after the Apply and F5 refused to run."""

from __future__ import annotations

import shutil

from latency_fakes import quantized_faster
from PySide6.QtCore import Qt
from test_app_flow import run_job

from workbench import cli
from workbench.core import api


def test_apply_project_takes_its_data_and_exports_the_cli_retarget_bytes(qtbot, window, open_file, corpus,
                                                                          tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # the app and the in-process CLI measure the same (every unit quantized)
    d = corpus / "digits_cnn"
    proj = tmp_path / "p" / "p.wbproj"
    proj.parent.mkdir()
    shutil.copy(d / "calib.npz", proj.parent / "calib.npz")
    assert cli.main(["quantize", str(d / "model_opset17.onnx"), "--data", str(proj.parent / "calib.npz"),
                     "--samples", "24", "-o", str(tmp_path / "a17.onnx"), "--save-project", str(proj)]) == 0
    project = api.load_project(proj, check_model=False)
    assert project.recipe.bias_correction  # the recipe choice turned it on
    new = tmp_path / "new" / "model_opset13.onnx"  # a folder without data beside the model
    new.parent.mkdir()
    shutil.copy(d / "model_opset13.onnx", new)
    open_file(window, new)
    assert window.doc.data is None
    depth = window.doc.undo_stack.count()

    dialog = window.apply_project(proj)
    qtbot.mouseClick(dialog.apply_button, Qt.MouseButton.LeftButton)
    assert window.doc.recipe.model_dump() == project.recipe.model_dump()
    assert window.doc.data == project.data_spec(proj) and window.doc.samples == 24
    assert window.calibration.data_spec() == project.data_spec(proj)  # the panel shows it
    assert window.doc.undo_stack.count() == depth + 1  # one edit: recipe and data
    window.act_undo.trigger()
    assert window.doc.data is None and window.doc.recipe.model_dump() != project.recipe.model_dump()
    window.act_redo.trigger()
    assert window.doc.data == project.data_spec(proj)

    state, res = run_job(qtbot, window, window.start_calibration, timeout=300_000)
    assert state == "succeeded", res
    out = tmp_path / "app13.onnx"
    state, res = run_job(qtbot, window, lambda: window.export_to(out), timeout=300_000)
    assert state == "succeeded", res
    retargeted = tmp_path / "r13.onnx"
    assert cli.main(["quantize", str(proj), "--model", str(new), "-o", str(retargeted)]) == 0
    assert out.read_bytes() == retargeted.read_bytes()


def test_apply_project_keeps_the_data_chosen(qtbot, window, open_file, corpus, tmp_path, monkeypatch):
    """The open model's own data stays (as ``--data`` does on the CLI); the recipe alone is applied."""
    d = corpus / "digits_cnn"
    proj = tmp_path / "p.wbproj"
    assert cli.main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "16",
                     "-o", str(tmp_path / "a17.onnx"), "--save-project", str(proj), "--no-latency-check"]) == 0
    open_file(window, d / "model_opset13.onnx")  # its calib.npz beside it is chosen
    chosen = window.doc.data
    assert chosen is not None
    samples = window.doc.samples
    dialog = window.apply_project(proj)
    qtbot.mouseClick(dialog.apply_button, Qt.MouseButton.LeftButton)
    assert window.doc.data == chosen and window.doc.samples == samples
