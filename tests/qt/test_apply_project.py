"""File > Apply Project to Model... and File > Export Model Explorer Data... in the app.

A project made on digits_cnn opset 17 (CLI) is applied in the app to the opset 13 file: the match
table says every override matched by name, Apply lands them in one undoable edit, and the app's
calibrate + export gives the bytes of the CLI's fresh quantize of the opset 13 file with the same
recipe. The app's Model Explorer export then holds one node per analysed unit, under the ids
Model Explorer's ONNX adapter gives the opset 13 file.
"""

from __future__ import annotations

import json

import pytest
from latency_fakes import quantized_faster
from model_explorer_onnx.main import ONNXAdapter
from PySide6.QtCore import Qt

from workbench import cli
from workbench.core import api

OVERRIDES = {"/f/f.3/Conv": {"activation": {"dtype": "uint16"}},
             "/f/f.7/Conv": {"weight": {"observer": "minmax", "granularity": "per_tensor"}},
             "/head/head.2/Gemm": {"exclude": True}}


def _project(d, tmp_path):
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({"preset": "cpu-u8s8", "reduce_range": True, "overrides": OVERRIDES}))
    assert cli.main(["quantize", str(d / "model_opset17.onnx"), "--recipe", str(recipe), "--data",
                     str(d / "calib.npz"), "--samples", "32", "-o", str(tmp_path / "a17.onnx"),
                     "--save-project", str(tmp_path / "job.wbproj"), "--no-search", "--no-auto"]) == 0
    return tmp_path / "job.wbproj"


@pytest.mark.slow
def test_apply_project_to_opset13_lands_overrides_and_exports_fresh_quantize_bytes(
        qtbot, window, open_file, corpus, tmp_path, capsys, monkeypatch):
    quantized_faster(monkeypatch)  # no unit kept float for latency: the project, the app and the CLI write the recipe
    d = corpus / "digits_cnn"
    proj = _project(d, tmp_path)
    open_file(window, d / "model_opset13.onnx")
    window.calibration.samples.setValue(32)
    window.calibration.choose_first.setChecked(False)  # as --no-auto: a preset with overrides is chosen around
    before = window.doc.recipe.model_dump()
    depth = window.doc.undo_stack.count()

    dialog = window.apply_project(proj)
    assert dialog.isVisible()
    rows = {r[0]: r[1:] for r in dialog.rows_text()}
    ops = {n: api.open_model(d / "model_opset13.onnx").node(n).op_type for n in OVERRIDES}
    assert rows == {n: ("override", n, "name", ops[n]) for n in OVERRIDES}
    assert "Overrides: 3 of 3 apply (0 moved to a new name, 0 no longer exist)." in dialog.summary.text()
    qtbot.mouseClick(dialog.apply_button, Qt.MouseButton.LeftButton)
    assert not dialog.isVisible()

    stored = api.load_project(proj, check_model=False).recipe
    assert window.doc.recipe.model_dump() == stored.model_dump()
    assert {n: s.model_dump(exclude_unset=True) for n, s in window.doc.recipe.overrides.items()} == OVERRIDES
    assert window.doc.undo_stack.count() == depth + 1  # one edit
    window.act_undo.trigger()
    assert window.doc.recipe.model_dump() == before
    window.act_redo.trigger()
    assert window.doc.recipe.model_dump() == stored.model_dump()

    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.start_calibration()
    out = tmp_path / "app13.onnx"
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.export_to(out)
    recipe_file = tmp_path / "stored.json"
    recipe_file.write_text(stored.to_json())
    fresh = tmp_path / "fresh13.onnx"
    assert cli.main(["quantize", str(d / "model_opset13.onnx"), "--recipe", str(recipe_file), "--data",
                     str(d / "calib.npz"), "--samples", "32", "-o", str(fresh), "--no-search", "--no-auto"]) == 0
    assert out.read_bytes() == fresh.read_bytes()  # the app exports the recipe as it stands (no search)

    # the Errors dock's figures as Model Explorer node data
    assert window.errors.node_data_button.isEnabled()
    paths = window.export_node_data_to(tmp_path / "digits13.json")
    graph = ONNXAdapter().convert(str(d / "model_opset13.onnx"), {})["graphs"][0]
    labels = {n.id: n.label for n in graph.nodes}
    sqnr = json.loads(paths["sqnr"].read_text())[graph.id]["results"]
    assert {k: labels.get(k) for k in sqnr} == {r.node: r.op_type for r in window.doc.errors}
    assert {k: v["value"] for k, v in sqnr.items()} == {r.node: round(r.sqnr_db, 4) for r in window.doc.errors}
    assert len(json.loads(paths["sensitivity"].read_text())[graph.id]["results"]) == len(window.doc.errors)
    capsys.readouterr()


def test_apply_project_refuses_unreadable_project_and_no_model(window, open_file, corpus, tmp_path, dialogs):
    assert window.apply_project(tmp_path / "none.wbproj") is None
    assert "No model is open" in dialogs.texts()
    dialogs.clear()
    open_file(window, corpus / "digits_cnn" / "model_opset13.onnx")
    bad = tmp_path / "bad.wbproj"
    bad.write_text("{not json")
    before = window.doc.recipe.model_dump()
    assert window.apply_project(bad) is None
    assert "bad.wbproj" in dialogs.texts() and window.doc.recipe.model_dump() == before
    assert window.doc.undo_stack.count() == 0
    dialogs.clear()
