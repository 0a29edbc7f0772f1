"""The Evaluate panel's eval data, metric and samples are part of the project: saved, restored, undoable.

They were in no project and no autosave, never marked the document modified, and came back as the
defaults (eval.npz beside the model, top1, all samples) on reopening.
"""

from __future__ import annotations

import shutil

from cli_projects import MODEL, cli_quantize, digits_folder, read_json, write_variant


def test_eval_settings_are_saved_restored_and_undoable(qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    shutil.copy(folder / "eval.npz", folder / "holdout.npz")
    open_file(window, folder / MODEL)
    panel = window.evaluate_panel.settings
    assert (panel.data.text(), panel.metric_spec(), panel.samples.value()) == (str(folder / "eval.npz"), "top1", 0)
    assert not window.doc.modified

    panel.data.setText(str(folder / "holdout.npz"))
    panel.data.editingFinished.emit()
    panel.set_metric("cosine")
    for n in (1, 2, 17):  # the spin box's steps: one edit
        panel.samples.setValue(n)
    assert window.doc.modified and "*" in window.windowTitle()
    assert window.doc.undo_stack.undoText() == "Change eval samples"
    window.act_undo.trigger()
    assert panel.samples.value() == 0 and panel.metric_spec() == "cosine"
    window.act_redo.trigger()
    proj = window.save_project_to(folder / "p.wbproj")
    assert read_json(proj)["evaluation"] == {"data": "holdout.npz", "metric": "cosine", "samples": 17}

    open_file(window, folder / MODEL)  # another open: the defaults again
    assert (panel.data.text(), panel.metric_spec(), panel.samples.value()) == (str(folder / "eval.npz"), "top1", 0)
    open_file(window, proj)
    assert (panel.data.text(), panel.metric_spec(), panel.samples.value()) == (str(folder / "holdout.npz"), "cosine",
                                                                               17)
    assert not window.doc.modified
    panel.samples.setValue(20)
    window.act_undo.trigger()
    assert panel.samples.value() == 17 and not window.doc.modified


def test_projects_without_eval_settings_keep_none_and_a_metric_file_needs_the_tick_again(
        qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    proj = folder / "p.wbproj"
    cli_quantize(folder / MODEL, "--data", folder / "calib.npz", "--no-latency-check", "-o", tmp_path / "a.onnx",
                 "--save-project", proj)
    written = read_json(proj)
    open_file(window, proj)
    window.save_project()
    assert read_json(proj) == written and written.get("evaluation") is None

    (folder / "metric.py").write_text("def metric(outputs, batch):\n    return 0.0\n")
    evaluation = {"data": "eval.npz", "metric": "metric.py", "samples": 9}
    other = write_variant(proj, folder / "m.wbproj", evaluation=evaluation)
    open_file(window, other)
    panel = window.evaluate_panel.settings
    assert panel.metric_spec() == str(folder / "metric.py") and not panel.allow_code.isChecked()
    window.save_project()
    assert read_json(other)["evaluation"] == evaluation
