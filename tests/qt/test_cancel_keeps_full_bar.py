"""A calibration cancelled after an earlier one finished leaves the Calibration panel's bar full.

The line said "Calibrate cancelled while calibrating; the previous results are kept." beside a bar at 0 %,
while the Errors panel still showed those results; with no earlier results the bar stays at 0 %.
"""

from __future__ import annotations

from example_copy import open_example_copy
from latency_fakes import fixed_latency


def cancel_a_calibration(win) -> None:
    """The calibrate job's signals as when Esc stops it while it calibrates (as in test_cancel_wording)."""
    win.runs.kind = "calibrate"
    win.calibration.set_running(True, "Calibration: starting...")
    win._on_run_progress(1, 4, "Calibrating: 16 rows")
    win._on_cancelling("Calibration")
    win._on_run_cancelled("calibrate")
    win.runs.kind = ""


def test_a_cancel_after_a_calibration_keeps_the_bar_full(qtbot, window, open_file, tmp_path, monkeypatch):
    fixed_latency(monkeypatch)
    open_example_copy(window, open_file, tmp_path)
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_calibrate.trigger()
    assert window.doc.errors
    cancel_a_calibration(window)
    bar = window.calibration.progress
    assert window.calibration.status.text() == "Calibrate cancelled while calibrating; the previous results are kept."
    assert bar.value() == bar.maximum() > bar.minimum()


def test_a_first_calibration_cancelled_leaves_the_bar_empty(window, open_file, tmp_path):
    open_example_copy(window, open_file, tmp_path)
    cancel_a_calibration(window)
    bar = window.calibration.progress
    assert window.calibration.status.text().startswith("Calibrate cancelled while calibrating; no results yet")
    assert bar.value() == bar.minimum() < bar.maximum()
