"""Crash-safe autosave: written atomically while dirty, offered back after an abnormal exit,
removed by a clean save or quit; File > New Project asks before dropping edits."""

from __future__ import annotations

import json

from bundled_example import EXAMPLE_MODEL

from workbench.core import api
from workbench.qt import autosave
from workbench.qt.app_window import MainWindow
from workbench.qt.commands import push_edit, set_exclude


def _first_conv(win) -> str:
    return next(n.name for n in win.doc.model.graph.node if n.op_type == "Conv")


def _edit(win) -> str:
    node = _first_conv(win)
    assert push_edit(win.doc, set_exclude(win.doc.recipe, [node], True), f"Keep {node} in float")
    return node


def _crashed_session(qtbot, open_file, edit=_edit):
    """A window that edits (``edit(win)``), autosaves and then dies without its close handler (as
    after a kill): its autosave is left in the folder. Returns what ``edit`` returned."""
    win = MainWindow()
    qtbot.addWidget(win)
    open_file(win, EXAMPLE_MODEL)
    edited = edit(win)
    assert win.autosaver.save_now() is not None
    win.autosaver.stop()
    win.autosaver.owned.clear()  # what the killed process forgets: its close never removes the file
    win.doc.mark_saved()  # (no save prompt: the dead process shows none)
    win.close()
    return edited


def _edited_and_autosaved(window, open_file):
    """The example open in ``window`` with one recipe edit, autosaved; returns its AutosaveFiles."""
    open_file(window, EXAMPLE_MODEL)
    _edit(window)
    files = autosave.AutosaveFiles.for_model(EXAMPLE_MODEL)
    window.autosaver.save_now()
    assert files.exists()
    return files


def test_autosave_is_written_while_dirty_and_removed_by_a_clean_save(qtbot, window, open_file, autosave_folder,
                                                                     tmp_path):
    open_file(window, EXAMPLE_MODEL)
    files = autosave.AutosaveFiles.for_model(EXAMPLE_MODEL)
    assert window.autosaver.save_now() is None and not files.exists()  # clean: nothing written
    node = _edit(window)
    window.autosaver.timer.setInterval(20)  # the timer, not a direct call, writes it
    qtbot.waitUntil(files.exists, timeout=300_000)
    assert files.project.parent == autosave_folder
    assert [p.name for p in autosave_folder.iterdir() if p.name.startswith(".")] == []  # no temp file left
    saved = api.load_project(files.project)
    assert saved.model_path(files.project).resolve() == EXAMPLE_MODEL.resolve()
    assert saved.recipe.overrides[node].exclude is True
    assert json.loads(files.note.read_text())["model_path"] == str(EXAMPLE_MODEL.resolve())
    window.save_project_to(tmp_path / "job.wbproj")
    assert not files.exists() and not files.note.exists()


def test_clean_quit_removes_the_autosave(qtbot, window, open_file, save_prompts):
    files = _edited_and_autosaved(window, open_file)
    save_prompts.answer = "discard"
    assert window.close()
    assert save_prompts == [("digits_cnn.onnx", "quitting")]
    assert not files.exists()


def test_autosave_after_an_abnormal_exit_is_restored_as_one_undoable_edit(qtbot, window, open_file,
                                                                          restore_prompts):
    node = _crashed_session(qtbot, open_file)
    restore_prompts.answer = "restore"
    open_file(window, EXAMPLE_MODEL)
    assert [name for name, _ in restore_prompts] == ["digits_cnn.onnx"]
    assert window.doc.recipe.overrides[node].exclude is True
    assert not window.doc.undo_stack.isClean() and "*" in window.windowTitle()
    calib = str(EXAMPLE_MODEL.with_name("digits_cnn_calib.npz").resolve())
    assert window.doc.data["path"] == calib and window.calibration.data_spec()["path"] == calib  # not ../../..
    window.doc.undo_stack.undo()
    assert node not in window.doc.recipe.overrides
    window.doc.undo_stack.redo()
    assert window.doc.recipe.overrides[node].exclude is True


def test_autosave_of_a_sample_count_alone_is_restored_as_one_undoable_edit(qtbot, window, open_file,
                                                                           restore_prompts):
    """Data and samples were applied outside the undo stack: Ctrl+Z did nothing although the status
    said it undoes the restore."""
    _crashed_session(qtbot, open_file, edit=lambda win: win.calibration.samples.setValue(8))
    restore_prompts.answer = "restore"
    open_file(window, EXAMPLE_MODEL)
    assert window.doc.samples == 8 and window.calibration.samples.value() == 8 and window.doc.modified
    assert "Ctrl+Z undoes" in window.status_label.text()
    window.act_undo.trigger()
    assert window.doc.samples is None and window.calibration.samples.value() == 0
    assert not window.doc.modified and "*" not in window.windowTitle()
    window.act_redo.trigger()
    assert window.doc.samples == 8 and window.doc.modified


def test_discard_then_a_failed_open_keeps_the_autosave(qtbot, window, open_file, save_prompts, dialogs, tmp_path):
    """Discard deleted the autosave at once; the open then failed and the edits stayed on screen with
    no autosave behind them."""
    files = _edited_and_autosaved(window, open_file)
    save_prompts.answer = "discard"
    window.open_path(tmp_path / "missing.onnx")
    qtbot.waitUntil(lambda: bool(dialogs), timeout=300_000)
    dialogs.clear()
    assert files.exists() and window.doc.modified
    open_file(window, EXAMPLE_MODEL.with_name("digits_cnn.onnx"))  # an open that succeeds drops them
    assert not files.exists() and not window.doc.modified


def test_autosave_discarded_at_the_prompt_is_gone(qtbot, window, open_file, restore_prompts):
    _crashed_session(qtbot, open_file)
    files = autosave.AutosaveFiles.for_model(EXAMPLE_MODEL)
    assert files.exists()
    restore_prompts.answer = "discard"
    open_file(window, EXAMPLE_MODEL)
    assert len(restore_prompts) == 1
    assert not files.exists()
    assert window.doc.recipe.overrides == {} and window.doc.undo_stack.isClean()


def test_new_project_asks_before_dropping_edits(qtbot, window, open_file, save_prompts, restore_prompts):
    open_file(window, EXAMPLE_MODEL)
    node = _edit(window)
    save_prompts.answer = "cancel"
    window.act_new_project.trigger()
    assert save_prompts == [("digits_cnn.onnx", "starting a new project")]
    assert node in window.doc.recipe.overrides
    save_prompts.answer = "discard"
    window.act_new_project.trigger()
    assert len(save_prompts) == 2
    assert window.doc.recipe.overrides == {} and window.doc.undo_stack.isClean()
    assert window.doc.project_path is None and restore_prompts == []
    window.act_new_project.trigger()  # clean: no prompt
    assert len(save_prompts) == 2


def test_autosave_of_another_model_is_named_once_at_the_next_open(qtbot, window, open_file, corpus,
                                                                  restore_prompts):
    _crashed_session(qtbot, open_file)  # left an autosave of the example
    other = corpus / "digits_mlp" / "model_opset17.onnx"
    open_file(window, other)
    assert restore_prompts == []  # not this model's: nothing to restore here
    assert "digits_cnn.onnx were autosaved" in window.status_label.text()
    assert autosave.AutosaveFiles.for_model(EXAMPLE_MODEL).exists()  # kept until that model is opened
    open_file(window, corpus / "digits_mlp" / "model_opset13.onnx")
    assert "autosaved" not in window.status_label.text()  # said once


def test_restored_autosave_of_other_rows_does_not_bring_back_the_projects_cache(qtbot, window, open_file,
                                                                                restore_prompts, tmp_path):
    """A project calibrated on 8 rows, then samples set to 5 and autosaved: Restore put back 5 samples
    with the project's 8-row cache, so Export wrote the 8-row model."""
    proj = tmp_path / "job.wbproj"
    crashed = MainWindow()
    qtbot.addWidget(crashed)
    open_file(crashed, EXAMPLE_MODEL)
    crashed.calibration.samples.setValue(8)
    crashed.doc.calibration = {"observers": {}}  # stands for an 8-row cache saved in the project
    crashed.save_project_to(proj)
    assert api.load_project(proj).calibration is not None
    crashed.calibration.samples.setValue(5)  # drops the cache
    assert crashed.autosaver.save_now() is not None
    crashed.autosaver.stop()
    crashed.autosaver.owned.clear()
    crashed.doc.mark_saved()
    crashed.close()
    restore_prompts.answer = "restore"
    open_file(window, proj)
    assert window.doc.samples == 5 and window.doc.calibration is None
    window.act_undo.trigger()  # back to the project as saved: its cache too
    assert window.doc.samples == 8 and window.doc.calibration is not None
