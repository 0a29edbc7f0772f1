"""File > Export (QDQ / QONNX) and Export Report never write onto the open work's inputs.

Found by a bug hunt: the app protected only the model, so Export with the path of the open project,
of calib.npz or of eval.npz succeeded and replaced the file (the CLI refuses: "this is an input file").
The window, the run controller and the child jobs each refuse now."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from workbench.core import jobs
from workbench.core.errors import ExportError, WorkbenchError
from workbench.core.progress import CancelToken


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def work(corpus, tmp_path) -> Path:
    """A private copy of digits_cnn (model, calib.npz, eval.npz): the tests try to write onto it."""
    folder = tmp_path / "digits"
    folder.mkdir()
    for name in ("model_opset17.onnx", "calib.npz", "eval.npz"):
        shutil.copy(corpus / "digits_cnn" / name, folder / name)
    return folder


def test_export_and_report_refuse_the_open_project_and_the_data_files(qtbot, window, open_file, work):
    win = window
    open_file(win, work / "model_opset17.onnx")
    proj = win.save_project_to(work / "P.wbproj")
    open_file(win, proj)
    win.evaluate_panel.settings.data.setText(str(work / "eval.npz"))
    assert win.doc.project_path == proj and win.doc.data["path"] == str(work / "calib.npz")
    targets = {proj: "the open project", work / "calib.npz": "the calibration data",
               work / "eval.npz": "the eval data", work / "model_opset17.onnx": "the open model"}
    before = {p: digest(p) for p in targets}
    for target, what in targets.items():
        for start in (lambda t=target: win.export_to(t), lambda t=target: win.export_to(t, "qonnx"),
                      lambda t=target: win.export_report_to(t)):
            with pytest.raises(WorkbenchError) as caught:
                start()
            text = str(caught.value)
            assert text == (f"{target} is {what}; writing there would replace it. Choose another file name for the "
                            "output (Workbench never modifies its inputs).")
            assert "\n" not in text
            assert not win.runs.busy  # refused before any job started
    assert {p: digest(p) for p in targets} == before
    # the run controller refuses too, for any caller (the eval data named by the caller)
    with pytest.raises(ExportError, match="is the calibration data"):
        win.runs.export(work / "calib.npz")
    with pytest.raises(ExportError, match="is the eval data"):
        win.runs.report(work / "eval.npz", evaluation=win.evaluate_panel.settings.evaluation())
    assert not win.runs.busy and {p: digest(p) for p in targets} == before


def test_the_export_and_report_jobs_refuse_their_inputs_whoever_calls_them(work, tmp_path):
    """A payload whose output is one of its inputs fails before any work, in the child as headless."""
    model, calib, ev = work / "model_opset17.onnx", work / "calib.npz", work / "eval.npz"
    proj = tmp_path / "P.wbproj"
    proj.write_text("{}")
    base = {"model_path": str(model), "recipe": "{}", "data": {"kind": "npz", "path": str(calib)},
            "samples": 4, "calibration": None, "inputs": {str(proj): "the open project"}}
    cases = [(jobs.job_export, {"path": str(calib)}, "the calibration data"),
             (jobs.job_export, {"path": str(proj)}, "the open project"),
             (jobs.job_export, {"path": str(model)}, "the model"),
             (jobs.job_report, {"path": str(ev), "eval": str(ev)}, "the eval data"),
             (jobs.job_report, {"path": str(calib)}, "the calibration data")]
    before = {p: digest(p) for p in (model, calib, ev, proj)}
    for job, extra, what in cases:
        with pytest.raises(ExportError) as caught:
            job({**base, **extra}, lambda *_a: None, CancelToken())
        assert str(caught.value).startswith(f"{extra['path']} is {what}; writing there would replace it.")
    assert {p: digest(p) for p in (model, calib, ev, proj)} == before
