"""The calibrate job announces the CLI quantize's latency passes as phases of their own (core/jobs.py,
core/progress.PIPELINE_PHASES): the latency placement's probes, the placement guard's second plan and its
output SQNR, the latency check. minilm_l6_v2 spent ~7 s silently between "Calibrating 64/64" and the next
event (placement guard 6 s, latency check 0.5-3 s)."""

from __future__ import annotations

import pytest

from workbench.core import api
from workbench.core.jobs import job_calibrate
from workbench.core.pipeline import latency_check, latency_placement
from workbench.core.progress import PIPELINE_PHASES, CancelToken, phase_of
from workbench.core.runtime.latency import LatencyComparison


@pytest.fixture(autouse=True)
def quantized_measures_faster(monkeypatch):
    """The latency check's measurement replaced (half the float model's latency): timed, a loaded machine
    could measure the model slower and run the fallback, whose phases these tests do not ask for."""
    monkeypatch.setattr(latency_check, "compare",
                        lambda f, q, feed, **k: LatencyComparison(float_s=1e-3, quant_s=0.5e-3, runs=5))


def _events(model_dir) -> list[tuple[int, int, str]]:
    payload = {"model_path": str(model_dir / "model_opset17.onnx"), "recipe": api.make_recipe("cpu-u8s8").to_json(),
               "data": {"kind": "npz", "path": str(model_dir / "calib.npz")}, "samples": 8, "calibration": None,
               "reuse": False, "analysis_samples": 8}
    events: list[tuple[int, int, str]] = []
    job_calibrate(payload, lambda d, t, m: events.append((d, t, m)), CancelToken())
    return events


def _top(message: str) -> str:
    """The job-level phase of a message: its text before the first ": "."""
    return message.split(": ", 1)[0]


@pytest.fixture
def slow_first_unit(monkeypatch):
    """The latency placement measures its first probed unit slower (so the placement guard runs)."""
    probed: list[str] = []

    def probe(job, name, node, shapes, opset, w_shape):
        probed.append(name)
        return latency_placement._Slow("measured slower (test)", 2.0, 1e-4) if len(probed) == 1 else None

    monkeypatch.setattr(latency_placement, "_probe", probe)
    return probed


def test_calibrate_job_names_its_latency_passes(corpus, slow_first_unit):
    events = _events(corpus / "digits_transformer")
    assert slow_first_unit, "digits_transformer has no unit the latency placement probes"
    tops: list[str] = []
    for _d, _t, m in events:
        if not tops or tops[-1] != _top(m):
            tops.append(_top(m))
    # "Calibrating the rest" only when the CLI's plan left tensors out (none here); "Latency fallback" only when
    # the latency check measured the model slower than float, which depends on the machine and its load
    if "Latency fallback" in tops:
        assert tops[tops.index("Latency fallback") - 1] == "Latency check", tops
    assert [t for t in tops if t not in ("Calibrating the rest", "Latency fallback")] == [
        "Opening", "Planning", "Latency placement", "Calibrating", "Placement guard", "Latency check",
        "Analysing", "Output error", "Weights vs activations"], tops  # the CLI's model is the one analysed
    assert set(PIPELINE_PHASES) - {"Latency fallback"} <= set(tops)
    # the placement guard's own steps: its second plan (written, then calibrated), then the two SQNRs
    guard = [(d, t, m) for d, t, m in events if _top(m) == "Placement guard"]
    assert guard[0] == (0, 1, "Placement guard: writing the plan without the placement")
    assert any(m.startswith("Placement guard: writing the plan without the placement: Calibrating") for *_x, m in guard)
    scoring = [(d, t) for d, t, m in guard if m == "Placement guard: output SQNR with and without the placement"]
    assert scoring == [(0, 2), (1, 2), (2, 2)]
    probes = [(d, t) for d, t, m in events if _top(m) == "Latency placement"]
    assert probes == [(i, len(slow_first_unit)) for i in range(len(slow_first_unit) + 1)]


def test_every_phase_of_the_calibrate_job_ends_done(corpus, slow_first_unit):
    last: dict[str, tuple[int, int]] = {}
    for d, t, m in _events(corpus / "digits_transformer"):
        last[phase_of(m)] = (d, t)
    unfinished = {p: dt for p, dt in last.items() if dt[0] != dt[1]}
    assert not unfinished
    assert "Latency check" in last and "Placement guard" in last
