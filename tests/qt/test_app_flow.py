"""The whole app flow on real models (pytest-qt, offscreen).

open -> select every Conv through the search box -> activations int16 in the inspector -> undo /
redo (recipe checked each time) -> calibrate in the background -> SQNR bars -> click a bar ->
histogram -> export QDQ -> run it in onnxruntime -> save the project -> headless replay gives the
same bytes -> reopen the project in a new window -> same recipe, same bars, same exported bytes.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from PySide6.QtCore import QPointF, Qt

from workbench.core import api
from workbench.core.analysis.unit_error import unit_outputs

HAS_CALIBRATE = importlib.util.find_spec("workbench.core.calibration.calibrate") is not None
needs_calibrate = pytest.mark.skipif(not HAS_CALIBRATE, reason="workbench.core.calibration.calibrate has not landed")

#: model, calibration data, calibration samples (None: all), analysis samples
MODELS = {
    "digits_cnn": ("digits_cnn/model_opset17.onnx", "digits_cnn/calib.npz", None, 32),
    # the per-unit analysis runs an unoptimised QDQ graph: ~4 s a sample on 2 cores
    "nudenet_320n": ("nudenet_320n/model.onnx", "nudenet_320n/calib.npz", 8, 2),
}


def conv_nodes(path) -> list[str]:
    return sorted(n.name for n in api.open_model(path).graph.node if n.op_type == "Conv")


def search(qtbot, win, text: str) -> list[str]:
    win.search.setText(text)
    with qtbot.waitSignal(win.canvas.selectionChangedNames, timeout=300_000) as blocker:
        qtbot.keyClick(win.search, Qt.Key.Key_Return)
    return sorted(blocker.args[0])


def run_job(qtbot, win, start, timeout=540_000) -> tuple[str, object]:
    """Start a RunController job with ``start()``; returns ("succeeded"|"failed"|"cancelled", payload)."""
    seen: list = []
    win.runs.succeeded.connect(lambda kind, res: seen.append(("succeeded", res)))
    win.runs.failed.connect(lambda kind, err: seen.append(("failed", err)))
    win.runs.cancelled.connect(lambda kind: seen.append(("cancelled", None)))
    with qtbot.waitSignal(win.runs.finished, timeout=timeout):
        start()
    return seen[-1]


def overrides_dtypes(win, nodes) -> set:
    return {(win.doc.recipe.overrides[n].activation.dtype if n in win.doc.recipe.overrides else None)
            for n in nodes}


def click_bar(qtbot, win, index: int) -> None:
    """A real mouse click on bar ``index`` of the SQNR plot."""
    plot = win.errors.bars_plot
    vb = plot.getPlotItem().vb
    value = win.errors.bar_values()[index]
    scene_pos = vb.mapViewToScene(QPointF(max(value, 1.0) / 2, float(index)))
    pos = plot.mapFromScene(scene_pos)
    qtbot.mouseClick(plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def check_runs_in_onnxruntime(path, model_path, calib) -> None:
    """The export loads in onnxruntime and its outputs track the float model (cosine > 0.9)."""
    model = api.open_model(model_path)
    feeds = next(api.open_data_source(str(calib), model).batches(1))
    q = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    f = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"]).run(None, feeds)
    for a, b in zip(f, q, strict=True):
        assert a.shape == b.shape and np.isfinite(b).all()
        a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
        cos = float(a64 @ b64 / (np.linalg.norm(a64) * np.linalg.norm(b64) + 1e-30))
        assert cos > 0.9, cos


def flow(qtbot, window, open_file, corpus, tmp_path, name, *, extras: bool = True) -> None:
    rel_model, rel_calib, samples, analysis_samples = MODELS[name]
    model_path, calib = corpus / rel_model, corpus / rel_calib
    win = window
    open_file(win, model_path)
    assert win.doc.data == {"kind": "npz", "path": str(calib)}  # calib.npz beside the model is picked
    if samples:
        win.calibration.samples.setValue(samples)
    win.calibration.analysis_samples.setValue(analysis_samples)
    convs = conv_nodes(model_path)
    assert convs

    # select all Conv nodes through the search box; the inspector shows them
    assert search(qtbot, win, "Conv") == convs
    assert win.inspector.nodes and sorted(win.inspector.nodes) == convs
    editor = win.inspector.roles["activation"]
    assert editor.dtype.currentText() == "uint8"  # cpu-u8s8 preset
    assert "preset cpu-u8s8" in editor.source.text()

    # activations int16 on every Conv, as one undoable command (after the sample counts' own edits)
    depth = win.doc.undo_stack.count()
    editor.dtype.setCurrentText("int16")
    assert overrides_dtypes(win, convs) == {"int16"}
    assert win.doc.undo_stack.count() == depth + 1
    assert editor.source.text() == "override"
    win.act_undo.trigger()
    assert win.doc.recipe.overrides == {}
    assert editor.dtype.currentText() == "uint8"
    win.act_redo.trigger()
    assert overrides_dtypes(win, convs) == {"int16"}
    recipe_json = win.doc.recipe.model_dump_json()

    # calibrate in the background
    status, _res = run_job(qtbot, win, win.act_calibrate.trigger)
    assert status == "succeeded", _res
    # F5 chose the recipe around the int16 edits and kept them (but where the latency check kept a unit float)
    assert _res["choice"] is not None and _res["choice"]["skipped"] is None
    user, kept = api.Recipe.model_validate_json(recipe_json), set(_res["latency_kept"])
    assert all(win.doc.recipe.overrides[n] == user.overrides[n] for n in convs if n not in kept)
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=300_000)  # the bars are drawn a turn later
    rows = win.doc.errors
    values = win.errors.bar_values()
    assert values and all(math.isfinite(v) for v in values)
    # SQNR is finite, or +inf exactly where the unit is bit-exact (MSE 0); never NaN
    assert all(math.isfinite(r.sqnr_db) or (r.sqnr_db == math.inf and r.mse == 0.0) for r in rows)
    assert sum(math.isfinite(r.sqnr_db) for r in rows) > len(rows) // 2
    assert values == sorted(values)  # worst first

    win.errors.color_button.click()  # colour the canvas by what the bars rank by: the accumulated SQNR
    assert win.canvas.color_mode() == "error" and win.color_mode.currentText() == "error"

    # clicking a bar selects that node on the canvas
    worst = win.errors.rows[0].node
    with qtbot.waitSignal(win.canvas.selectionChangedNames, timeout=300_000):
        click_bar(qtbot, win, 0)
    assert win.canvas.selected_nodes() == [worst]
    if extras:  # histogram of the selected unit's output, with its clip range
        with qtbot.waitSignal(win.runs.histogramReady, timeout=540_000) as hist:
            pass
        assert hist.args[0]["tensor"] == win.errors.rows[0].tensor
        assert hist.args[0]["counts"] and sum(hist.args[0]["counts"]) == hist.args[0]["values"]
        assert "clip [" in win.errors.hist_title.text()
    else:
        win.runs.shutdown()  # the histogram job started by the selection is not needed

    # export, run it; the calibration panel keeps the calibration's result
    calibrated = win.calibration.status.text()
    assert calibrated.startswith("Done: ") and "analysed" in calibrated
    out = tmp_path / "gui.onnx"
    status, res = run_job(qtbot, win, lambda: win.export_to(out))
    assert status == "succeeded", res
    assert win.calibration.status.text() == calibrated and "exported" in win.status_label.text()
    exported = onnx.load(str(out))
    q_convs = [n for n in exported.graph.node if n.op_type == "QuantizeLinear"]
    assert q_convs
    check_runs_in_onnxruntime(out, model_path, calib)
    if extras:  # QONNX export of the same result
        qonnx_out = tmp_path / "gui.qonnx.onnx"
        status, res = run_job(qtbot, win, lambda: win.export_to(qonnx_out, "qonnx"))
        assert status == "succeeded", res
        domains = {n.domain for n in onnx.load(str(qonnx_out)).graph.node}
        assert "qonnx.custom_op.general" in domains

    # save, replay headless: same bytes; bars = every comparable unit
    proj = win.save_project_to(tmp_path / "job.wbproj")
    _model, result = api.replay_project(proj)
    replay = api.export(result, tmp_path / "replay.onnx")
    assert replay.read_bytes() == out.read_bytes()
    expected_units = unit_outputs(result.plan, result.tensor_map)
    assert len(values) == len(expected_units)
    assert {r.node for r in rows} == {v[0] for v in expected_units.values()}
    conv_units = [result.plan.units[n] for n in convs if n in result.plan.units]
    assert conv_units and {u.config.activation.dtype for u in conv_units} == {"int16"}

    # reopen in a new window: same recipe, results and exported bytes
    from workbench.qt.app_window import MainWindow

    win2 = MainWindow()
    qtbot.addWidget(win2)
    win2.show()
    try:
        open_file(win2, proj)
        assert win2.doc.recipe.model_dump_json() == win.doc.recipe.model_dump_json()  # F5 chose around the edits
        qtbot.waitUntil(lambda: bool(win2.errors.rows), timeout=300_000)
        assert win2.errors.bar_values() == values
        assert win2.doc.data["path"] == str(calib)
        out2 = tmp_path / "reopened.onnx"
        # the last export (QONNX with extras) is the project's format: Ctrl+E offers it; QDQ asked for here
        assert win2.doc.export == ({"format": "qonnx", "input_shapes": {}} if extras else None)
        status, res = run_job(qtbot, win2, lambda: win2.export_to(out2, "qdq"))
        assert status == "succeeded", res
        assert out2.read_bytes() == out.read_bytes()
    finally:
        win2.close()


@needs_calibrate
def test_flow_digits_cnn(qtbot, window, open_file, corpus, tmp_path):
    flow(qtbot, window, open_file, corpus, tmp_path, "digits_cnn")


@needs_calibrate
@pytest.mark.slow
def test_flow_nudenet(qtbot, window, open_file, corpus, tmp_path):
    flow(qtbot, window, open_file, corpus, tmp_path, "nudenet_320n", extras=False)


def test_recipe_edits_undo_redo_without_calibration(qtbot, window, open_file, corpus):
    """Inspector and recipe panel edits are undoable commands; the plan follows the recipe."""
    win = window
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    convs = search(qtbot, win, "Conv")
    weight = win.inspector.roles["weight"]
    weight.granularity.setCurrentText("per_tensor")
    assert {win.doc.plan.units[n].config.weight.granularity.value for n in convs} == {"per_tensor"}
    win.inspector.exclude.click()
    assert all(win.doc.plan.units[n].excluded for n in convs)
    assert win.doc.node_dtypes()[convs[0]] == "float"
    win.recipe_panel.preset.setCurrentText("s8s8")
    assert win.doc.recipe.preset == "s8s8"
    win.recipe_panel.kind.setCurrentText("op_type")
    win.recipe_panel.key.setText("Gemm")
    win.recipe_panel.act_dtype.setCurrentText("int16")
    win.recipe_panel.add.click()
    assert [r.op_type for r in win.doc.recipe.rules] == ["Gemm"]
    gemm = [n for n in win.doc.node_names() if win.doc.op_type(n) == "Gemm"]
    assert {win.doc.plan.units[n].config.activation.dtype for n in gemm} == {"int16"}
    assert win.doc.undo_stack.count() == 4
    for _ in range(4):
        win.act_undo.trigger()
    assert win.doc.recipe.model_dump() == api.make_recipe("cpu-u8s8").model_dump()
    assert not any(win.doc.plan.units[n].excluded for n in convs)
    for _ in range(4):
        win.act_redo.trigger()
    assert win.doc.recipe.preset == "s8s8" and len(win.doc.recipe.rules) == 1


def test_invalid_combination_shown_in_red_not_raised(qtbot, window, open_file, corpus):
    """per_block activations are refused by the recipe: red text in the inspector, no exception."""
    win = window
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    convs = search(qtbot, win, "Conv")
    win.inspector.roles["activation"].granularity.setCurrentText("per_block")
    assert win.doc.recipe.overrides[convs[0]].activation.granularity.value == "per_block"
    text = win.inspector.problems.text()
    assert "block_size" in text and "c62828" in win.inspector.problems.styleSheet()
    assert win.doc.issue_badges() == {n: "!" for n in convs}  # shown on the nodes too
    win.act_undo.trigger()
    assert win.inspector.problems.text() == ""


def test_select_all_of_type_and_colour_modes(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    convs = conv_nodes(corpus / "digits_cnn/model_opset17.onnx")
    win.canvas.select_nodes([convs[0]])
    assert sorted(win.select_same_type()) == convs
    win.color_mode.setCurrentText("dtype")
    assert win.canvas.color_mode() == "dtype"
    assert "Conv" in win.status_label.text()


def test_drop_onnx_file_opens_it(qtbot, window, corpus):
    from PySide6.QtCore import QMimeData, QPoint, QUrl
    from PySide6.QtGui import QDropEvent

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(corpus / "digits_cnn/model_opset17.onnx"))])
    event = QDropEvent(QPoint(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignals([window.modelOpened, window.canvas.layoutReady], timeout=540_000):
        window.dropEvent(event)
    assert window.doc.model_path.name == "model_opset17.onnx"
    from workbench.qt import settings

    assert settings.recent_files()[0] == str(corpus / "digits_cnn/model_opset17.onnx")
    window.fill_recent()
    assert window.recent_menu.actions()[0].text() == f"&1 {corpus / 'digits_cnn/model_opset17.onnx'}"
    mime.setUrls([QUrl.fromLocalFile("/tmp/notes.txt")])
    assert window.dropEvent(QDropEvent(QPoint(1, 1), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                                       Qt.KeyboardModifier.NoModifier)) is None


def test_main_without_argument_opens_the_bundled_example(qtbot, monkeypatch):
    import sys

    from PySide6.QtWidgets import QApplication

    from workbench.qt import main as main_mod
    from workbench.qt.app_window import MainWindow

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    seen: dict = {}
    created: list = []
    original_show = MainWindow.show
    monkeypatch.setattr(MainWindow, "show", lambda self: (created.append(self), original_show(self))[1])

    def fake_exec(_app) -> int:
        (win,) = created
        qtbot.waitUntil(lambda: win.doc.model is not None, timeout=300_000)
        seen["model"], seen["data"] = win.doc.model_path.name, dict(win.doc.data or {})
        seen["about"] = __import__("workbench.qt.app_window", fromlist=["about_text"]).about_text()
        win.close()
        win.deleteLater()
        return 0

    monkeypatch.setattr(QApplication, "exec", fake_exec)
    assert main_mod.main([]) == 0
    assert seen["model"] == "digits_cnn.onnx"
    assert seen["data"]["path"].endswith("digits_cnn_calib.npz")
    assert "onnxruntime" in seen["about"] and "Qt 6." in seen["about"]
