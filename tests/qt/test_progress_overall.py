"""One progress bar across a job's phases: a calibration's bar never restarts at a phase (it read "Opening:
model.onnx" at 100 %, then "Planning: resolving the recipe (0/1)" at 0 % with no ETA for minutes on
minilm_l6_v2), the text names the running phase and, from the second phase on, gives the whole job's ETA."""

from __future__ import annotations

import pytest
from example_copy import open_example_copy
from latency_fakes import quantized_faster
from test_app_flow import run_job

from workbench.qt.eta import OVERALL_STEPS, OverallProgress, ProgressClock, job_phases

#: the progress events of a calibration of minilm_l6_v2 with the recipe choice (64 rows; one of each run of
#: repeated counts kept)
MINILM = [(0, 1, "Opening: model.onnx"), (1, 1, "Opening: model.onnx"),
          (0, 64, "Choosing the recipe: Calibrating 169 tensors"), (32, 64, "Choosing the recipe: Calibrating 169 tensors"),
          (64, 64, "Choosing the recipe: Calibrating 169 tensors"), (0, 3, "Choosing the recipe: preset"),
          (1, 3, "Choosing the recipe: mse"), (2, 3, "Choosing the recipe: compute+mse"), (3, 3, "Choosing the recipe"),
          (0, 12, "Choosing units to keep float: 12 units from /bert/encoder/layer.0/attention/self/query/MatMul"),
          (3, 12, "Choosing units to keep float: 12 units from /bert/encoder/layer.4/attention/self/MatMul_1"),
          (12, 12, "Choosing units to keep float: done after 4 of up to 12 scores"),
          (0, 1, "Planning: resolving the recipe"), (1, 1, "Planning: resolving the recipe"),
          (0, 64, "Calibrating: Calibrating 6 tensors"), (64, 64, "Calibrating: Calibrating 6 tensors"),
          (0, 1, "Latency check: measuring the quantized model against float"),
          (1, 1, "Latency check: measuring the quantized model against float"),
          (0, 1, "Quantizing: planning and writing the quantized model"),
          (1, 1, "Quantizing: planning and writing the quantized model"),
          (0, 4, "Analysing: Measuring per-node error (building the float and quantized sessions)"),
          (2, 4, "Analysing: Measuring per-node error"), (4, 4, "Analysing: Measuring per-node error"),
          (0, 1, "Weights vs activations"), (1, 1, "Weights vs activations")]


def test_the_fraction_of_a_minilm_calibration_only_grows_and_ends_at_one():
    overall = OverallProgress(job_phases("calibrate", choose=True))
    seen = [overall.update(*event) for event in MINILM]
    assert seen == sorted(seen) and seen[0] == 0.0 and seen[-1] == 1.0
    planning = seen[MINILM.index((0, 1, "Planning: resolving the recipe"))]
    assert 0.25 < planning < 0.4  # the choice (a quarter of the job, the latency passes after) is behind it: not 0 %
    assert seen[MINILM.index((3, 3, "Choosing the recipe"))] > seen[MINILM.index((0, 3, "Choosing the recipe: preset"))]
    units = [f for f, e in zip(seen, MINILM, strict=True) if e[2].startswith("Choosing units")]
    assert seen[MINILM.index((3, 3, "Choosing the recipe"))] <= units[0] < units[1] < units[2]  # its own phase
    analysing = [f for f, e in zip(seen, MINILM, strict=True) if e[2].startswith("Analysing")]
    assert analysing[0] < analysing[1] < analysing[2]


def test_a_skipped_or_earlier_phase_never_moves_the_bar_back():
    overall = OverallProgress(job_phases("calibrate"))
    overall.update(1, 1, "Opening: m.onnx")
    overall.update(0, 1, "Quantizing: planning and writing the quantized model")  # nothing to calibrate
    after = overall.fraction
    assert after == pytest.approx((5 + 3 + 2 + 15 + 16 + 3 + 10 + 4) / 103)  # past the latency passes too
    overall.update(0, 8, "Calibrating: Calibrating 6 tensors")  # an earlier phase
    overall.update(3, 0, "Reading: samples.py")  # a phase the job's list does not name
    assert overall.fraction == after


def test_the_eta_is_of_the_whole_job_from_the_second_phase_on():
    now = [100.0]
    clock = ProgressClock(now=lambda: now[0])
    overall = OverallProgress(job_phases("calibrate"))
    overall.update(1, 1, "Opening: m.onnx")
    now[0] = 105.0
    assert clock.text(1, 1, "Opening: m.onnx", overall) == "Opening: m.onnx (1/1), 0:05 elapsed"
    overall.update(0, 1, "Planning: resolving the recipe")  # 5 of 103 shares done in 5 s: 98 s left
    assert clock.text(0, 1, "Planning: resolving the recipe", overall) == \
        "Planning: resolving the recipe (0/1), ETA 1:38, 0:05 elapsed"


def test_f5_on_the_example_fills_one_bar_across_its_phases(qtbot, window, open_file, tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # digits_cnn quantized whatever this machine measures (latency_fakes)
    open_example_copy(window, open_file, tmp_path)
    seen = []  # (message, panel bar, panel max, status bar, status max, panel text) at each event

    def record(done, total, message):
        panel, bar = window.calibration.progress, window.status_bar_progress
        seen.append((message, panel.value(), panel.maximum(), bar.value(), bar.maximum(),
                     window.calibration.status.text()))

    window.runs.progress.connect(record)
    state, res = run_job(qtbot, window, window.act_calibrate.trigger, timeout=300_000)
    assert state == "succeeded", res
    phases = [m.split(":")[0] for m, *_ in seen]
    assert {"Opening", "Planning", "Analysing", "Weights vs activations"} <= set(phases), phases
    assert all(s[2] == OVERALL_STEPS and s[4] == OVERALL_STEPS for s in seen)
    panel_values = [s[1] for s in seen]
    assert panel_values == sorted(panel_values) and panel_values[-1] == OVERALL_STEPS
    assert [s[3] for s in seen] == panel_values  # the status bar's bar is the same
    planning = [s for s in seen if s[0].startswith("Planning")][0]
    assert planning[1] > 0 and ", ETA " in planning[5] and planning[5].startswith("Planning: resolving the recipe")


def test_an_exports_latency_quantize_is_most_of_its_bar():
    """With data, an export quantizes as the CLI does (calibrating, writing and measuring the latency) in its one
    Quantizing phase: 40 of the bar's 77 shares go to it (with 5 of 42 the bar sat for most of the export)."""
    overall = OverallProgress(job_phases("export"))
    overall.update(1, 1, "Opening: m.onnx")
    start = overall.update(0, 1, "Quantizing: calibrating, writing and measuring the latency")
    end = overall.update(1, 1, "Quantizing: calibrating, writing and measuring the latency")
    assert (start, end) == ((5 + 3 + 15 + 4) / 77, (5 + 3 + 15 + 4 + 40) / 77)
    assert overall.update(1, 1, "Writing: m.qdq.onnx") == 1.0


def test_a_sweep_after_a_calibration_shows_its_own_progress(qtbot, window, open_file, tmp_path, monkeypatch):
    """F7 after F5: the bar read 100 % in the status bar and the Calibration panel ("Sensitivity sweep running
    (100 %)") from the end of the sweep's preparing on, while the status said "Sweeping units (12/64)"."""
    quantized_faster(monkeypatch)  # digits_cnn quantized whatever this machine measures (latency_fakes)
    open_example_copy(window, open_file, tmp_path)
    state, res = run_job(qtbot, window, window.act_calibrate.trigger, timeout=300_000)
    assert state == "succeeded", res
    seen = []  # (message, status bar value, status bar max, panel text) at each event of the sweep

    def record(done, total, message):
        bar = window.status_bar_progress
        seen.append((message, done, total, bar.value(), bar.maximum(), window.calibration.status.text()))

    window.runs.progress.connect(record)
    state, res = run_job(qtbot, window, window.act_sensitivity.trigger, timeout=300_000)
    assert state == "succeeded", res
    sweeping = [s for s in seen if s[0].startswith("Sensitivity: Sweeping units")]
    assert sweeping, [s[0] for s in seen]
    assert all(s[4] == OVERALL_STEPS for s in seen)
    values = [s[3] for s in seen]
    assert values == sorted(values) and values[-1] == OVERALL_STEPS
    first = sweeping[0]  # the units' count starts: the bar is not full (the example's events come 0/10, 10/10)
    assert first[1] < first[2] and 0 < first[3] < OVERALL_STEPS * 0.9, first
    percent = first[3] * 100 // OVERALL_STEPS
    assert first[5] == f"Sensitivity sweep running ({percent} %); Cancel or Esc stops it."
