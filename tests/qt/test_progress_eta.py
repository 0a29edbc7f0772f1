"""The calibration panel and the status bar show the running phase with an ETA after its first step."""

from __future__ import annotations

from workbench.core.jobs import job_sleep
from workbench.core.progress import CancelToken
from workbench.qt.calibration_panel import CalibrationPanel


def test_panel_shows_the_phase_and_an_eta_after_the_first_step(qtbot):
    events = []
    job_sleep({"steps": 4, "delay": 0.0}, lambda d, t, m: events.append((d, t, m)), CancelToken())
    panel = CalibrationPanel()
    qtbot.addWidget(panel)
    panel.set_running(True, "Calibration...")
    panel.show_progress(0, 4, "Calibrating: Calibrating 6 tensors")  # a phase announced at 0: no ETA yet
    assert "ETA" not in panel.status.text() and panel.progress.maximum() == 4
    texts = []
    for done, total, message in events:
        panel.show_progress(done, total, message)
        texts.append(panel.status.text())
    assert texts[0].startswith("sleeping (1/4), ETA ")
    assert all("ETA" in t for t in texts[:3])
    assert "ETA" not in texts[-1] and "(4/4)" in texts[-1]  # done: nothing left to estimate
    assert panel.progress.value() == 4
    panel.show_progress(3, 0, "Reading: samples.py")  # a length the job cannot know
    assert panel.progress.maximum() == 0 and panel.status.text().startswith("Reading: samples.py (3/?)")


def test_status_bar_repeats_the_panel_text(qtbot, window, monkeypatch):
    monkeypatch.setattr(window.runs, "kind", "calibrate")  # as RunController._start sets it
    window._on_run_started("Calibration")
    window._on_run_progress(0, 8, "Calibrating: Calibrating 6 tensors")
    window._on_run_progress(1, 8, "Calibrating: Calibrating 6 tensors")
    assert "ETA" in window.status_label.text()
    assert window.status_label.text() == window.calibration.status.text()
    assert window.status_bar_progress.maximum() == 8 and window.status_bar_progress.value() == 1
    window._on_run_ended("Calibration cancelled; previous results kept.")


def test_other_jobs_show_their_progress_in_the_panel_then_the_calibration_result(qtbot, window, monkeypatch):
    """An export's progress shows in the panel as in the status bar (the panel read "0% Idle. (Export ... is
    running)" while the status bar said 74%); at its end the panel shows the calibration's result again."""
    monkeypatch.setattr(window.runs, "kind", "calibrate")
    window._on_run_started("Calibration")
    window._on_run_ended("Done: 3 node units analysed.")
    assert window.calibration.progress.value() == 1
    monkeypatch.setattr(window.runs, "kind", "export")
    window._on_run_started("Export to m.onnx")
    assert window.calibration.status.text() == "Export to m.onnx running; Cancel or Esc stops it."
    assert window.calibration.progress.maximum() == 0  # busy until its first report
    assert not window.calibration.start.isEnabled() and window.calibration.cancel.isEnabled()
    window._on_run_progress(0, 4, "Exporting: writing")
    window._on_run_progress(1, 4, "Exporting: writing")
    assert window.status_label.text().startswith("Exporting: writing (1/4), ETA ")
    bar, panel = window.status_bar_progress, window.calibration.progress
    assert panel.value() / panel.maximum() == bar.value() / bar.maximum()
    percent = 100 * bar.value() // bar.maximum()  # as the bars show it
    assert window.calibration.status.text() == f"Export to m.onnx running ({percent} %); Cancel or Esc stops it."
    window._on_run_ended("Done: exported m.onnx")
    assert window.calibration.status.text() == "Done: 3 node units analysed."
    assert window.calibration.progress.value() == 1 and window.calibration.progress.maximum() == 1
    assert window.calibration.start.isEnabled() and not window.calibration.cancel.isEnabled()
    assert window.status_label.text() == "Done: exported m.onnx"
