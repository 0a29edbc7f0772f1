"""A calibration that ends with no unit quantized says so, why, and what to do.

On ppocr_mobile_v2_cls under load the latency check kept every unit float (13 islands, 135 units): the
status said "Done: 0 node units analysed" and the Errors panel "No results yet: calibrate (F5)", as if
nothing had run. Now the Errors panel (in front) says that nothing is quantized, that the latency check
kept every unit float, and how to quantize anyway (Ctrl+Z, then Analyze; or an override); both ways are
followed here to check the advice holds. The latency measurements are replaced (latency_fakes), not timed.
"""

from __future__ import annotations

from bundled_example import EXAMPLE
from cli_projects import run_job
from latency_fakes import slow_quantized

from workbench.qt.error_view import NO_RESULTS

MODEL = EXAMPLE / "digits_cnn.onnx"


def _calibrate(qtbot, window, action):
    state, res = run_job(qtbot, window, action.trigger)
    assert state == "succeeded", res
    return res


def test_every_unit_kept_float_by_the_latency_check(qtbot, window, open_file, monkeypatch):
    slow_quantized(monkeypatch)
    open_file(window, MODEL)
    window.calibration.choose_first.setChecked(False)  # the preset as it is: one edit, the latency check's
    units = len(window.doc.plan.units)
    res = _calibrate(qtbot, window, window.act_calibrate)
    assert len(res["latency_kept"]) == units and not window.doc.errors  # every unit float, none measured
    qtbot.waitUntil(lambda: window.errors.summary.text() != NO_RESULTS, timeout=10_000)  # drawn on a later turn
    text = window.errors.summary.text()
    assert text.startswith(f"Nothing is quantized: the latency check kept all {units} node units float")
    assert "Ctrl+Z" in text and "Analyze (F6)" in text and "exclude (keep in float)" in text
    assert window.errors.summary.font().bold()
    assert window.docks["Errors"].isVisible()
    status = window.status_label.text()
    assert status.startswith("Done, but nothing is quantized: the latency check kept every unit float")
    assert "0 node units" not in status

    # the advice holds: Ctrl+Z undoes the latency check's edit, Analyze measures every unit quantized
    window.act_undo.trigger()
    assert not any(o.exclude for o in window.doc.recipe.overrides.values())
    _calibrate(qtbot, window, window.act_analyze)
    assert len(window.doc.errors) == units
    qtbot.waitUntil(lambda: len(window.errors.rows) == units, timeout=10_000)
    assert not window.errors.summary.text().startswith("Nothing") and not window.errors.summary.font().bold()

    # ... and so does the override: the latency check leaves a node with one of its own quantized
    window.act_redo.trigger()  # every unit float again
    node = next(iter(window.doc.plan.units))
    window.canvas.select_nodes([node])
    window.inspector.exclude.click()  # unticked: an override of its own
    assert window.doc.recipe.overrides[node].exclude is False
    _calibrate(qtbot, window, window.act_calibrate)
    assert node in {r.node for r in window.doc.errors}


def test_a_microsecond_model_kept_float_reads_as_the_fallbacks_all_float(qtbot, window, open_file, monkeypatch):
    """The bundled example at 1.25x of 20 us (a microsecond model, where no island is tried): the latency check
    keeps every unit float as it does for ppocr_mobile_v2_cls, and the app says so the same way (the Errors
    panel, the status line, one undoable edit, the button that shows the quantized model's errors with the
    ratio measured); the one warning is listed with the calibration's issues."""
    slow_quantized(monkeypatch, ratio=1.25, float_s=20e-6)
    open_file(window, MODEL)
    window.calibration.choose_first.setChecked(False)
    units = sorted(window.doc.plan.units)
    res = _calibrate(qtbot, window, window.act_calibrate)
    assert res["latency_kept"] == units and not window.doc.errors
    qtbot.waitUntil(lambda: window.errors.summary.text() != NO_RESULTS, timeout=10_000)
    # its one island is counted as the CLI counts it (test_latency_kept_wording.py's microsecond test)
    assert window.errors.summary.text().startswith(
        f"Nothing is quantized: the latency check kept all {len(units)} node units float in 1 island (the quantized "
        "model measured slower than float on this machine")
    assert window.status_label.text().startswith("Done, but nothing is quantized: the latency check kept every unit "
                                                 "float")
    stack = window.doc.undo_stack
    assert stack.command(stack.index() - 1).text() == f"Keep {len(units)} units float (latency check, 1 island)"
    warnings = [i.message for i in window.doc.result_issues if str(i.severity) == "warning"]
    assert len(warnings) == 1 and warnings[0].startswith(
        "quantization does not pay at this size: as quantized the model measured 1.25x its float latency (5 us slower "
        "per run of 0.020 ms: ")
    assert window.errors.show_quantized_button.isVisibleTo(window.errors)
    state, res = run_job(qtbot, window, window.errors.show_quantized_button.click)  # Ctrl+Z and Analyze (F6)
    assert state == "succeeded", res
    assert sorted(r.node for r in window.doc.errors) == units
    qtbot.waitUntil(lambda: "it measured 1.25x the float model's latency here" in window.errors.summary.text(),
                    timeout=10_000)
