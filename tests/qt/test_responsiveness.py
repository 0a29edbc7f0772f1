"""The window stays responsive while calibration runs, and cancel keeps the previous results.

Requirement: while all-MiniLM-L6-v2 (90 MB) calibrates, the GUI event loop never goes more than
100 ms without running a 20 ms QTimer. This is a property of the design (the job runs in a child
process; see workbench/qt/engine.py), not a benchmark: a GUI-thread or GIL-bound worker thread
misses it by far (a protobuf CopyFrom of this model alone holds the GIL ~0.9 s).
"""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QTimer

from workbench.qt.workers import ProcessJob

MAX_GAP_S = 0.100


class GapMeter:
    """Runs a 20 ms QTimer and records the largest interval between two ticks."""

    def __init__(self) -> None:
        self.timer = QTimer()
        self.timer.setInterval(20)
        self.timer.timeout.connect(self._tick)
        self.last = 0.0
        self.max_gap = 0.0
        self.max_at = 0.0
        self.ticks = 0
        self.gaps: list[float] = []

    def start(self) -> None:
        self.last = time.perf_counter()
        self.timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.gaps.append(now - self.last)
        if now - self.last > self.max_gap:
            self.max_gap, self.max_at = now - self.last, self.last
        self.last = now
        self.ticks += 1

    def stop(self) -> None:
        self._tick()
        self.timer.stop()


@pytest.mark.slow
def test_event_loop_stays_free_while_minilm_calibrates(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "minilm_l6_v2" / "model.onnx", timeout=120_000)
    win.calibration.samples.setValue(32)
    win.calibration.analysis_samples.setValue(4)  # analysis of this model costs ~2 s a sample on 2 cores
    assert win.doc.data["path"].endswith("calib.npz")
    progress: list = []
    win.runs.progress.connect(lambda d, t, m: progress.append((d, t, m, time.perf_counter())))
    outcome: list = []
    win.runs.succeeded.connect(lambda kind, res: outcome.append("ok"))
    win.runs.failed.connect(lambda kind, err: outcome.append(err))
    meter = GapMeter()
    meter.start()
    started = time.perf_counter()
    with qtbot.waitSignal(win.runs.finished, timeout=300_000):
        win.act_calibrate.trigger()
        assert win.runs.busy and not win.act_calibrate.isEnabled() and win.act_cancel.isEnabled()
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=5000)  # shown a turn later
    qtbot.wait(200)  # and the canvas recoloured
    meter.stop()
    elapsed = time.perf_counter() - started
    before = [m for *_x, m, t in progress if t <= meter.max_at][-1:] or ["(before the first progress)"]
    slow = sum(g > 0.05 for g in meter.gaps)
    print(f"\nminilm calibration+analysis {elapsed:.1f} s, {meter.ticks} ticks, max event-loop gap "
          f"{meter.max_gap * 1000:.1f} ms at {meter.max_at - started:.1f} s after {before[0]!r}; "
          f"{slow} gaps > 50 ms")
    assert outcome == ["ok"], outcome
    assert progress and any(m.startswith("Calibrating") for _d, _t, m, _s in progress)
    assert win.doc.errors and win.errors.bar_values()
    assert meter.max_gap < MAX_GAP_S, f"event loop blocked {meter.max_gap * 1000:.0f} ms"


def test_cancel_keeps_previous_results(qtbot, window, open_file, corpus):
    """A finished calibration, then a second one cancelled: the first results stay."""
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    with qtbot.waitSignal(win.runs.finished, timeout=120_000):
        win.start_calibration()
    before_errors = [(r.node, r.sqnr_db) for r in win.doc.errors]
    before_cal = win.doc.calibration
    assert before_errors and before_cal
    cancelled: list = []
    win.runs.cancelled.connect(cancelled.append)
    with qtbot.waitSignal(win.runs.finished, timeout=60_000):
        win.start_calibration()
        win.act_cancel.trigger()
    assert cancelled == ["calibrate"]
    assert [(r.node, r.sqnr_db) for r in win.doc.errors] == before_errors
    assert win.doc.calibration is before_cal
    assert "cancelled" in win.status_label.text() and win.act_calibrate.isEnabled()


def test_process_job_progress_and_cancel(qtbot):
    """Progress arrives on the GUI thread; cancel stops the child between steps."""
    job = ProcessJob("sleep", {"steps": 200, "delay": 0.02}, title="sleep")
    seen: list = []
    job.progress.connect(lambda d, t, m: seen.append(d))
    with qtbot.waitSignal(job.progress, timeout=30_000):
        job.start()
    with qtbot.waitSignal(job.cancelled, timeout=10_000):
        job.cancel()
    assert seen and seen[-1] < 200
    assert not job.running


def test_process_job_result(qtbot):
    job = ProcessJob("sleep", {"steps": 3, "delay": 0.01}, title="sleep")
    with qtbot.waitSignal(job.succeeded, timeout=30_000) as blocker:
        job.start()
    assert blocker.args[0] == {"steps": 3}
    qtbot.waitUntil(lambda: not job.running)
