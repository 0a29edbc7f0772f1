"""The window title names a generically named model with its folder (pytest-qt, offscreen): every
corpus model is a model.onnx in its own folder, and the title read "model.onnx - Workbench" for all
of them."""

from __future__ import annotations

import shutil

from bundled_example import EXAMPLE_MODEL

from workbench.qt.commands import push_edit, set_exclude
from workbench.qt.window_title import shown_name, window_title


def test_a_generic_model_name_is_shown_with_its_folder(qtbot, window, open_file, tmp_path):
    folder = tmp_path / "my_digits"
    folder.mkdir()
    shutil.copy(EXAMPLE_MODEL, folder / "model.onnx")
    open_file(window, folder / "model.onnx")
    assert window.windowTitle() == "my_digits/model.onnx - Workbench"
    first = next(iter(window.doc.plan.units))
    assert push_edit(window.doc, set_exclude(window.doc.recipe, [first], True), "Keep it float")
    assert window.windowTitle() == "my_digits/model.onnx * - Workbench"

    shutil.copy(EXAMPLE_MODEL, folder / "digits_cnn.onnx")  # a name of its own: the name alone
    open_file(window, folder / "digits_cnn.onnx")
    assert window.windowTitle() == "digits_cnn.onnx - Workbench"


def test_which_names_are_generic():
    assert shown_name("/m/nudenet_320n/model.onnx") == "nudenet_320n/model.onnx"
    assert shown_name("/m/digits_cnn/model_opset17.onnx") == "digits_cnn/model_opset17.onnx"
    assert shown_name("/m/yolo/Model.q.onnx") == "yolo/Model.q.onnx"
    assert shown_name("/m/jobs/project.wbproj") == "jobs/project.wbproj"
    assert shown_name("/m/corpus/nudenet_320n.onnx") == "nudenet_320n.onnx"
    assert shown_name("/m/corpus/modelnet40.onnx") == "modelnet40.onnx"  # "model" must be a whole word
    assert shown_name("model.onnx") == "model.onnx"  # no folder to add
    assert window_title(None) == "Workbench"
    assert window_title("/m/a/model.onnx", modified=True) == "a/model.onnx * - Workbench"
