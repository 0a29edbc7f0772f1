"""A comparison's progress bar is one bar across its phases with one ETA: it restarted at each phase (its range
was each phase's count), as calibrate and export once did; now matching the models, loading their sessions and
comparing the samples go across one 0..OVERALL_STEPS bar that never moves back."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE

from workbench.core.progress import COMPARE_PHASES
from workbench.qt.eta import OVERALL_STEPS, OverallProgress, job_phases


def test_the_compare_bar_goes_once_across_its_phases(qtbot, window, open_file, example_qdq_file):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    win.calibration.set_data_spec({"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}, None)
    win._on_spec_changed()
    win.calibration.analysis_samples.setValue(16)
    win._on_spec_changed()
    seen: list[tuple[str, int, int, str]] = []  # message, the bar's value and maximum, the status line
    panel: list[tuple[int, int, str]] = []  # the Calibration panel's bar (maximum, value) and text meanwhile
    shown = win._on_compare_progress

    def record(done: int, total: int, message: str) -> None:
        shown(done, total, message)
        bar = win.status_bar_progress
        seen.append((message, bar.value(), bar.maximum(), win.status_label.text()))
        panel.append((win.calibration.progress.maximum(), win.calibration.progress.value(),
                      win.calibration.status.text()))

    win._on_compare_progress = record
    with qtbot.waitSignal(win.diffReady, timeout=540_000) as sig:
        win.compare_with(example_qdq_file)
    assert sig.args[0].diff.samples == 16
    phases = [name for name, _share in COMPARE_PHASES]
    assert list(dict.fromkeys(next(p for p in phases if m.startswith(p)) for m, *_ in seen)) == phases
    assert {maximum for _m, _v, maximum, _s in seen} == {OVERALL_STEPS}
    values = [v for _m, v, _x, _s in seen]
    assert values == sorted(values) and values[0] == 0 and values[-1] == OVERALL_STEPS, seen
    loaded = next(v for m, v, *_ in seen if m == "Loading the models")  # two of the three phases done
    assert 0 < loaded < OVERALL_STEPS
    status = [s for m, *_, s in seen if m.startswith("Comparing float and quantized")]
    assert status[-1].startswith("Comparing float and quantized, samples (16/16)") and "ETA" in status[0], status
    assert all(", samples" not in s for m, *_, s in seen if not m.startswith("Comparing float"))
    # the panel showed a busy bar (maximum 0) beside a status line saying 43%: its bar is the same percentage
    assert {maximum for maximum, _v, _t in panel} == {OVERALL_STEPS}, panel
    assert [v for _x, v, _t in panel] == values
    percent = values[-2] * 100 // OVERALL_STEPS
    assert panel[-2][2] == f"Comparing with {example_qdq_file.name} running ({percent} %); Cancel or Esc stops it."


def test_compare_phases_are_the_jobs_phases():
    overall = OverallProgress(job_phases("compare"))
    events = [(0, 1, "Matching the models"), (1, 1, "Matching the models"),
              (0, 2, "Loading the models: the float model"), (1, 2, "Loading the models: the quantized model"),
              (2, 2, "Loading the models"), (0, 64, "Comparing float and quantized"),
              (32, 64, "Comparing float and quantized"), (64, 64, "Comparing float and quantized")]
    seen = [overall.update(*e) for e in events]
    assert seen == sorted(seen) and seen[-1] == 1.0
    assert seen[4] == pytest.approx(0.15) and seen[6] == pytest.approx(0.575)  # shares 2, 13, 85
