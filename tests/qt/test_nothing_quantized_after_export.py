"""After an export whose latency check kept every unit float again, the Errors panel and the status line still
say the latency check did it, the Problems dock lists the units it kept float, and "Show the quantized model's
errors" is offered again.

Seen as a new user on this Intel Xeon with the bundled example: calibrate (nothing quantized: the latency check
kept all 5 units float), "Show the quantized model's errors" (the bars), then File > Export. The export's latency
check kept the 5 units float again (one undoable edit, "Keep 5 units float (latency check at export)") and the
app measured the figures again with them float; that analysis runs no latency check, so its issues name none,
and the Errors panel said "Nothing is quantized: the recipe and its guards keep all 5 node units float ...
untick "exclude (keep in float)"" with no button, and the status line "the recipe keeps every unit float". The
latency measurements are replaced (latency_fakes), not timed.
"""

from __future__ import annotations

from bundled_example import EXAMPLE
from cli_projects import run_ok
from latency_fakes import slow_quantized

from workbench.core.issues import IssueCode

MODEL = EXAMPLE / "digits_cnn.onnx"



def test_errors_panel_after_an_export_that_kept_every_unit_float(qtbot, window, open_file, monkeypatch, tmp_path):
    slow_quantized(monkeypatch, ratio=1.4)
    open_file(window, MODEL)
    window.calibration.choose_first.setChecked(False)
    units = sorted(window.doc.plan.units)
    run_ok(qtbot, window, window.act_calibrate.trigger)
    button = window.errors.show_quantized_button
    run_ok(qtbot, window, button.click)  # the quantized model's errors
    qtbot.waitUntil(lambda: len(window.errors.rows) == len(units), timeout=10_000)

    res = run_ok(qtbot, window, lambda: window.runs.export(tmp_path / "digits_int8.onnx"))
    assert res["units"] == [0, len(units)]
    qtbot.waitUntil(lambda: not window.runs.busy and window.errors.summary.text().startswith("Nothing is quantized"),
                    timeout=20_000)  # measured again with the units float
    text = window.errors.summary.text()
    assert text.startswith(f"Nothing is quantized: the latency check kept all {len(units)} node units float"), text
    assert "the recipe and its guards" not in text
    assert window.status_label.text().startswith("Done, but nothing is quantized: the latency check kept every unit")
    # the export's own line is replaced by the analysis's: that one names the file written (it said only "kept 5
    # units float at export", the path nowhere on screen)
    out = tmp_path / "digits_int8.onnx"
    assert f"(measured again: the export to {out} kept {len(units)} units float)" in window.status_label.toolTip()
    # "View > Problems lists them": one note per unit, from the latency check (the analysis's issues have none)
    kept = [(source, i.node) for source, i in window.problems.problems if i.code == IssueCode.LATENCY_KEPT_FLOAT]
    assert kept == [("latency check", n) for n in units], window.problems.problems
    assert f"{len(units)} notes" in window.problems_link.text()
    assert button.isVisibleTo(window.errors) and window.show_quantized_link.isVisibleTo(window.statusBar())

    run_ok(qtbot, window, button.click)  # undoes the export's edit and shows the quantized model's errors again
    qtbot.waitUntil(lambda: len(window.errors.rows) == len(units), timeout=10_000)
    assert not any(o.exclude for o in window.doc.recipe.overrides.values())
    assert "These are the quantized model's errors" in window.errors.summary.text()


def test_a_reopened_project_kept_float_by_the_latency_check_offers_no_missing_button(qtbot, window, open_file,
                                                                                      monkeypatch, tmp_path):
    """Calibrated (nothing quantized), saved, reopened and calibrated again: the project records the units the
    latency check kept float, there is no edit of this session to undo, so no button; the text described one
    ("Show the quantized model's errors" below undoes ... Ctrl+Z) and a Ctrl+Z that undid nothing of it."""
    slow_quantized(monkeypatch, ratio=1.4)
    open_file(window, MODEL)
    window.calibration.choose_first.setChecked(False)
    run_ok(qtbot, window, window.act_calibrate.trigger)
    project = window.save_project_to(tmp_path / "p.wbproj")
    open_file(window, project)
    window.calibration.choose_first.setChecked(False)
    run_ok(qtbot, window, window.act_calibrate.trigger)
    qtbot.waitUntil(lambda: window.errors.summary.text().startswith("Nothing is quantized"), timeout=10_000)
    text = window.errors.summary.text()
    assert text.startswith("Nothing is quantized: the latency check kept all 5 node units float"), text
    assert "the project records it" in text and "Show the quantized model's errors" not in text
    assert "untick \"exclude (keep in float)\" in the inspector" in text
    assert not window.errors.show_quantized_button.isVisibleTo(window.errors)
