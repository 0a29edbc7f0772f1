"""Latency under load: the ratio is taken from thread CPU time (other processes' time is left out), a
measurement taken on a loaded machine is never cached nor reused, and
--remeasure-latency (WORKBENCH_REMEASURE_LATENCY) measures a cached pair again. The clocks and the
sessions are fakes: each run of a model advances the wall clock and the thread CPU clock by fixed
amounts, so every figure is exact."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
from test_latency import _quantized as _tiny_conv

from workbench.cli import _print_issues, main
from workbench.core import api
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.pipeline.latency_check import describe
from workbench.core.runtime import latency

#: Nanoseconds a run adds to (wall clock, thread CPU): the float model is preempted half of each run (its
#: wall time doubled), the quantized one is not. By the wall clock the quantized model looks 0.60x float,
#: by CPU time it is 1.20x.
FLOAT_RUN = (2_000_000, 1_000_000)
QUANT_RUN = (1_200_000, 1_200_000)


def _quantized(model) -> bool:
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load_from_string(model)
    return any(n.op_type == "DequantizeLinear" for n in proto.graph.node)


@pytest.fixture
def fake(fake_latency):
    """conftest's fake clocks and sessions, a run of the float model taking :data:`FLOAT_RUN` and one of a
    quantized model :data:`QUANT_RUN`; ``fake.load`` is the load average the measurement reads (2 cores),
    ``fake.sessions`` counts the sessions opened (two per measurement)."""
    fake_latency.script = lambda model: (lambda k: QUANT_RUN) if _quantized(model) else (lambda k: FLOAT_RUN)
    return fake_latency


def _pair(tmp_path):
    model, data = _tiny_conv(tmp_path)  # test_latency's tiny Conv and its calibration rows
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    return (tmp_path / "conv.onnx", model.proto.SerializeToString(), result.proto.SerializeToString(),
            {"X": np.load(data)["X"][:2]})


def test_the_ratio_is_of_thread_cpu_time_and_the_note_shows_both(tmp_path, fake):
    _, fb, qb, feed = _pair(tmp_path)
    lat = latency.measure(fb, qb, feed, budget_s=0.05)
    assert (lat.float_cpu_s, lat.quant_cpu_s) == pytest.approx((1.0e-3, 1.2e-3))
    assert (lat.float_s, lat.quant_s) == pytest.approx((2.0e-3, 1.2e-3))
    assert lat.ratio == pytest.approx(1.2) and lat.wall_ratio == pytest.approx(0.6)
    assert lat.spread == 1.0 and lat.load == 0.0 and lat.cores == 2 and lat.reliable
    note = describe(lat, feed)
    assert note.startswith("latency quantized / float = 1.20 (thread CPU time: 1.200 ms vs 1.000 ms; wall clock "
                           "0.60 (1.200 ms vs 2.000 ms); 5th percentile of 15 alternating runs")
    assert "load average 0.0 on 2 cores, median run 1.00x the 5th percentile; measured in" in note and "not cached" not in note


def test_a_slowdown_hidden_by_the_wall_clock_is_left_float_and_said_plainly(tmp_path, fake, capsys):
    """By CPU time the quantized model is 1.20x float (200 us a run): the latency fallback leaves its only
    island float, and the CLI says that the file written is the float model and how to force quantization."""
    src, *_ = _pair(tmp_path)
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(src), "--data", str(tmp_path / "calib.npz"), "-o", str(out), "--no-auto"]) == 0
    err = capsys.readouterr().err
    assert not [n for n in onnx.load(out).graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
    # measured (the quantized model), decided (the float model written), the written model's figure: in that order
    lines = [line for line in err.splitlines() if "latency" in line and line.startswith(("note:", "warning:"))]
    assert [line.split(" (")[0] for line in lines] == [
        "note: latency quantized / float = 1.20", "warning: conv: kept float with its island of 1 node unit",
        "warning: the latency fallback left every unit float, so the model written is the float model, not a "
        "quantized one", "note: latency of the model written", "warning: no node unit is quantized: all 1 were kept float"]
    assert lines[3].startswith("note: latency of the model written (the float model: every unit left float; any "
                               "difference from 1.00 is measurement noise) / float = 1.00 (")
    assert ("warning: the latency fallback left every unit float, so the model written is the float model, not a "
            "quantized one (as quantized it measured 1.20x its float latency); pass --no-latency-check to write it "
            "quantized anyway, name nodes in an override to keep their islands quantized, or measure again with "
            "--remeasure-latency") in err
    assert ("so the written model computes in float like the input; --no-latency-check writes the units the latency "
            "check kept float quantized") in err


def test_a_measurement_on_a_loaded_machine_is_neither_cached_nor_reused(tmp_path, fake):
    _, fb, qb, feed = _pair(tmp_path)
    fake.load = 2.5  # 1.25 runnable tasks per core
    busy = latency.compare(fb, qb, feed, cache_dir=tmp_path / "c", budget_s=0.05)
    assert not busy.reliable and busy.unreliable_because() == "load average 2.5 on 2 cores"
    assert not list((tmp_path / "c").glob("*.json"))  # not written
    note = describe(busy, feed)
    assert "; not cached: taken at load average 2.5 on 2 cores (a loaded machine" in note
    # an entry whose figures say it was taken under load (written by hand here) is measured again
    path = tmp_path / "c" / f"{latency.cache_key(fb, qb, feed)}.json"
    path.parent.mkdir()
    entry = {"float_s": 1e-3, "quant_s": 5e-3, "runs": 9, "float_median_s": 1e-3, "quant_median_s": 5e-3,
             "float_cpu_s": 1e-3, "quant_cpu_s": 5e-3, "load": 6.0, "cores": 2}
    path.write_text(json.dumps(entry))
    fake.load, opened = 0.5, fake.sessions
    again = latency.compare(fb, qb, feed, cache_dir=tmp_path / "c", budget_s=0.05)
    assert not again.cached and again.ratio == pytest.approx(1.2) and fake.sessions == opened + 2
    assert json.loads(path.read_text())["quant_cpu_s"] == pytest.approx(1.2e-3)  # replaced by the quiet one
    assert latency.compare(fb, qb, feed, cache_dir=tmp_path / "c").cached
    # the spread of the runs is recorded and shown, not a reason to measure again (about 1.5 here, quiet or not)
    path.write_text(json.dumps({**entry, "load": 2.0, "float_cpu_median_s": 1.5e-3, "quant_cpu_median_s": 5e-3}))
    spread = latency.compare(fb, qb, feed, cache_dir=tmp_path / "c", budget_s=0.05)
    assert spread.cached and spread.ratio == 5.0 and spread.spread == pytest.approx(1.5)
    assert "load average 2.0 on 2 cores, median run 1.50x the 5th percentile; reused" in describe(spread, feed)


def test_remeasure_measures_a_cached_pair_again(tmp_path, fake, monkeypatch, capsys):
    _, fb, qb, feed = _pair(tmp_path)
    first = latency.compare(fb, qb, feed, budget_s=0.05)
    assert not first.cached and latency.compare(fb, qb, feed).cached
    opened = fake.sessions
    monkeypatch.setenv(latency.REMEASURE_ENV, "1")
    assert not latency.compare(fb, qb, feed, budget_s=0.05).cached and fake.sessions == opened + 2
    monkeypatch.setenv(latency.REMEASURE_ENV, "0")
    assert latency.compare(fb, qb, feed).cached
    monkeypatch.delenv(latency.REMEASURE_ENV)
    # the CLI: the cached note says how to measure again, and --remeasure-latency does, for that command only
    src = tmp_path / "conv.onnx"
    args = ["quantize", str(src), "--data", str(tmp_path / "calib.npz"), "-o", str(tmp_path / "q.onnx"), "--no-auto"]
    assert main(args) == 0
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "reused from an earlier measurement of the same pair; --remeasure-latency " \
           "(WORKBENCH_REMEASURE_LATENCY=1 in the app's environment) measures again" in err
    opened = fake.sessions
    assert main(args + ["--remeasure-latency"]) == 0
    err = capsys.readouterr().err
    assert "reused" not in err and "measured in " in err and fake.sessions > opened
    assert latency.REMEASURE_ENV not in os.environ


def test_a_slowdown_measured_under_load_changes_nothing(tmp_path, fake):
    """The fallback kept every unit float on a figure taken at a load average of 6 on 2 cores; now such a
    figure decides nothing (test_latency_unreliable: the warning it gives instead)."""
    src, *_ = _pair(tmp_path)
    fake.load = 6.0
    model = api.open_model(str(src))
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(tmp_path / "calib.npz"), latency_check=True)
    assert not [i for i in result.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT]
    assert [u.excluded for u in result.plan.units.values()] == [False]


def test_the_all_float_warning_is_printed_beside_a_group_of_islands(capsys):
    """ppocr_mobile_v2_cls: 13 islands left float share two lines, and the CLI dropped the warning about the
    whole model with them (same code and severity, no node)."""
    islands = [PlanIssue(n, "warning", "kept float with its island", code=IssueCode.LATENCY_KEPT_FLOAT)
               for n in ("a", "b", "c")]
    whole = PlanIssue("", "warning", "the model written is the float model", code=IssueCode.LATENCY_KEPT_FLOAT)
    _print_issues([*islands, whole])
    assert capsys.readouterr().err.splitlines() == [
        "warning: a: kept float with its island", "warning: 2 more nodes likewise (latency-kept-float): b, c",
        "warning: the model written is the float model"]


@pytest.mark.parametrize(("cost_s", "said"), [(0.004, "measured in under 0.1 s"), (2.04, "measured in 2.0 s")])
def test_the_note_never_says_a_measurement_took_0_0_s(cost_s, said):
    """A tiny model's pair is measured in milliseconds: the note read 'measured in 0.0 s'."""
    lat = latency.LatencyComparison(float_s=20e-6, quant_s=18e-6, runs=301, cost_s=cost_s)
    note = describe(lat, {"X": np.zeros((1, 1, 8, 8), np.float32)})
    assert said in note and "0.0 s" not in note
