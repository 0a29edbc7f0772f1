"""The unsaved-changes prompt says what a close would lose: edits, results and which results. F5 on the example and
then quitting asked "digits_cnn.onnx has unsaved changes." though nothing was edited (the results are unsaved
work by design, but the prompt did not say so)."""

from __future__ import annotations

import shutil

from bundled_example import EXAMPLE
from latency_fakes import quantized_faster
from PySide6.QtWidgets import QMessageBox
from test_app_flow import run_job

from workbench.qt import app_window, dialogs


def _real_prompt(monkeypatch) -> list[tuple[str, str]]:
    """The window's prompt is the real box; its texts are recorded and it answers Cancel."""
    shown: list[tuple[str, str]] = []

    def exec_(box):
        shown.append((box.text(), box.informativeText()))
        return QMessageBox.StandardButton.Cancel

    monkeypatch.setattr(app_window, "ask_save_changes", dialogs.ask_save_changes)
    monkeypatch.setattr(QMessageBox, "exec", exec_)
    return shown


def _example(win, open_file, tmp_path) -> None:
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    open_file(win, tmp_path / "digits_cnn.onnx")


def _calibrate(qtbot, win) -> None:
    state, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=300_000)
    assert state == "succeeded", res


def test_f5_alone_asks_about_unsaved_results_and_names_them(qtbot, window, open_file, tmp_path, monkeypatch):
    shown = _real_prompt(monkeypatch)
    quantized_faster(monkeypatch)  # measured, the example's first Conv and AveragePool are kept float (a latency edit)
    _example(window, open_file, tmp_path)
    assert window.doc.unsaved_text == "" and window.keep_or_drop_changes("quitting")
    _calibrate(qtbot, window)
    assert not window.keep_or_drop_changes("quitting")  # Cancel
    # F5 on the bare preset runs the recipe choice first, which turns bias correction on: an edit of the recipe
    assert window.doc.undo_stack.count() == 1 and window.doc.recipe.bias_correction
    assert shown == [("digits_cnn.onnx has unsaved edits and results (calibration ranges, per-unit errors).",
                      "Save them to a project before quitting?")]


def test_edits_and_results_are_told_apart(qtbot, window, open_file, tmp_path, monkeypatch):
    shown = _real_prompt(monkeypatch)
    quantized_faster(monkeypatch)  # digits_cnn quantized whatever this machine measures (latency_fakes)
    _example(window, open_file, tmp_path)
    window.calibration.analysis_samples.setValue(8)  # a setting saved in the project: an edit
    assert window.doc.unsaved_text == "unsaved edits"
    _calibrate(qtbot, window)
    assert window.doc.unsaved_text == "unsaved edits and results (calibration ranges, per-unit errors)"
    window.save_project_to(tmp_path / "job.wbproj")
    assert window.doc.unsaved_text == ""
    with qtbot.waitSignal(window.runs.finished, timeout=300_000):
        window.runs.sensitivity()  # on the saved ranges: only the sweep is new
    assert window.doc.unsaved_text == "unsaved results (sensitivity sweep)"
    assert not window.close()
    assert shown == [("job.wbproj has unsaved results (sensitivity sweep).", "Save them to a project before quitting?")]


def test_reopening_the_open_file_says_so(qtbot, window, open_file, tmp_path, save_prompts):
    """Choosing the open project again (File > Open Recent, the welcome page) with unsaved edits asked "Save them to
    a project before opening p.wbproj?", as if it were another file: it reverts to the file as saved."""
    _example(window, open_file, tmp_path)
    model = tmp_path / "digits_cnn.onnx"
    other = tmp_path / "other.onnx"
    shutil.copy(model, other)
    save_prompts.answer = "cancel"
    window.calibration.samples.setValue(12)
    window.open_path(model)  # the open model, no project
    window.open_path(other)
    project = window.save_project_to(tmp_path / "p.wbproj")
    window.calibration.samples.setValue(14)
    window.open_recent(str(project))
    window.open_path(other)
    assert save_prompts == [("digits_cnn.onnx", "reopening digits_cnn.onnx anew (the default recipe, no results)"),
                            ("digits_cnn.onnx", "opening other.onnx"),
                            ("p.wbproj", "reopening p.wbproj as it was saved"),
                            ("p.wbproj", "opening other.onnx")]
    assert window.doc.project_path == project and window.calibration.samples.value() == 14  # each Cancel kept them
