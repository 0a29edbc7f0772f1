"""Autosaves across the app's life: a model still loading when the window closes is not shown and its
autosave is neither offered nor deleted; the autosave of a model that moved is offered when it is opened
at its new place.

Found by a bug hunt: closing the window while a model loaded showed the Restore / Discard prompt after the
close (Discard deleted a crash's only copy of the edits); an autosave of a model whose folder was moved
was never offered again, and never named, though the same file was opened."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bundled_example import EXAMPLE

from workbench.qt import autosave
from workbench.qt.app_window import MainWindow
from workbench.qt.commands import push_edit, set_exclude
from workbench.qt.workers import live_jobs

THIRD = "/f/f.3/Conv"


def _crashed_session(qtbot, open_file, model: Path) -> None:
    """A window that edits ``model``, autosaves and dies without its close handler (as after a kill)."""
    win = MainWindow()
    qtbot.addWidget(win)
    open_file(win, model)
    node = next(n.name for n in win.doc.model.graph.node if n.op_type == "Conv")
    assert push_edit(win.doc, set_exclude(win.doc.recipe, [node], True), f"Keep {node} in float")
    assert win.autosaver.save_now() is not None
    win.autosaver.stop()
    win.autosaver.owned.clear()
    win.doc.mark_saved()
    win.close()


def test_a_model_loading_when_the_window_closes_is_not_offered_its_autosave(qtbot, open_file, restore_prompts,
                                                                             tmp_path):
    model = tmp_path / "digits_cnn.onnx"
    shutil.copy(EXAMPLE / "digits_cnn.onnx", model)
    _crashed_session(qtbot, open_file, model)
    files = autosave.AutosaveFiles.for_model(model)
    before = files.project.read_bytes()
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    win.open_path(model)
    assert win.close()
    qtbot.waitUntil(lambda: not live_jobs(), timeout=300_000)
    qtbot.wait(50)  # a result queued before the close would be delivered now
    assert restore_prompts == [] and win.doc.model is None
    assert files.project.read_bytes() == before  # still there for the next session


def test_the_autosave_of_a_model_that_moved_is_offered_at_its_new_place(qtbot, window, open_file, restore_prompts,
                                                                        corpus, tmp_path, autosave_folder):
    old = tmp_path / "old"
    old.mkdir()
    for name in ("model_opset17.onnx", "calib.npz"):
        shutil.copy(corpus / "digits_cnn" / name, old / name)
    _crashed_session(qtbot, open_file, old / "model_opset17.onnx")
    written = autosave.api.load_project(autosave.AutosaveFiles.for_model(old / "model_opset17.onnx").project,
                                        check_model=False)
    new = tmp_path / "new"
    old.rename(new)  # the folder moved (or was renamed): the same model file elsewhere
    restore_prompts.answer = "restore"
    open_file(window, new / "model_opset17.onnx")
    assert len(restore_prompts) == 1
    assert window.doc.recipe == written.recipe and window.doc.modified
    assert window.doc.calibration == written.calibration  # the same file: nothing had to be matched again
    assert window.doc.data["path"] == str(new / "calib.npz")  # its data moved with it
    files = autosave.AutosaveFiles.for_model(new / "model_opset17.onnx")
    assert files.exists() and sorted(p.name for p in autosave_folder.iterdir()) == sorted(
        [files.project.name, files.note.name])  # moved, not copied
    window.save_project_to(new / "p.wbproj")
    assert list(autosave_folder.iterdir()) == []  # the save removes it like any autosave of the model


def test_an_autosave_of_another_model_that_moved_is_left_alone(qtbot, window, open_file, restore_prompts, corpus,
                                                               tmp_path, autosave_folder):
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy(EXAMPLE / "digits_cnn.onnx", old / "digits_cnn.onnx")
    _crashed_session(qtbot, open_file, old / "digits_cnn.onnx")
    kept = sorted(autosave_folder.iterdir())
    shutil.rmtree(old)
    open_file(window, corpus / "digits_mlp" / "model_opset17.onnx")  # another model (another sha256)
    assert restore_prompts == [] and sorted(autosave_folder.iterdir()) == kept


def _edit(win, node: str) -> None:
    assert push_edit(win.doc, set_exclude(win.doc.recipe, [node], True), f"Keep {node} in float")


def _window(qtbot):
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    return win


def test_two_windows_on_one_model_keep_their_own_autosaves(qtbot, window, open_file, restore_prompts, save_prompts,
                                                           tmp_path, autosave_folder):
    """The second window was offered the first's live autosave as a crash's (Discard deleted it), and both
    wrote the same file: a crash of one left the other's edits, which that one's clean quit then removed."""
    model = tmp_path / "digits_cnn.onnx"
    shutil.copy(EXAMPLE / "digits_cnn.onnx", model)
    open_file(window, model)
    _edit(window, "/f/f.0/Conv")
    a_files = autosave.AutosaveFiles.for_model(model)
    assert window.autosaver.save_now() == a_files.project
    a_written = a_files.project.read_bytes()
    other = _window(qtbot)
    try:
        open_file(other, model)
        assert restore_prompts == []  # the first window's autosave is not a crash's
        _edit(other, THIRD)
        b_path = other.autosaver.save_now()
        assert b_path == autosave.AutosaveFiles.for_model(model, 1).project
        assert a_files.project.read_bytes() == a_written
        assert autosave.api.load_project(b_path).recipe.overrides[THIRD].exclude is True
        window.save_project_to(tmp_path / "a.wbproj")  # removes the first window's only
        assert not a_files.exists() and b_path.is_file()
        other.autosaver.stop()  # the second window is killed: its autosave is left
        other.autosaver.owned.clear()
        other.doc.mark_saved()
    finally:
        other.close()
    restore_prompts.answer = "restore"
    open_file(window, model)
    assert len(restore_prompts) == 1 and window.doc.recipe.overrides[THIRD].exclude is True


def test_an_autosave_another_running_app_writes_is_not_offered(qtbot, window, open_file, restore_prompts, tmp_path,
                                                               autosave_folder):
    import json

    import psutil

    model = tmp_path / "digits_cnn.onnx"
    shutil.copy(EXAMPLE / "digits_cnn.onnx", model)
    _crashed_session(qtbot, open_file, model)
    files = autosave.AutosaveFiles.for_model(model)
    note = json.loads(files.note.read_text())
    parent = psutil.Process(os.getppid())  # a process that runs for the whole test: stands for another app
    files.note.write_text(json.dumps({**note, "pid": parent.pid, "started": parent.create_time()}))
    written = files.project.read_bytes()
    open_file(window, model)
    assert restore_prompts == [] and files.project.read_bytes() == written
    _edit(window, THIRD)
    assert window.autosaver.save_now() == autosave.AutosaveFiles.for_model(model, 1).project
    assert files.project.read_bytes() == written
    files.note.write_text(json.dumps({**note, "pid": parent.pid, "started": parent.create_time() - 100}))  # pid reused
    window.save_project_to(tmp_path / "p.wbproj")
    open_file(window, model)
    assert len(restore_prompts) == 1  # a session that ended: offered
