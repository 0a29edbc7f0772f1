"""The Errors panel's "Show the quantized model's errors" after the latency check kept every unit float.

On ppocr_mobile_v2_cls a calibration ended with "Nothing is quantized: the latency check kept all 135 node units
float" and the per-node errors showed only after Ctrl+Z then F6, which the text described. The button (and the
status bar's link) does both as one action; the summary then says that these are the quantized model's errors,
how much slower it measured, and what an export writes (it runs the latency check again: the float model here,
checked below). Ctrl+Y brings the float units back with their results, Ctrl+Z the quantized rows, each without
measuring again. When the recipe's own exclusions keep every unit float there is no button. The latency
measurements are replaced (latency_fakes), not timed.
"""

from __future__ import annotations

from bundled_example import EXAMPLE
from cli_projects import run_job
from latency_fakes import slow_quantized
from PySide6.QtCore import Qt

from workbench.qt.commands import set_exclude
from workbench.qt.error_view import NO_RESULTS
from workbench.qt.quantize_anyway import LATENCY_EDIT

MODEL = EXAMPLE / "digits_cnn.onnx"


def _run(qtbot, window, start):
    state, res = run_job(qtbot, window, start)
    assert state == "succeeded", res
    return res


def _nothing_shown(qtbot, window):
    qtbot.waitUntil(lambda: window.errors.summary.text().startswith("Nothing is quantized"), timeout=10_000)


def test_the_button_shows_the_quantized_models_errors(qtbot, window, open_file, monkeypatch, tmp_path):
    slow_quantized(monkeypatch, ratio=1.4)
    open_file(window, MODEL)
    window.calibration.choose_first.setChecked(False)  # the preset as it is: one edit, the latency check's
    units = sorted(window.doc.plan.units)
    res = _run(qtbot, window, window.act_calibrate.trigger)
    assert res["latency_kept"] == units and not window.doc.errors
    _nothing_shown(qtbot, window)
    button = window.errors.show_quantized_button
    assert button.isVisibleTo(window.errors) and button.isEnabled() and button.focusPolicy() & Qt.FocusPolicy.TabFocus
    assert window.show_quantized_link.isVisibleTo(window.statusBar())
    stack = window.doc.undo_stack
    assert LATENCY_EDIT in stack.command(stack.index() - 1).text()
    float_text = window.errors.summary.text()

    _run(qtbot, window, button.click)  # one action: the undo and the analysis
    assert not any(o.exclude for o in window.doc.recipe.overrides.values())
    assert sorted(r.node for r in window.doc.errors) == units
    qtbot.waitUntil(lambda: len(window.errors.rows) == len(units), timeout=10_000)
    assert stack.index() == stack.count() - 1 and LATENCY_EDIT not in stack.command(stack.index() - 1).text()
    assert LATENCY_EDIT in stack.command(stack.index()).text()  # what Ctrl+Y does
    text = window.errors.summary.text()
    assert "These are the quantized model's errors, the latency check's edit undone" in text
    assert "it measured 1.40x the float model's latency here" in text
    assert "Export runs the latency check again, as `workbench-cli quantize` does, and keeps them float" in text
    assert not button.isVisibleTo(window.errors) and not window.show_quantized_link.isVisibleTo(window.statusBar())

    # Ctrl+Y: the units float again, with their nothing-quantized results (no job)
    window.act_redo.trigger()
    assert all(window.doc.recipe.overrides[n].exclude for n in units)
    assert not window.doc.errors and window.doc.results_current
    _nothing_shown(qtbot, window)
    assert window.errors.summary.text() == float_text and button.isVisibleTo(window.errors)
    assert window.status_label.text().startswith("Done, but nothing is quantized: the latency check kept every unit")

    # Ctrl+Z: the quantized rows again, measured once
    window.act_undo.trigger()
    qtbot.waitUntil(lambda: len(window.errors.rows) == len(units), timeout=10_000)
    assert window.doc.results_current and "1.40x the float" in window.errors.summary.text()
    assert window.status_label.text() == f"Shown again: this recipe's {len(units)} node units analysed."

    # ... and an export does what the summary says: its latency check keeps every unit float again
    res = _run(qtbot, window, lambda: window.runs.export(tmp_path / "digits_int8.onnx"))
    assert res["units"] == [0, len(units)] and not res["reused"]
    assert stack.command(stack.index() - 1).text() == f"Keep {len(units)} units float (latency check at export)"
    qtbot.waitUntil(lambda: not window.runs.busy and not window.doc.errors, timeout=20_000)  # measured again


def test_no_button_when_the_recipe_keeps_every_unit_float(qtbot, window, open_file, monkeypatch):
    slow_quantized(monkeypatch)
    open_file(window, MODEL)
    window.calibration.choose_first.setChecked(False)
    window.doc.set_recipe(set_exclude(window.doc.recipe, sorted(window.doc.plan.units), True))
    _run(qtbot, window, window.act_calibrate.trigger)
    qtbot.waitUntil(lambda: window.errors.summary.text() != NO_RESULTS, timeout=10_000)
    assert window.errors.summary.text().startswith("Nothing is quantized: the recipe and its guards keep")
    assert not window.errors.show_quantized_button.isVisibleTo(window.errors)
    assert not window.show_quantized_link.isVisibleTo(window.statusBar())
