"""A restored autosave never costs the user a file: undo points Ctrl+S back at what was open, a
restore onto a changed model keeps the edits, and a failed autosave is said.

Found by a bug hunt (crash_c: SIGKILL after an autosave of a project's edits, then the plain model opened
and Restore, Ctrl+Z, an edit, Ctrl+S): the window still pointed at the autosave's project and Ctrl+S
overwrote it; Restore deleted the autosave when the model file had changed since, and an unwritable
autosave folder was only logged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx
import pytest
from onnx import numpy_helper
from PySide6.QtWidgets import QFileDialog

from workbench.core import api
from workbench.qt import autosave
from workbench.qt.app_window import MainWindow
from workbench.qt.commands import push_edit, set_exclude, set_role_field

FIRST, THIRD = "/f/f.0/Conv", "/f/f.3/Conv"


@pytest.fixture
def model(corpus, tmp_path) -> Path:
    """A private copy of digits_cnn with its calibration data (the tests change the model file)."""
    folder = tmp_path / "digits"
    folder.mkdir()
    for name in ("model_opset17.onnx", "calib.npz"):
        shutil.copy(corpus / "digits_cnn" / name, folder / name)
    return folder / "model_opset17.onnx"


def crashed_session(qtbot, open_file, model: Path, edit, project: Path | None = None) -> None:
    """A window that opens ``model``, saves ``project`` (when given) after an int16 edit, then makes
    ``edit(win)``, autosaves and dies without its close handler (as after a kill)."""
    win = MainWindow()
    qtbot.addWidget(win)
    open_file(win, model)
    if project is not None:
        assert push_edit(win.doc, set_role_field(win.doc.recipe, [FIRST], "activation", "dtype", "int16"), "int16")
        win.save_project_to(project)
    edit(win)
    assert win.autosaver.save_now() is not None
    win.autosaver.stop()
    win.autosaver.owned.clear()  # what the killed process forgets: its close never removes the file
    win.doc.mark_saved()  # (no save prompt: the dead process shows none)
    win.close()


def exclude_third(win) -> None:
    assert push_edit(win.doc, set_exclude(win.doc.recipe, [THIRD], True), f"Keep {THIRD} in float")


def test_undoing_a_restored_autosave_points_ctrl_s_back_at_the_open_model(qtbot, window, open_file, model,
                                                                          restore_prompts, monkeypatch):
    p1 = model.with_name("P1.wbproj")
    crashed_session(qtbot, open_file, model, exclude_third, project=p1)
    saved = p1.read_bytes()
    restore_prompts.answer = "restore"
    open_file(window, model)  # the plain model (from recent files): the autosave names P1
    assert window.doc.project_path == p1 and window.windowTitle() == "P1.wbproj * - Workbench"
    assert window.doc.recipe.overrides[THIRD].exclude is True
    window.act_undo.trigger()
    assert window.doc.project_path is None and window.windowTitle() == "digits/model_opset17.onnx - Workbench"
    assert not window.doc.modified and THIRD not in window.doc.recipe.overrides
    window.act_redo.trigger()
    assert window.doc.project_path == p1 and window.windowTitle() == "P1.wbproj * - Workbench"
    window.act_undo.trigger()
    # an edit after the undo, then Ctrl+S: asks for a file, never overwrites P1
    assert push_edit(window.doc, set_exclude(window.doc.recipe, [FIRST], True), "exclude")
    chosen = model.with_name("new.wbproj")
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(chosen), "")))
    assert window.save_project() == chosen
    assert p1.read_bytes() == saved
    assert json.loads(chosen.read_text())["recipe"]["overrides"] == {FIRST: {"exclude": True}}


def changed_weights(model: Path) -> None:
    """Retrain-like change: the same graph, its first weight scaled (the file's sha256 changes)."""
    proto = onnx.load(model)
    init = proto.graph.initializer[0]
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * 1.01, init.name))
    onnx.save(proto, model)


def test_restore_onto_a_changed_model_restores_the_edits_and_keeps_the_autosave(qtbot, window, open_file, model,
                                                                                restore_prompts, dialogs):
    crashed_session(qtbot, open_file, model, exclude_third)
    files = autosave.AutosaveFiles.for_model(model)
    changed_weights(model)
    restore_prompts.answer = "restore"
    open_file(window, model)
    assert list(dialogs) == []  # no error, no CLI command on a deleted file
    assert window.doc.recipe.overrides[THIRD].exclude is True and window.doc.modified
    assert window.doc.calibration is None  # ranges of the old weights are not reused
    assert files.exists()  # still the only copy of the edits until they are saved
    status = window.status_label.text()
    assert "which changed since they were autosaved" in status and "Ctrl+Z undoes" in status
    window.act_undo.trigger()
    assert THIRD not in window.doc.recipe.overrides and not window.doc.modified


def test_restore_that_drops_overrides_keeps_the_autosave_as_written(qtbot, window, open_file, model,
                                                                    restore_prompts, autosave_folder):
    crashed_session(qtbot, open_file, model, exclude_third)
    proto = onnx.load(model)
    node = next(n for n in proto.graph.node if n.name == THIRD)
    node.name = "/f/f.3/Conv_renamed"  # the node of the override is gone under its name
    onnx.save(proto, model)
    written = autosave.AutosaveFiles.for_model(model).project.read_bytes()
    restore_prompts.answer = "restore"
    open_file(window, model)
    assert THIRD not in window.doc.recipe.overrides
    kept = [p for p in autosave_folder.iterdir() if ".kept-" in p.name]
    assert len(kept) == 1 and kept[0].read_bytes() == written
    assert api.load_project(kept[0], check_model=False).recipe.overrides[THIRD].exclude is True
    assert f"kept in {kept[0]}" in window.status_label.text() and THIRD in window.status_label.text()


def test_an_unreadable_autosave_is_kept_and_named_not_deleted(qtbot, window, open_file, model, restore_prompts,
                                                              dialogs, autosave_folder):
    crashed_session(qtbot, open_file, model, exclude_third)
    files = autosave.AutosaveFiles.for_model(model)
    files.project.write_text('{"schema_version": 1, "recipe": ')  # damaged
    restore_prompts.answer = "restore"
    open_file(window, model)
    kept = [p for p in autosave_folder.iterdir() if ".kept-" in p.name]
    assert len(kept) == 1 and kept[0].read_text() == '{"schema_version": 1, "recipe": '
    assert [d[0] for d in dialogs] == ["critical"] and f"They are kept in {kept[0]}" in dialogs[0][2]
    assert "workbench-cli" not in dialogs[0][2]
    dialogs.clear()
    assert window.doc.recipe.overrides == {} and not window.doc.modified
    open_file(window, model)  # not offered again (it would fail again), not in the "left behind" note
    assert len(restore_prompts) == 1 and kept[0].exists()


def test_a_failed_autosave_is_said_once_and_stays_marked(qtbot, window, open_file, model, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    folder = blocker / "autosave"  # cannot be created: a file is in the way
    monkeypatch.setattr(autosave, "autosave_dir", lambda: folder)
    open_file(window, model)
    exclude_third(window)
    assert window.autosaver.save_now() is None
    status = window.status_label.text()
    assert status.startswith("Autosave failed (") and f"make {folder} a folder you can write to." in status and "Ctrl+S" in status
    assert "\n" not in status
    mark = window.autosaver.failed_mark
    assert mark.isVisible() and mark.toolTip() == status
    window.set_status("Something else.")
    assert window.autosaver.save_now() is None
    assert window.status_label.text() == "Something else."  # said once, the mark keeps telling
    assert mark.isVisible()
    good = tmp_path / "autosave-ok"
    monkeypatch.setattr(autosave, "autosave_dir", lambda: good)
    assert window.autosaver.save_now() is not None
    assert not mark.isVisible() and window.autosaver.last_error is None
