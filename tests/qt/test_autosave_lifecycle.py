"""Autosaves across the app's life: a model still loading when the window closes is not shown and its
autosave is neither offered nor deleted; the autosave of a model that moved is offered when it is opened
at its new place.

Found by a bug hunt: closing the window while a model loaded showed the Restore / Discard prompt after the
close (Discard deleted a crash's only copy of the edits); an autosave of a model whose folder was moved
was never offered again, and never named, though the same file was opened."""

from __future__ import annotations

import shutil
from pathlib import Path

from workbench.qt import autosave
from workbench.qt.app_window import MainWindow
from workbench.qt.commands import push_edit, set_exclude
from workbench.qt.workers import live_jobs

EXAMPLE = Path(__file__).resolve().parents[2] / "workbench" / "resources" / "example"
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
