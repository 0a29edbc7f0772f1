"""Analyze (F6) does not measure again what the figures shown already measured, Save Project stays enabled
while a calibration or analysis runs, and the time elapsed counts on between a job's progress reports.

Found by a user trial on ppocrv4_rec: after Export, Save Project and Export stayed off through a re-analysis
of several minutes, and the 'elapsed' label stood at '0:08 elapsed' for 30 s (it was worded only when the job
reported progress)."""

from __future__ import annotations

import pytest
from latency_fakes import quantized_faster
from test_app_flow import run_job

from workbench.qt.app_window import ANALYSIS_CURRENT
from workbench.qt.eta import ProgressClock


@pytest.fixture(autouse=True)
def _latency_scripted(monkeypatch):
    """The app's jobs run in this process with the latency measured as quantized faster (latency_fakes): what
    these tests check does not depend on whether digits_cnn measures slower quantized on this machine (then the
    latency check would keep every unit float, and no bar would be drawn)."""
    quantized_faster(monkeypatch)


def _calibrated(qtbot, win, open_file, corpus):
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    win.calibration.samples.setValue(8)
    win.calibration.analysis_samples.setValue(4)
    status, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=300_000)
    assert status == "succeeded", res
    assert win.doc.results_current and win.doc.errors


def test_analyze_after_a_calibration_with_the_same_inputs_starts_no_job(qtbot, window, open_file, corpus):
    win = window
    _calibrated(qtbot, win, open_file, corpus)
    before = {r.node: r.sqnr_db for r in win.doc.errors}
    started: list[str] = []
    win.runs.started.connect(started.append)
    win.act_analyze.trigger()  # nothing changed: the figures would come out the same
    assert started == [] and not win.runs.busy
    assert win.status_label.text() == ANALYSIS_CURRENT
    assert {r.node: r.sqnr_db for r in win.doc.errors} == before

    win.calibration.analysis_samples.setValue(6)  # another input: measured again
    status, res = run_job(qtbot, win, win.act_analyze.trigger, timeout=300_000)
    assert status == "succeeded", res
    assert started == ["Analysis"]
    win.act_analyze.trigger()  # and that analysis is remembered in turn
    assert started == ["Analysis"] and win.status_label.text() == ANALYSIS_CURRENT


def test_save_project_stays_enabled_while_an_analysis_runs(qtbot, window, open_file, corpus, tmp_path):
    win = window
    _calibrated(qtbot, win, open_file, corpus)
    win.calibration.analysis_samples.setValue(6)
    with qtbot.waitSignal(win.runs.finished, timeout=300_000):
        win.act_analyze.trigger()
        assert win.runs.busy
        assert win.act_save.isEnabled() and win.act_save_as.isEnabled()
        assert not win.act_export.isEnabled() and not win.act_calibrate.isEnabled()
        saved = win.save_project_to(tmp_path / "mid.wbproj")  # while the analysis runs
        assert saved.is_file() and not win.doc.modified
    assert win.doc.modified  # the analysis' new figures arrived after the save: unsaved again


def test_the_elapsed_time_counts_on_without_progress_reports(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    now = [100.0]
    win.calibration._clock = ProgressClock(now=lambda: now[0])
    win.runs.kind, win.runs.job = "calibrate", object()  # a running calibration, as the window sees it
    try:
        win._on_run_started("Calibration")
        win._on_run_progress(1, 10, "Analysing: 2 sessions")
        assert "0:00 elapsed" in win.calibration.status.text()
        now[0] += 30.0  # 30 s without a report
        qtbot.waitUntil(lambda: "0:30 elapsed" in win.calibration.status.text(), timeout=5_000)
        assert "0:30 elapsed" in win.status_label.text()
    finally:
        win._on_run_ended("Done.")
        win.runs.kind, win.runs.job = "", None
    now[0] += 30.0
    qtbot.wait(1_500)  # no job: nothing is worded again
    assert win.calibration.status.text() == "Done."
