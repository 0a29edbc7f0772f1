"""The colour mode follows the model: a saved project reopens with the colour mode it was saved with (SQNR when
its results are restored; it came back as "op"), and a float model opened after a quantized one drops the
file's dtype colouring (minilm kept "dtype" with every node grey)."""

from __future__ import annotations

from example_copy import EXAMPLE, open_example_copy
from latency_fakes import quantized_faster
from test_app_flow import run_job

from workbench.core import api
from workbench.qt.canvas.view import COLOR_MODES


def _mode(win) -> str:
    return COLOR_MODES[win.color_mode.currentIndex()]


def test_a_reopened_project_gets_its_sqnr_colours_back(qtbot, window, open_file, tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # digits_cnn quantized whatever this machine measures (latency_fakes)
    win = window
    open_example_copy(win, open_file, tmp_path, samples=8, analysis_samples=2)
    win.calibration.choose_first.setChecked(False)
    state, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=300_000)
    assert state == "succeeded", res
    win.color_by_sqnr()
    assert _mode(win) == "error"
    project = win.save_project_to(tmp_path / "digits.wbproj")

    open_file(win, tmp_path / "digits_cnn.onnx")  # the model alone: no results, no SQNR colours
    assert _mode(win) == "op" and win.canvas.color_mode() == "op"
    open_file(win, project)
    assert win.doc.errors
    assert _mode(win) == "error" and win.canvas.color_mode() == "error"
    assert win.canvas.error_label().startswith("SQNR")


def test_a_float_model_after_a_quantized_one_is_coloured_by_op(qtbot, window, open_file, tmp_path, corpus):
    win = window
    out = tmp_path / "digits_cnn.qdq.onnx"
    api.export(api.quantize(api.open_model(EXAMPLE / "digits_cnn.onnx"), api.make_recipe("cpu-u8s8"),
                            data=str(EXAMPLE / "digits_cnn_calib.npz"), samples=8), out)
    open_file(win, out)
    assert _mode(win) == "dtype" and win.canvas.color_mode() == "dtype"  # the file's dtypes
    open_file(win, corpus / "minilm_l6_v2" / "model.onnx")
    assert win.doc.quant_summary is None
    assert _mode(win) == "op" and win.canvas.color_mode() == "op"
    assert len(win.canvas.legend()) > 1  # one entry per op type, not one grey "float"


def test_a_project_saved_coloured_by_op_reopens_coloured_by_op(qtbot, window, open_file, tmp_path):
    # the canvas coloured by the recipe's dtypes when the project opens: the project's own mode comes back
    win = window
    open_example_copy(win, open_file, tmp_path, samples=None, analysis_samples=None)
    assert _mode(win) == "op"
    project = win.save_project_to(tmp_path / "digits.wbproj")
    win.color_mode.setCurrentText("dtype")
    assert _mode(win) == "dtype" and win.canvas.color_mode() == "dtype"
    open_file(win, project)
    assert _mode(win) == "op" and win.canvas.color_mode() == "op"


def test_a_project_saved_coloured_by_sensitivity_reopens_so(qtbot, window, open_file, tmp_path):
    # the sweep's colours were kept as "error": the project reopened coloured by op type (no per-unit results)
    win = window
    open_example_copy(win, open_file, tmp_path, samples=None, analysis_samples=None)
    with qtbot.waitSignal(win.runs.finished, timeout=540_000):
        win.act_sensitivity.trigger()
    assert win.doc.sensitivity is not None, win.status_label.text()
    panel = win.sensitivity
    panel.figure.setCurrentIndex(panel.figure.findData("gain_db"))
    assert win.color_mode.currentText() == "sensitivity"
    colours = {n: win.canvas.node_color(n) for n in win.canvas.node_names()}
    project = win.save_project_to(tmp_path / "digits.wbproj")

    open_file(win, tmp_path / "digits_cnn.onnx")
    assert _mode(win) == "op"
    panel.figure.setCurrentIndex(panel.figure.findData("only_quant_db"))
    open_file(win, project)
    assert win.doc.sensitivity is not None and not win.doc.errors
    assert win.color_mode.currentText() == "sensitivity" and win.canvas.color_mode() == "error"
    assert panel.current_figure() == "gain_db"
    assert win.canvas.error_label() == f"Sensitivity: {panel.figure.currentText()}"
    assert {n: win.canvas.node_color(n) for n in win.canvas.node_names()} == colours
