"""An Evaluate run is unsaved work saved in the project and shown again when it is reopened, marked out of date
when it was measured with other calibration rows.

Found by a user pass: the Evaluate panel's float vs quantized figures of digits_cnn were gone after the project
was saved and opened again ("No evaluation yet"), while its sweep and autotune curve came back; closing the
window after an evaluation asked nothing."""

from __future__ import annotations

import json

import pytest
from latency_fakes import quantized_faster
from test_app_flow import run_job

from workbench.core import api
from workbench.core.api import CalibrationResult

CHANGED = "The calibration data changed since: evaluate again (F9)."


@pytest.fixture(autouse=True)
def _latency_scripted(monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized, whatever this machine measures


def table(widget) -> list[list[str]]:
    return [[widget.item(r, c).text() for c in range(widget.columnCount())] for r in range(widget.rowCount())]


def test_an_evaluation_is_saved_in_the_project_and_shown_again(qtbot, window, open_file, corpus, tmp_path):
    win, panel = window, window.evaluate_panel
    folder = corpus / "digits_cnn"
    open_file(win, folder / "model_opset17.onnx")
    win.calibration.samples.setValue(8)
    win.calibration.choose_first.setChecked(False)
    panel.settings.set_metric("cosine")
    panel.settings.samples.setValue(16)
    project = win.save_project_to(tmp_path / "evaluated.wbproj")
    state, res = run_job(qtbot, win, win.act_evaluate.trigger, timeout=300_000)
    assert state == "succeeded", res
    assert win.doc.modified and "evaluation" in win.doc.unsaved_text
    # the figures are onnxruntime's on the job's ranges, as the core computes them headless
    model = api.open_model(folder / "model_opset17.onnx")
    quant = api.quantize(model, win.doc.recipe, calibration=CalibrationResult.from_json(win.doc.calibration))
    ref = api.evaluate(model, quant.proto, folder / "eval.npz", samples=16, metric="cosine")
    metrics, outputs = table(panel.metric_table), table(panel.output_table)
    assert metrics[0][1:3] == [api.fmt_metric(ref.float_metric), api.fmt_metric(ref.quant_metric)]
    assert outputs[0][0] == ref.outputs[0].name and float(outputs[0][1]) == pytest.approx(
        ref.outputs[0].sqnr_db, abs=1e-4
    )
    summary = panel.summary.text()
    assert summary.startswith("16 samples of eval.npz") and CHANGED not in summary

    win.save_project()
    saved = json.loads(project.read_text())["results"]["evaluation"]
    assert saved["report"]["samples"] == 16 and "on_current_data" not in saved
    open_file(win, folder / "model_opset13.onnx")  # another document: no evaluation
    assert panel.result is None and panel.metric_table.rowCount() == 0
    open_file(win, project)
    assert "evaluation" in win.status_label.text() and not win.doc.modified
    assert table(panel.metric_table) == metrics and table(panel.output_table) == outputs
    assert panel.summary.text() == summary
    assert [label.text for _s, label in panel.legend.items] == [
        f"float {api.fmt_metric(ref.float_metric)}",
        f"quantized {api.fmt_metric(ref.quant_metric)}",
    ]

    win.calibration.samples.setValue(5)  # other rows: the figures are of the 8 before
    assert panel.summary.text().endswith(CHANGED)
    win.save_project()
    assert json.loads(project.read_text())["results"]["evaluation"]["on_current_data"] is False
    open_file(win, project)
    assert table(panel.metric_table) == metrics and panel.summary.text().endswith(CHANGED)


def test_a_damaged_evaluation_is_skipped_with_a_note(qtbot):
    from workbench.qt.document import Document

    doc = Document()
    for bad in ({"report": {"outputs": [{"name": "y"}]}, "eval_data": "e.npz"}, {"report": {}}, []):
        assert doc.restore_evaluated(bad) == "The saved evaluation is unreadable; evaluate again (F9)."
        assert doc.evaluated is None
