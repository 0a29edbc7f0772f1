"""The Errors summary gives each model output's end-to-end SQNR, and F5 with "Choose the recipe first" ticked
says why it skipped the choice on an edited recipe.

The app showed only per-unit figures ("worst X at 1.3 dB; median 12.2 dB"): the model-output SQNR the CLI
prints was nowhere. And with edits in the recipe the choice was skipped silently (only the checkbox's
tooltip said it starts from a bare preset).
"""

from __future__ import annotations

import re

from bundled_example import EXAMPLE
from cli_projects import run_job
from latency_fakes import quantized_faster

from workbench.core import api
from workbench.core.jobs import _calibration
from workbench.qt import commands

ROWS = 8  # analysis rows
CALIBRATED = 16


def _open(window, open_file, *, choose: bool):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    window.calibration.set_data_spec({"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}, CALIBRATED)
    window._on_spec_changed()
    window.calibration.analysis_samples.setValue(ROWS)
    window.calibration.choose_first.setChecked(choose)


def test_errors_summary_gives_each_output_sqnr(qtbot, window, open_file, tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # digits_cnn quantized whatever this machine measures (latency_fakes)
    _open(window, open_file, choose=False)
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    qtbot.waitUntil(lambda: bool(window.errors.outputs), timeout=10_000)
    # the figure evaluate gives the same quantized model on the same rows
    model = api.open_model(EXAMPLE / "digits_cnn.onnx")
    result = api.quantize(model, window.doc.recipe, calibration=_calibration({"calibration": window.doc.calibration}))
    # over every calibration row (16), not the 8 analysis rows, with the worst single row
    ev = api.evaluate(model, result.proto, {"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")},
                      samples=CALIBRATED)
    (out,) = ev.outputs
    assert out.worst_row is not None
    worst = f"(worst row {out.worst_row_sqnr_db:.1f} dB, row {out.worst_row})"
    text = window.errors.summary.text().replace("\u200b", "")
    assert text.startswith(f"Output SQNR: {out.name} {out.sqnr_db:.1f} dB {worst} over {CALIBRATED} calibration "
                           f"rows. "), text
    assert re.search(rf"\d+ node units \(per-node figures on the first {ROWS} rows\); worst ", text), text
    assert abs(window.doc.outputs[0]["sqnr_db"] - out.sqnr_db) < 1e-3
    assert f"{out.name}: {out.sqnr_db:.1f} dB {worst}" in window.errors.summary.toolTip()
    assert f"the per-node bars are measured on the first {ROWS} rows (Analysis samples)" in window.errors.summary.toolTip()
    # saved with the results, and given back by a project
    saved = window.doc.results_json()["outputs"]
    assert saved[0]["name"] == out.name and saved[0]["samples"] == CALIBRATED
    assert saved[0]["worst_row"] == out.worst_row and saved[0]["analysis_samples"] == ROWS
    window.doc.set_results({**window.doc.results_json(), "calibration": window.doc.calibration})
    assert window.doc.outputs[0]["name"] == out.name
    window.errors.set_outputs(window.doc.outputs)
    assert window.errors.summary.text().replace("\u200b", "") == text
    # a project saved before these figures (on the analysis rows, no worst row) reads as it did
    window.errors.set_outputs([{"name": out.name, "sqnr_db": 30.0, "samples": ROWS}])
    assert window.errors.summary.text().replace("\u200b", "").startswith(
        f"Output SQNR: {out.name} 30.0 dB on {ROWS} analysis rows. {len(window.errors.rows)} node units; worst ")


def test_f5_says_why_the_choice_is_skipped(qtbot, window, open_file, monkeypatch):
    quantized_faster(monkeypatch)  # measured, the example's first Conv and AveragePool are kept float (a latency edit)
    _open(window, open_file, choose=True)
    # node overrides alone no longer skip it (the choice keeps them); a rule does
    rule = commands.make_rule("op_type", "Conv", activation_dtype="int16")
    commands.push_edit(window.doc, commands.add_rule(window.doc.recipe, rule), "int16")
    assert not window.runs.will_choose()
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    status = window.calibration.status.text()  # the whole text; the status bar's line points to it
    assert window.status_label.text().endswith(" Recipe choice skipped. Details: Calibration panel.")
    assert status.endswith(" Recipe choice skipped: the recipe has 1 rule or op-type edit; the choice starts from a "
                           "preset with node overrides at most (to let it choose: undo those edits, F5, then edit the "
                           "chosen recipe)."), status
    # box off: nothing said
    window.calibration.choose_first.setChecked(False)
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    assert "Recipe choice skipped" not in window.status_label.text()
