"""Save and export dialogs of a model whose file name says nothing (every corpus model is a ``model*.onnx`` in a
folder named after it): they proposed "model_opset17.qdq.onnx", "model_opset17.wbproj" ..., names that tell
nothing once saved elsewhere, and the unsaved-changes box asked about "model_opset17.onnx". They now name the
folder: "digits_cnn.qdq.onnx", "digits_cnn/model_opset17.onnx has unsaved ..."."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from workbench.qt import app_window, commands
from workbench.qt.window_title import file_stem


def test_file_stem_names_the_folder_of_a_generic_file():
    assert file_stem(Path("/m/nudenet_320n/model.onnx")) == "nudenet_320n"
    assert file_stem(Path("/m/digits_cnn/model_opset17.onnx")) == "digits_cnn"
    assert file_stem(Path("/m/example/digits_cnn.onnx")) == "digits_cnn"
    assert file_stem(Path("model.onnx")) == "model"  # no folder to name


def test_save_dialogs_name_the_models_folder(window, open_file, corpus, monkeypatch):
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    proposed = []

    def fake(parent, caption="", directory="", *args, **kwargs):
        proposed.append(Path(directory).name)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(fake))
    win.export_dialog()
    win.export_report_dialog()
    win.export_picture_dialog()
    win.save_project_as()
    assert proposed == ["digits_cnn.qdq.onnx", "digits_cnn.report.html", "digits_cnn.png", "digits_cnn.wbproj"]

    asked = []
    monkeypatch.setattr(app_window, "ask_save_changes", lambda parent, name, doing: asked.append(name) or "cancel")
    commands.push_edit(win.doc, commands.set_exclude(win.doc.recipe, ["/f/f.0/Conv"], True), "keep float")
    assert not win.keep_or_drop_changes("quitting")
    assert asked == ["digits_cnn/model_opset17.onnx"]
