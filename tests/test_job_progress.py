"""The app's jobs report determinate progress: every phase announces itself with done = 0, has a
total, and its done count never goes back (core/progress.py, core/jobs.py)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from bundled_example import EXAMPLE

from workbench.core import api
from workbench.core.analysis.unit_error import analysis_steps
from workbench.core.calibration.calibrate import calibrate
from workbench.core.data.base import DataSource
from workbench.core.jobs import job_calibrate, job_export, job_sensitivity
from workbench.core.progress import CancelToken, phase_of


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)




def _payload(**extra) -> dict:
    return {"model_path": str(EXAMPLE / "digits_cnn.onnx"), "recipe": api.make_recipe("cpu-u8s8").to_json(),
            "data": {"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}, "samples": 64,
            "calibration": None, **extra}


def _run(job, payload) -> tuple[dict, list[tuple[int, int, str]]]:
    events: list[tuple[int, int, str]] = []
    result = job(payload, lambda d, t, m: events.append((d, t, m)), CancelToken())
    return result, events


def _check(events) -> list[str]:
    """Every event has a total; each phase (name, total) starts at 0 and never goes back.
    Returns the phase names in the order they started."""
    assert events
    started: list[str] = []
    last: dict[tuple[str, int], int] = {}
    for done, total, message in events:
        assert total > 0, f"no total: {message!r}"
        assert 0 <= done <= total, (done, total, message)
        key = (phase_of(message), total)
        if key not in last:
            assert done == 0, f"phase {key} started at {done}, not 0: {message!r}"
            started.append(key[0])
        assert done >= last.get(key, 0), f"{message!r} went back from {last[key]} to {done}"
        last[key] = done
    return started


def _order(started: list[str], wanted: list[str]) -> None:
    firsts = [next(i for i, p in enumerate(started) if p.startswith(w)) for w in wanted]
    assert firsts == sorted(firsts), started


def test_calibrate_job_reports_every_phase_with_totals():
    result, events = _run(job_calibrate, _payload(reuse=False, analysis_samples=32))
    started = _check(events)
    _order(started, ["Opening", "Planning", "Calibrating", "Latency check", "Analysing"])  # the CLI's model analysed
    # calibration counts samples up to the number asked for, analysis the steps of its batches (ANALYSIS_BATCH = 8
    # samples each: the sessions, then each model's run and the units measured, then the fragments' run and the
    # units' own noise, analysis_steps)
    calib = [(d, t) for d, t, m in events if phase_of(m) == "Calibrating"]
    assert calib[0] == (0, 64) and calib[-1] == (64, 64)
    analysis = [(d, t) for d, t, m in events if m.startswith("Analysing") and phase_of(m) == "Analysing"]
    units = ((analysis[-1][1] - 1) // 4 - 3) // 2
    assert analysis[-1] == (analysis_steps(4, units, units),) * 2 and units == len(result["errors"])
    assert len(result["errors"]) > 0


def test_sensitivity_and_export_jobs_report_every_phase_with_totals(tmp_path):
    calibrated, _ = _run(job_calibrate, _payload(reuse=False, analysis_samples=16))
    _, events = _run(job_sensitivity, _payload(calibration=calibrated["calibration"], sweep_samples=8, top=2))
    started = _check(events)
    _order(started, ["Opening", "Quantizing", "Sensitivity: Preparing", "Sensitivity"])
    sweep = [(d, t) for d, t, m in events if phase_of(m) == "Sensitivity"]
    assert sweep[0] == (0, 4) and sweep[-1] == (4, 4)  # two figures for each of the top 2 units
    out = tmp_path / "q.onnx"
    _, events = _run(job_export, _payload(calibration=calibrated["calibration"], path=str(out)))
    started = _check(events)
    _order(started, ["Opening", "Quantizing", "Writing"])
    assert events[-1] == (1, 1, "Writing: q.onnx")
    assert sum(n.op_type == "QuantizeLinear" for n in onnx.load(out).graph.node) > 0


@pytest.mark.parametrize("message, phase", [
    ("Analysing: Measuring per-node error", "Analysing"),
    ("Sensitivity: Preparing: caching float and quantized activations", "Sensitivity: Preparing"),
    ("Sensitivity: Sweeping units (conv1)", "Sensitivity"),
    ("sleeping", "sleeping"),
])
def test_phase_of(message, phase):
    assert phase_of(message) == phase


class _Unsized(DataSource):
    """A reader that cannot say how many samples it has (as a Python reader without a count)."""

    kind = "unsized"

    def __init__(self, model, rows):
        super().__init__(model)
        self.rows = rows

    def num_samples(self):
        return None

    def to_json(self):
        return {"kind": "unsized"}

    def _iter_samples(self):
        for row in self.rows:
            yield {"input": row[None]}


def test_calibration_of_unknown_length_reports_no_total_and_says_what_it_does():
    model = api.open_model(EXAMPLE / "digits_cnn.onnx")
    rows = np.load(EXAMPLE / "digits_cnn_calib.npz")["input"][:5]
    plan = api.plan(model, api.make_recipe("cpu-u8s8"))
    events = []
    result = calibrate(model, plan, _Unsized(model, rows), batch_size=2,
                           progress=lambda d, t, m: events.append((d, t, m)))
    assert result.samples_seen == 5
    assert [(d, t) for d, t, _ in events] == [(0, 0), (2, 0), (4, 0), (5, 0)]  # a busy bar, never a false 100 %
    assert all(m.startswith("Calibrating ") and "tensors" in m for _, _, m in events)
