"""The once-per-session note on autosaves of other models tells models of one file name apart.

Opening ppocrv4_rec/model.onnx after a session on nudenet_320n/model.onnx was killed read "Unsaved edits of model.onnx
were autosaved by a session that did not exit cleanly: open that model to restore them." - the model just opened, as
far as the words went (every corpus model is a model.onnx). A name shared with the open model or another listed one
now comes with its folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx
from bundled_example import EXAMPLE_MODEL
from onnx import TensorProto, helper

from workbench.qt import autosave


def test_names_alone_where_they_differ_with_their_folder_where_they_do_not():
    a, b, c = Path("/x/nudenet/model.onnx"), Path("/x/ppocr/model.onnx"), Path("/x/digits.onnx")
    assert autosave.told_apart([a, c]) == ["model.onnx", "digits.onnx"]
    assert autosave.told_apart([a, b, c]) == ["nudenet/model.onnx", "ppocr/model.onnx", "digits.onnx"]
    assert autosave.told_apart([a, c], open_model=b) == ["nudenet/model.onnx", "digits.onnx"]
    assert autosave.told_apart([c], open_model=c) == ["x/digits.onnx"]


def _left_behind(folder: Path, model: Path) -> None:
    """An autosave of ``model`` as a killed session leaves it (no running process owns its note)."""
    (folder / "left.wbproj").write_text("{}")
    (folder / "left.json").write_text(json.dumps({"model_path": str(model), "project_path": None, "saved_at": 1.0}))


def test_the_note_names_the_folder_of_another_model_of_the_same_name(qtbot, window, open_file, autosave_folder,
                                                                    tmp_path):
    other = tmp_path / "nudenet" / "model.onnx"
    other.parent.mkdir()
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(graph), other)
    _left_behind(autosave_folder, other)
    opened = tmp_path / "ppocr" / "model.onnx"
    opened.parent.mkdir()
    shutil.copy(EXAMPLE_MODEL, opened)
    open_file(window, opened)
    assert window.status_label.text().endswith(
        "Unsaved edits of nudenet/model.onnx were autosaved by a session that did not exit cleanly: open that model "
        "to restore them.")
