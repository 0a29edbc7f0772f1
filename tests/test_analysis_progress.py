"""The per-unit analysis and the weights-vs-activations split report finer progress: on minilm_l6_v2 the
analysis sent one report per batch of 8 rows (4 reports, 2-8 s apart) and the split one step of 2.6-6 s, so
the app's bar stood still for seconds. Now the analysis reports each model's run and the units' errors in
groups, and the split each batch of each of its passes and each variant's session (counts, not times)."""

from __future__ import annotations

import math

import pytest
from bundled_example import EXAMPLE

from workbench.core import api
from workbench.core.analysis import unit_error
from workbench.core.analysis.noise_split import split_steps
from workbench.core.analysis.unit_error import UNIT_GROUPS, analysis_steps
from workbench.core.progress import CancelToken, phase_of


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


MODEL, CALIB = str(EXAMPLE / "digits_cnn.onnx"), str(EXAMPLE / "digits_cnn_calib.npz")


@pytest.fixture(scope="module")
def quantized():
    model = api.open_model(MODEL)
    return model, api.quantize(model, api.make_recipe("cpu-u8s8"), data=CALIB, samples=16)


def _events(fn, **kw) -> list[tuple[int, int, str]]:
    events: list[tuple[int, int, str]] = []
    fn(progress=lambda d, t, m: events.append((d, t, m)), **kw)
    return events


def _grows(events) -> None:
    assert events[0][0] == 0 and all(t == events[0][1] for _d, t, _m in events)
    done = [d for d, _t, _m in events]
    assert done == sorted(done) and len(set(done)) == len(done) and done[-1] == events[0][1]


def test_analysis_reports_each_run_and_groups_of_units(quantized):
    model, res = quantized
    units = len(unit_error.unit_outputs(res.plan, res.tensor_map))
    events = _events(lambda **kw: api.analyze(model, res, CALIB, samples=32, **kw))
    # every unit is measured against the quantized run and on float inputs (its own noise): no residual Add probed
    assert events[-1][1] == analysis_steps(4, units, units)
    _grows(events)
    groups = math.ceil(units / math.ceil(units / UNIT_GROUPS))
    # the start, the sessions built, then in each of the 4 batches (one run each): the float run, the quantized
    # run, the groups of units, the fragments' run, the groups of units again
    assert len(events) == 2 + 4 * (3 + 2 * groups)  # was 5: the start and one per batch
    derived = _events(lambda **kw: api.analyze(model, res, CALIB, samples=32, own_noise=False, **kw))
    measured = (derived[-1][1] - 1) // 4 - 2  # the tensors measured (units, probed residual Adds)
    assert measured >= units > 3 and derived[-1][1] == analysis_steps(4, measured)
    assert len(derived) == 2 + 4 * (2 + math.ceil(measured / math.ceil(measured / UNIT_GROUPS)))


def test_a_batch_split_into_runs_reports_each_step_once(quantized, monkeypatch):
    model, res = quantized
    whole = _events(lambda **kw: api.analyze(model, res, CALIB, samples=16, **kw))
    monkeypatch.setattr(unit_error, "TAP_BUDGET", 1)  # every row its own run
    split = _events(lambda **kw: api.analyze(model, res, CALIB, samples=16, **kw))
    _grows(split)
    # 8 runs per batch share its steps: each step is reported once, none twice
    assert split[-1] == whole[-1] and len(split) == 1 + split[-1][1]


def test_noise_split_reports_each_batch_of_each_pass(quantized):
    model, res = quantized
    events = _events(lambda **kw: api.noise_split(model, res.proto, CALIB, samples=16, **kw))
    _grows(events)
    assert events[-1][1] == split_steps(16) == 67
    messages = [m for _d, _t, m in events]
    # the start, the float pass's 2 batches of 8 rows, then each pass: its session and its 2 batches
    assert messages == ["the float model"] * 3 + ["the model as written"] * 3 + ["the weights-only variant"] * 3 + \
        ["the activations-only variant"] * 3  # was one step around the whole split


def test_the_calibrate_job_tells_the_split_in_its_own_phase():
    from workbench.core.jobs import job_calibrate

    payload = {"model_path": MODEL, "recipe": api.make_recipe("cpu-u8s8").to_json(),
               "data": {"kind": "npz", "path": CALIB}, "samples": 16, "calibration": None, "reuse": False,
               "analysis_samples": 16}
    events: list[tuple[int, int, str]] = []
    job_calibrate(payload, lambda d, t, m: events.append((d, t, m)), CancelToken())
    split = [(d, t, m) for d, t, m in events if phase_of(m) == "Weights vs activations"]
    _grows(split)
    assert split[-1][:2] == (67, 67) and split[1][2] == "Weights vs activations: the float model"
