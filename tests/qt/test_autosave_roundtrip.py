"""Every field a saved project keeps survives autosave -> restore -> save.

Found by a bug hunt: restoring an autosave put back the recipe, data source, sample count and
calibration cache only; ``analysis_samples``, ``evaluation``, the ``export`` section and the saved
results were lost, so Ctrl+S after a restore wrote a project without them. The tests compare the whole
project document, so a field added later is covered too.
"""

from __future__ import annotations

import pytest
from cli_projects import MODEL, digits_folder, read_json, run_job

from workbench.core import api
from workbench.qt.app_window import MainWindow
from workbench.qt.commands import push_edit, set_exclude

THIRD = "/f/f.3/Conv"


pytestmark = pytest.mark.usefixtures("latency_pays")  # nothing left float by this machine's timings


def _base_project(folder):
    """A project of the digits model with every optional field set (export, analysis samples, evaluation)."""
    project = api.new_project(folder / MODEL, api.make_recipe("cpu-u8s8"), data=folder / "calib.npz", samples=16)
    project.export = {"format": "qonnx"}
    project.analysis_samples = 7
    project.evaluation = {"data": str(folder / "eval.npz"), "metric": "cosine", "samples": 9}
    return api.save_project(project, folder / "p.wbproj")


def _crash_after_edits(qtbot, open_file, proj, expected):
    """A session that opens ``proj``, calibrates, edits, autosaves, writes what a save would write to
    ``expected`` (beside the project: the same relative paths) and dies without its close handler."""
    win = MainWindow()
    qtbot.addWidget(win)
    open_file(win, proj)
    state, res = run_job(qtbot, win, win.start_calibration)
    assert state == "succeeded", res
    assert push_edit(win.doc, set_exclude(win.doc.recipe, [THIRD], True), f"Keep {THIRD} in float")
    assert win.autosaver.save_now() is not None
    win.sync_data_spec()
    api.save_project(win.current_project(), expected)
    win.autosaver.stop()
    win.autosaver.owned.clear()  # what the killed process forgets: its close never removes the file
    win.doc.mark_saved()
    win.close()


@pytest.mark.parametrize("opened", ["model", "project"])
def test_every_project_field_survives_autosave_restore_and_save(qtbot, window, open_file, corpus, tmp_path,
                                                                restore_prompts, opened):
    folder = digits_folder(corpus, tmp_path)
    proj = _base_project(folder)
    expected = folder / "expected.wbproj"
    _crash_after_edits(qtbot, open_file, proj, expected)
    written = read_json(expected)
    assert written["results"] and written["calibration"] and written["export"] == {"format": "qonnx"}
    assert written["analysis_samples"] == 7 and written["evaluation"]["metric"] == "cosine"

    restore_prompts.answer = "restore"
    target = folder / MODEL if opened == "model" else proj
    open_file(window, target)
    assert len(restore_prompts) == 1 and window.doc.project_path == proj
    window.act_undo.trigger()  # back to the work as opened, every field
    undone = read_json(_written(window, folder / "undone.wbproj"))
    window.act_redo.trigger()
    restored = read_json(window.save_project_to(folder / "restored.wbproj"))
    assert sorted(restored) == sorted(written)
    assert [f for f in sorted(written) if restored[f] != written[f]] == []

    restore_prompts.answer = "discard"  # (none left: the save removed it)
    open_file(window, target)
    fresh = read_json(_written(window, folder / "fresh.wbproj"))
    assert len(restore_prompts) == 1
    assert [f for f in sorted(fresh) if undone.get(f) != fresh[f]] == []


def _written(win, path):
    """What File > Save would write, written to ``path`` without making it the window's project."""
    win.sync_data_spec()
    return api.save_project(win.current_project(), path)


def test_a_project_with_eval_settings_is_not_edited_by_a_sync(qtbot, window, open_file, corpus, tmp_path):
    """Each sync of the Calibration panel (an autosave tick, Ctrl+S, the quit prompt) pushed "Change evaluation
    settings" twice (to None and back): a project just opened was marked modified, its redo stack dropped."""
    folder = digits_folder(corpus, tmp_path)
    open_file(window, _base_project(folder))
    assert not window.doc.modified
    window.sync_data_spec()
    assert window.doc.undo_stack.count() == 0 and not window.doc.modified
    assert window.doc.evaluation == {"data": str(folder / "eval.npz"), "metric": "cosine", "samples": 9}
