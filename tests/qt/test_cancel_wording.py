"""Esc during a job's phase: "Cancelling Calibration (while analysing)...", then a line that says
whether earlier results are kept; it said "Cancelling Calibration..." during the analysis and
"previous results kept" when there were none."""

from __future__ import annotations

from workbench.qt.cancel_text import cancelled_text, cancelling_text, phase_of


def test_phase_and_results_words():
    assert phase_of("Analysing: 3/120 units") == "Analysing" and phase_of("Calibrating") == "Calibrating"
    assert phase_of("step 3 of 10") == "" and phase_of("Report: writing") == ""
    assert cancelling_text("Calibration", "Analysing") == "Calibration (while analysing)"
    assert cancelling_text("Export to m.onnx", "") == "Export to m.onnx"
    assert cancelled_text("calibrate", "Analysing", False) == ("Calibrate cancelled while analysing; no results yet "
                                                              "(start it again when ready).")
    assert cancelled_text("calibrate", "Calibrating", True) == ("Calibrate cancelled while calibrating; the previous "
                                                               "results are kept.")
    assert cancelled_text("export", "Quantizing", None) == "Export cancelled while quantizing; nothing was written."
    assert cancelled_text("report", "", None) == "Report cancelled; nothing was written."
    assert cancelled_text("evaluate", "", None) == "Evaluate cancelled; nothing changed."


def test_a_recipe_choice_cancelled_while_reading_the_model_says_the_model_stays_open():
    """Esc during the recipe choice that runs after a model opens said "Choose cancelled while opening": it read
    as if opening the model had been cancelled (the job's first phase reads its own copy of the open model)."""
    assert cancelling_text("Recipe choice", "Opening") == "Recipe choice (while reading the model)"
    assert cancelled_text("choose", "Opening", None) == (
        "Recipe choice cancelled while reading the model; the model stays open with its recipe unchanged "
        "(Run > Choose Recipe, Ctrl+F5, runs it again).")
    assert cancelled_text("choose", "", None) == ("Recipe choice cancelled; the model stays open with its recipe "
                                                 "unchanged (Run > Choose Recipe, Ctrl+F5, runs it again).")


def test_window_words_a_cancel_by_phase_and_results(window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    assert not win.doc.errors and win.doc.calibration is None  # nothing calibrated yet
    win.runs.kind = "calibrate"  # as while the calibrate job runs (the slots below are the job's signals)
    win.calibration.set_running(True, "Calibration: starting...")
    win._on_run_progress(1, 1, "Calibrating: 16 rows")
    win._on_run_progress(3, 10, "Analysing: 3/10 units")  # what the calibrate job reports last
    win._on_cancelling("Calibration")
    assert win.status_label.text() == "Cancelling Calibration (while analysing)..."
    assert "Cancelling Calibration (while analysing)..." in win.calibration.status.text()
    win._on_run_cancelled("calibrate")
    win.runs.kind = ""
    assert win.status_label.text() == "Calibrate cancelled while analysing; no results yet (start it again when ready)."
    assert win.calibration.status.text() == win.status_label.text()


def test_a_phase_after_the_jobs_name_is_read():
    """Esc during the sweep said "Sensitivity cancelled while quantizing": its messages read
    "Sensitivity: Sweeping units (...)", whose head is the job's name, so the phase before it stayed."""
    assert phase_of("Sensitivity: Sweeping units (/model.2/cv2/conv/Conv) (4/64)") == "Sweeping"
    assert phase_of("Analysing: 3/120 units") == "Analysing"
    assert phase_of("Sensitivity: 4/64 units") == ""
    assert phase_of("Calibrating") == "Calibrating"
