"""No lost work (the Save / Discard / Cancel prompt) and no stale views after opening another model."""

from __future__ import annotations

import shutil

import pytest
from bundled_example import EXAMPLE_MODEL
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QFileDialog

from workbench.qt.commands import push_edit, set_exclude


def _edit(win) -> str:
    """One undoable recipe edit (keep the first Conv in float); the title gets its '*'."""
    node = next(n.name for n in win.doc.model.graph.node if n.op_type == "Conv")
    assert push_edit(win.doc, set_exclude(win.doc.recipe, [node], True), f"Keep {node} in float")
    assert not win.doc.undo_stack.isClean()
    assert "*" in win.windowTitle()
    return node


def test_quit_with_unsaved_edits_asks_and_cancel_keeps_the_window(qtbot, window, open_file, save_prompts):
    open_file(window, EXAMPLE_MODEL)
    _edit(window)
    save_prompts.answer = "cancel"
    assert not window.close()
    assert save_prompts == [("digits_cnn.onnx", "quitting")]
    assert window.isVisible() and not window.doc.undo_stack.isClean()
    save_prompts.answer = "discard"
    assert window.close()
    assert len(save_prompts) == 2


def test_quit_with_unsaved_edits_save_writes_the_project(qtbot, window, open_file, save_prompts, monkeypatch,
                                                          tmp_path):
    open_file(window, EXAMPLE_MODEL)
    _edit(window)
    target = tmp_path / "job.wbproj"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(target), "")))
    save_prompts.answer = "save"
    assert window.close()
    assert target.is_file() and window.doc.undo_stack.isClean()


def test_quit_when_clean_does_not_ask(qtbot, window, open_file, save_prompts):
    open_file(window, EXAMPLE_MODEL)
    assert window.close()
    assert save_prompts == []


def test_open_with_unsaved_edits_asks(qtbot, window, open_file, save_prompts, corpus):
    open_file(window, EXAMPLE_MODEL)
    node = _edit(window)
    other = corpus / "digits_mlp"
    other = next(other.glob("*.onnx"))
    save_prompts.answer = "cancel"
    opened = []
    window.modelOpened.connect(opened.append)
    window.open_path(other)
    qtbot.wait(50)
    assert save_prompts == [("digits_cnn.onnx", f"opening {other.name}")]
    assert not opened and window.doc.model_path == EXAMPLE_MODEL.resolve()
    assert node in window.doc.recipe.overrides  # the edit is still there
    save_prompts.answer = "discard"
    open_file(window, other)
    assert window.doc.model_path == other.resolve()
    assert len(save_prompts) == 2


def test_open_when_clean_does_not_ask(qtbot, window, open_file, save_prompts, corpus):
    open_file(window, EXAMPLE_MODEL)
    open_file(window, corpus / "digits_cnn" / "model_opset17.onnx")
    assert save_prompts == []


def test_open_recent_and_open_dialog_ask_too(qtbot, window, open_file, save_prompts, monkeypatch, tmp_path):
    model = tmp_path / EXAMPLE_MODEL.name  # a model of the user's: the bundled example is not a recent file
    shutil.copy(EXAMPLE_MODEL, model)
    open_file(window, model)
    _edit(window)
    save_prompts.answer = "cancel"
    shown = []
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: shown.append(1) or ("", "")))
    window.open_dialog()
    assert save_prompts == [("digits_cnn.onnx", "opening another model")] and not shown  # asked first
    window.fill_recent()
    recent = [a for a in window.recent_menu.actions() if a.isEnabled()]
    assert recent
    recent[0].trigger()
    assert len(save_prompts) == 2


def test_opening_another_model_resets_every_view(qtbot, window, open_file, corpus):
    open_file(window, corpus / "silero_vad" / "silero_vad.onnx")
    if_node = next(n.name for n in window.doc.model.graph.node if n.op_type == "If")
    titles = window.open_subgraphs(if_node)
    assert len(titles) == 2 and window.tabs.count() == 3 and window.tabs.currentIndex() != 0
    window.search.setText("MatMul")
    window.color_mode.setCurrentText("error")
    window.calibration.set_running(False, "Done: 12 node units analysed.")
    window.inspector.set_nodes([if_node])
    window.errors.clear_histogram("Histogram of something old")

    open_file(window, corpus / "digits_cnn" / "model_opset17.onnx")
    assert [window.tabs.tabText(i) for i in range(window.tabs.count())] == ["Graph"]
    assert window.tabs.currentIndex() == 0
    assert window.canvas.node_names() and if_node not in window.canvas.node_names()
    assert window.search.text() == ""
    assert window.color_mode.currentText() == "op"  # "error" means nothing before a calibration
    assert window.calibration.status.text() == "Idle."
    assert window.calibration.progress.value() == 0
    assert window.inspector.nodes == []
    assert window.errors.hist_title.text() == "Select one node to see the histogram of its output."  # no old title
    assert window.errors.rows == [] and window.sensitivity.pending() == []


def test_open_netron_tab_follows_the_new_model(qtbot, window, open_file, corpus, monkeypatch):
    pytest.importorskip("netron")
    shown = []
    monkeypatch.setattr("workbench.qt.netron_view.NetronView.show_model",
                        lambda self, path: shown.append(str(path)) or "http://127.0.0.1:1/")
    open_file(window, EXAMPLE_MODEL)
    window.open_in_netron()
    second = corpus / "digits_cnn" / "model_opset17.onnx"
    open_file(window, second)
    assert shown[-1] == str(second.resolve())
    assert window.tabs.currentIndex() == 0 and window.tabs.count() == 2


def test_drop_with_unsaved_edits_asks(qtbot, window, open_file, save_prompts):
    open_file(window, EXAMPLE_MODEL)
    _edit(window)
    save_prompts.answer = "cancel"
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(EXAMPLE_MODEL))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                       Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    # the open model dropped on itself: it opens anew (test_unsaved_wording.py::test_reopening_the_open_file_says_so)
    assert save_prompts == [("digits_cnn.onnx", f"reopening {EXAMPLE_MODEL.name} anew (the default recipe, no results)")]
    assert not window.doc.undo_stack.isClean()  # cancelled: the edits are still there


def test_closing_the_window_drops_a_pending_histogram_request(qtbot, window, open_file):
    """A selection schedules a histogram job 300 ms later; closing first must not start it (it
    used to start on the closed window and outlive the test)."""
    from workbench.qt.workers import live_jobs

    open_file(window, EXAMPLE_MODEL)
    node = next(n.name for n in window.doc.model.graph.node if n.op_type == "Conv")
    window.canvas.select_nodes([node], center=True)
    assert window._hist_timer.isActive()
    assert window.close()
    qtbot.wait(window._hist_timer.interval() + 200)
    assert not live_jobs()


def test_a_new_sample_count_or_data_file_is_an_unsaved_edit(qtbot, window, open_file, save_prompts, tmp_path):
    """Both are saved in the project, so changing them must ask before quitting (they were dropped
    silently: the undo stack alone decided)."""
    open_file(window, EXAMPLE_MODEL)
    assert not window.doc.modified and "*" not in window.windowTitle()
    window.calibration.samples.setValue(5)
    assert window.doc.modified and "*" in window.windowTitle()
    window.calibration.samples.setValue(0)  # back to what was opened: nothing to save
    assert not window.doc.modified and "*" not in window.windowTitle()
    window.calibration.set_data_spec({"kind": "npz", "path": str(tmp_path / "other.npz")}, None)
    window.sync_data_spec()
    assert window.doc.modified
    save_prompts.answer = "cancel"
    assert not window.close()
    assert save_prompts == [("digits_cnn.onnx", "quitting")]
    window.save_project_to(tmp_path / "job.wbproj")
    assert not window.doc.modified and "*" not in window.windowTitle()
    save_prompts.answer = "discard"
    assert window.close() and len(save_prompts) == 1


def test_open_while_a_job_runs_is_refused_before_asking_to_save(qtbot, window, open_file, save_prompts, dialogs,
                                                                 corpus):
    """It asked Save / Discard first, then refused; Discard had already deleted the autosave."""
    from workbench.qt.workers import ProcessJob

    open_file(window, EXAMPLE_MODEL)
    _edit(window)
    assert window.autosaver.save_now() is not None
    files = window.autosaver.files()
    window.runs._start("sleep", ProcessJob("sleep", {"steps": 400, "delay": 0.02}, title="Sleep"))
    save_prompts.answer = "discard"
    window.open_path(next((corpus / "digits_mlp").glob("*.onnx")))
    assert save_prompts == []
    assert any(text.startswith("Sleep is running; model_opset17.onnx was not opened.") for _kind, _title, text in dialogs)
    dialogs.clear()
    assert files.exists() and window.doc.modified
    with qtbot.waitSignal(window.runs.finished, timeout=300_000):
        window.runs.cancel()


def test_image_options_and_a_typed_path_are_unsaved_edits(qtbot, window, open_file, save_prompts, tmp_path):
    """Layout / channels / scale changed nothing in the document, and a path typed without Enter was
    not what Ctrl+S saved."""
    from PySide6.QtTest import QTest

    from workbench.core.api import load_project

    open_file(window, EXAMPLE_MODEL)
    panel = window.calibration
    panel.kind.setCurrentIndex(panel.kind.findData("images"))
    panel.set_data_spec({"kind": "images", "path": str(tmp_path)}, None)
    window.sync_data_spec()
    proj = window.save_project_to(tmp_path / "job.wbproj")
    assert not window.doc.modified
    panel.layout_combo.setCurrentText("NHWC")
    assert window.doc.modified and "*" in window.windowTitle()
    panel.channel_order.setCurrentText("BGR")
    panel.scale.setValue(0.5)
    window.save_project_to(proj)
    spec = load_project(proj).data_spec(proj)
    assert (spec["layout"], spec["channel_order"], spec["scale"]) == ("NHWC", "BGR", 0.5)
    other = tmp_path / "other"
    other.mkdir()
    panel.path.clear()
    QTest.keyClicks(panel.path, str(other))  # no Enter, focus stays
    save_prompts.answer = "cancel"
    assert not window.close()
    assert save_prompts == [("job.wbproj", "quitting")]
    window.save_project_to(proj)
    assert load_project(proj).data_spec(proj)["path"] == str(other)
