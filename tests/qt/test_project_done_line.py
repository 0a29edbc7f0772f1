"""A project opened with its saved per-unit results says so in the Calibration panel.

The Errors panel showed the restored SQNR bars while the Calibration panel read "Idle." at 0 %, as if the
model had never been calibrated, and the last calibration's word on the latency check was gone.
"""

from __future__ import annotations

from example_copy import open_example_copy
from latency_fakes import fixed_latency

from workbench.core.wording import count


def calibrate(qtbot, win) -> dict:
    seen = []
    win.runs.succeeded.connect(lambda kind, res: seen.append(res))
    with qtbot.waitSignal(win.runs.finished, timeout=540_000):
        win.act_calibrate.trigger()
    assert seen, win.calibration.status.text()
    return seen[-1]


def test_a_project_with_results_opens_with_a_done_line(qtbot, window, open_file, tmp_path, monkeypatch):
    fixed_latency(monkeypatch)  # the latency placement keeps the units it probes float, on any machine
    open_example_copy(window, open_file, tmp_path)
    result = calibrate(qtbot, window)
    units, kept = len(window.doc.errors), len(result.get("latency_kept") or [])
    assert units >= 1 and kept >= 1
    window.save_project_to(tmp_path / "p.wbproj")

    open_file(window, tmp_path / "p.wbproj")
    assert len(window.doc.errors) == units
    assert window.calibration.status.text() == (
        f"Done (results restored from p.wbproj): {count(units, 'node unit')} analysed. "
        f"The latency check kept {count(kept, 'unit')} float. F5 calibrates again.")
    bar = window.calibration.progress
    assert bar.value() == bar.maximum() > bar.minimum()


def test_a_project_without_results_stays_idle(qtbot, window, open_file, tmp_path):
    open_example_copy(window, open_file, tmp_path)
    window.save_project_to(tmp_path / "p.wbproj")
    open_file(window, tmp_path / "p.wbproj")
    assert window.calibration.status.text() == "Idle."
