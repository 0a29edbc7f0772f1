"""New results are unsaved work: a calibration (or a sweep) on a saved project marks the document modified
(title "*", the Save / Discard / Cancel prompt, the autosave), without being an undoable edit; a save clears it.

Found by a user pass: after a long calibration on a saved project, closing the window asked nothing and the
calibration cache and the per-unit rows were lost."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bundled_example import EXAMPLE
from latency_fakes import quantized_faster
from test_app_flow import run_job

from workbench.qt.commands import push_edit, set_exclude
from workbench.qt.runs import same_cache


def _saved_project(qtbot, win, open_file, tmp_path) -> Path:
    """The example model (copied to ``tmp_path``) open in ``win`` with its data, saved as a project."""
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    open_file(win, tmp_path / "digits_cnn.onnx")
    win.calibration.samples.setValue(16)
    win.calibration.analysis_samples.setValue(8)
    # the recipe choice is an undoable edit of its own when it changes the recipe (it now turns bias correction
    # on); these tests are about the results, so F5 calibrates the recipe as it is
    win.calibration.choose_first.setChecked(False)
    project = win.save_project_to(tmp_path / "job.wbproj")
    assert not win.doc.modified and "*" not in win.windowTitle()
    return project


def _calibrate(qtbot, win) -> None:
    state, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=300_000)
    assert state == "succeeded", res


def test_a_calibration_on_a_saved_project_asks_before_closing_and_a_save_clears_it(
        qtbot, window, open_file, save_prompts, tmp_path, autosave_folder, monkeypatch):
    quantized_faster(monkeypatch)  # measured, the example's first Conv and AveragePool are kept float (a latency edit)
    project = _saved_project(qtbot, window, open_file, tmp_path)
    assert json.loads(project.read_text())["calibration"] is None
    doc = window.doc
    edits = doc.undo_stack.count()
    _calibrate(qtbot, window)
    assert doc.calibration is not None and doc.errors
    assert doc.modified and window.windowTitle() == "job.wbproj * - Workbench"
    assert doc.undo_stack.count() == edits and doc.undo_stack.isClean()  # not an undoable edit: Ctrl+Z undoes
    # no calibration
    # the autosave protects the results too
    written = window.autosaver.save_now()
    assert written is not None and json.loads(written.read_text())["calibration"] is not None

    save_prompts.answer = "cancel"
    assert not window.close()
    assert save_prompts == [("job.wbproj", "quitting")]
    assert window.isVisible() and doc.errors

    window.save_project()
    saved = json.loads(project.read_text())
    assert saved["calibration"] == doc.calibration and len(saved["results"]["errors"]) == len(doc.errors)
    assert not doc.modified and window.windowTitle() == "job.wbproj - Workbench"
    assert not written.exists()  # a clean save removes the autosave
    save_prompts.answer = "discard"
    assert window.close()
    assert save_prompts == [("job.wbproj", "quitting")]  # no second prompt


def test_undoing_an_edit_back_to_the_saved_recipe_keeps_new_results_unsaved(
        qtbot, window, open_file, save_prompts, tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # measured, the example's first Conv and AveragePool are kept float (a latency edit)
    _saved_project(qtbot, window, open_file, tmp_path)
    doc = window.doc
    node = next(n.name for n in doc.model.graph.node if n.op_type == "Conv")
    assert push_edit(doc, set_exclude(doc.recipe, [node], True), f"Keep {node} in float")
    _calibrate(qtbot, window)
    doc.undo_stack.undo()
    assert doc.undo_stack.isClean()  # the recipe is the saved one again ...
    assert doc.modified and "*" in window.windowTitle()  # ... but the calibration cache is not saved
    doc.undo_stack.redo()
    doc.undo_stack.undo()
    assert doc.modified
    save_prompts.answer = "cancel"
    window.open_path(EXAMPLE / "digits_cnn.onnx")
    assert save_prompts == [("job.wbproj", "opening digits_cnn.onnx")]
    assert doc.model_path == (tmp_path / "digits_cnn.onnx").resolve()


def test_an_autotune_curve_is_unsaved_work_saved_in_the_project_and_shown_again(
        qtbot, window, open_file, save_prompts, tmp_path):
    project = _saved_project(qtbot, window, open_file, tmp_path)
    shutil.copy(EXAMPLE / "digits_cnn_eval.npz", tmp_path / "digits_cnn_eval.npz")
    settings, panel, doc = window.evaluate_panel.settings, window.autotune_panel, window.doc
    settings.data.setText(str(tmp_path / "digits_cnn_eval.npz"))
    settings.set_metric("cosine")
    settings.samples.setValue(16)
    panel.target.setValue(0.0)  # nothing meets it: every step of the walk is a point
    window.save_project()
    assert not doc.modified
    edits = doc.undo_stack.count()
    state, res = run_job(qtbot, window, window.act_autotune.trigger, timeout=300_000)
    assert state == "succeeded", res
    curve = panel.curve_doc()
    assert curve is not None and len(curve["curve"]) >= 2
    assert doc.modified and "*" in window.windowTitle() and doc.undo_stack.count() == edits

    save_prompts.answer = "cancel"
    assert not window.close() and save_prompts == [("job.wbproj", "quitting")]
    window.save_project()
    assert json.loads(project.read_text())["results"]["autotune"] == doc.autotune
    assert not doc.modified

    open_file(window, tmp_path / "digits_cnn.onnx")  # another document: no curve
    assert panel.curve_doc() is None and doc.autotune is None
    open_file(window, project)
    assert panel.curve_doc() == curve and len(panel.scatter.points()) == len(curve["curve"])
    assert not doc.modified and "autotune curve" in window.status_label.text()
    index = next(i for i, e in enumerate(panel.points) if e["recipe"] != doc.recipe.to_json())
    assert window.evaluation.apply_point(index)  # its points still apply their recipes
    assert doc.recipe.to_json() == panel.points[index]["recipe"]


def test_a_damaged_autotune_section_is_skipped_with_a_note(qtbot):
    from workbench.qt.document import Document

    doc = Document()
    good = {"result": {"curve": [{"point": {"promoted": 0, "metric": 0.9}, "recipe": "{}", "metric_float": 1.0}],
                       "metric_float": 1.0, "metric_before": 0.9, "metric_after": 0.9, "promoted": [], "met": False},
            "metric": "cosine", "target": {"max_drop": 0.0}, "evaluation": {}}
    assert doc.restore_autotune(good) is None and doc.autotune == good
    for bad in ({"result": {"curve": [{"point": {"promoted": "x"}}]}}, [], {**good, "target": None}):
        assert doc.restore_autotune(bad) == "The saved autotune curve is unreadable; run Autotune again (Shift+F9)."
        assert doc.autotune == good  # unchanged


def test_a_sensitivity_sweep_is_unsaved_work_until_saved(qtbot, window, open_file, save_prompts, tmp_path):
    project = _saved_project(qtbot, window, open_file, tmp_path)
    doc = window.doc
    _calibrate(qtbot, window)
    window.save_project()  # the calibration cache is saved: the sweep reuses it as it is
    cache, edits = doc.calibration, doc.undo_stack.count()
    state, res = run_job(qtbot, window, window.act_sensitivity.trigger, timeout=300_000)
    assert state == "succeeded", res
    assert same_cache(doc.calibration, cache)  # no new ranges: only the sweep is new
    assert doc.sensitivity is not None and doc.modified and doc.undo_stack.count() == edits
    window.save_project()
    assert json.loads(project.read_text())["results"]["sensitivity"]["sweep"] == doc.sensitivity.to_json()
    assert not doc.modified and window.close() and save_prompts == []
