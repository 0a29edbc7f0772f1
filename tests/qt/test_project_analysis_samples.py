"""The Calibration panel's "Analysis samples" is part of the project: saved, restored, undoable.

It was in no project and no autosave, never marked the document modified, and came back as 32 on
reopening, so the per-unit figures of a reopened project were measured on other rows.
"""

from __future__ import annotations

import json

from cli_projects import MODEL, cli_quantize, digits_folder, read_json


def test_analysis_samples_are_saved_restored_and_undoable(qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    open_file(window, folder / MODEL)
    panel = window.calibration
    assert panel.analysis_samples.value() == 32 and window.runs.analysis_samples == 32
    for n in (31, 20, 5):  # steps of the spin box: one edit
        panel.analysis_samples.setValue(n)
    assert window.doc.modified and "*" in window.windowTitle()
    assert window.runs.analysis_samples == 5
    assert window.doc.undo_stack.count() == 1
    window.act_undo.trigger()
    assert panel.analysis_samples.value() == 32 and window.runs.analysis_samples == 32
    assert not window.doc.modified
    window.act_redo.trigger()
    proj = window.save_project_to(folder / "p.wbproj")
    assert read_json(proj)["analysis_samples"] == 5

    open_file(window, folder / MODEL)  # another open: the default again
    assert panel.analysis_samples.value() == 32 and window.runs.analysis_samples == 32
    open_file(window, proj)
    assert panel.analysis_samples.value() == 5 and window.runs.analysis_samples == 5
    assert not window.doc.modified


def test_a_project_without_analysis_samples_keeps_none(qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    proj = folder / "p.wbproj"
    cli_quantize(folder / MODEL, "--data", folder / "calib.npz", "--no-latency-check", "-o", tmp_path / "a.onnx",
                 "--save-project", proj)
    written = read_json(proj)
    written.pop("analysis_samples", None)  # as written before the field existed
    proj.write_text(json.dumps(written))
    open_file(window, proj)
    assert window.calibration.analysis_samples.value() == 32
    window.calibration.analysis_samples.setValue(8)
    window.calibration.analysis_samples.setValue(32)  # back: nothing to save
    assert not window.doc.modified
    window.save_project()
    assert read_json(proj) == dict(written, analysis_samples=None)
