"""Which timings decide the latency ratio (workbench.core.runtime.run_times): a thread CPU reading that cannot be
right is dropped, a low percentile and not the single fastest reading stands for a model, and a zero timing is
never a ratio of 0.00. The clocks and sessions are fakes: each run advances the wall clock and the thread CPU
clock by the nanoseconds a script gives, so every figure is exact."""

from __future__ import annotations

import json

import pytest

from workbench.core import api
from workbench.core.pipeline.latency_check import describe, reused_slowdown
from workbench.core.runtime import latency, run_times

FEED: dict = {}


@pytest.fixture
def scripted(fake_latency):
    """``scripted(float_script, quant_script)``: measure() of b"float" against b"quant" with those runs
    (``script(k)`` = (wall ns, thread CPU ns) of run ``k``, conftest's ``fake_latency``), on a quiet machine
    (load average 0, 2 cores); returns the clock."""

    def setup(float_script, quant_script):
        fake_latency.script = lambda model: float_script if model == b"float" else quant_script
        return fake_latency

    return setup


#: digits_cnn at a load average of 2.9 (2 cores): 20 us float, 18 us quantized, one float run's thread CPU
#: reading 10 us at 21 us of wall time (the CLI printed 1.83x, "0.018 ms vs 0.010 ms; wall clock 0.90").
def _float(k):
    return (21_000, 10_000) if k == 40 else (20_000, 19_000)


def _quant(k):
    return (18_000, 18_000)


def test_a_broken_cpu_reading_does_not_decide_the_ratio(scripted):
    scripted(_float, _quant)
    lat = latency.measure(b"float", b"quant", FEED, budget_s=0.05)
    assert lat.runs == 301
    assert (lat.float_cpu_s, lat.quant_cpu_s) == pytest.approx((19e-6, 18e-6))
    assert lat.ratio == pytest.approx(18 / 19) and lat.wall_ratio == pytest.approx(0.9)
    assert describe(lat, FEED).startswith("latency quantized / float = 0.95 (thread CPU time: 0.018 ms vs 0.019 ms; "
                                          "wall clock 0.90 (0.018 ms vs 0.020 ms); 5th percentile of 301 "
                                          "alternating runs")


def test_one_low_reading_that_looks_plausible_does_not_decide_either(scripted):
    """11 us of CPU in 20 us of wall time passes the descheduled test: the 5th percentile leaves it out."""
    scripted(lambda k: (20_000, 11_000) if k == 5 else (20_000, 19_000), _quant)
    lat = latency.measure(b"float", b"quant", FEED, budget_s=0.05)
    assert lat.float_cpu_s == pytest.approx(19e-6) and lat.ratio == pytest.approx(18 / 19)
    # and among the 7 runs of a short budget too (the second fastest of 7)
    scripted(lambda k: (2_000_000, 1_100_000) if k == 5 else (2_000_000, 1_950_000), lambda k: (1_800_000, 1_800_000))
    short = latency.measure(b"float", b"quant", FEED, budget_s=0.001)
    assert short.runs == 7 and short.ratio == pytest.approx(1.8 / 1.95)


def test_a_zero_thread_cpu_reading_never_gives_a_ratio_of_zero(scripted):
    # every quantized run reads 0 thread CPU time (a thread clock coarser than a run): the wall clock decides
    scripted(_float, lambda k: (18_000, 0))
    lat = latency.measure(b"float", b"quant", FEED, budget_s=0.05)
    assert (lat.float_cpu_s, lat.quant_cpu_s) == (0.0, 0.0) and not lat.cpu_recorded
    assert lat.ratio == pytest.approx(0.9)
    assert describe(lat, FEED).startswith("latency quantized / float = 0.90 (wall clock: 0.018 ms vs 0.020 ms; "
                                          "5th percentile of 301")
    # one zero reading among them is dropped
    scripted(_float, lambda k: (18_000, 0) if k == 7 else (18_000, 18_000))
    assert latency.measure(b"float", b"quant", FEED, budget_s=0.05).ratio == pytest.approx(18 / 19)


def test_a_zero_wall_time_is_measured_again_then_refused(scripted, tmp_path):
    clock = scripted(_float, lambda k: (0, 0) if 3 <= k < 3 + 301 else (18_000, 18_000))
    lat = latency.measure(b"float", b"quant", FEED, budget_s=0.05)
    assert clock.sessions == 2 and lat.ratio == pytest.approx(18 / 19)  # the second round of runs decides
    scripted(_float, lambda k: (0, 0) if k >= 3 else (18_000, 18_000))
    with pytest.raises(latency.LatencyNotMeasured, match="the clocks read no time for the runs of a model") as err:
        latency.compare(b"float", b"quant", FEED, cache_dir=tmp_path, budget_s=0.05)
    # the check is skipped when it is raised: no advice to skip it (it was wrong in the app, which has no options)
    assert str(err.value) == "the clocks read no time for the runs of a model (301 runs, twice)"
    assert not list(tmp_path.glob("*.json"))


def test_a_comparison_with_a_zero_timing_is_no_ratio():
    # the thread CPU time of one model only (0.0 for the other): the wall clock decides, not 0 / x
    half = latency.LatencyComparison(float_s=1e-3, quant_s=0.9e-3, runs=9, float_cpu_s=1e-3, quant_cpu_s=0.0)
    assert half.ratio == pytest.approx(0.9) and half.measured and not half.cpu_recorded
    broken = latency.LatencyComparison(float_s=1e-3, quant_s=0.0, runs=9)
    assert not broken.measured and broken.ratio != broken.ratio  # NaN, never 0.00
    assert reused_slowdown({"float_s": 1e-3, "quant_s": 0.0, "runs": 9, "float_cpu_s": 1e-3}) == ("", "")
    assert reused_slowdown({"float_s": 1e-3, "quant_s": 0.0, "runs": 9, "float_cpu_s": 1e-3, "quant_cpu_s": 0.0,
                            "quant_median_s": float("nan")}) == ("", "")
    assert api.reused_slowdown({"float_s": 1e-3, "quant_s": 0.9e-3, "runs": 9, "float_cpu_s": 1e-3,
                                "quant_cpu_s": 0.0}) == (": 0.90x float", "")


def test_a_cached_entry_with_a_zero_timing_is_measured_again(scripted, tmp_path):
    clock = scripted(_float, _quant)
    path = tmp_path / f"{latency.cache_key(b'float', b'quant', FEED)}.json"
    path.write_text(json.dumps({"float_s": 2e-5, "quant_s": 0.0, "runs": 9, "float_median_s": 2e-5,
                                "quant_median_s": 0.0, "float_cpu_s": 2e-5, "quant_cpu_s": 0.0, "cores": 2}))
    lat = latency.compare(b"float", b"quant", FEED, cache_dir=tmp_path, budget_s=0.05)
    assert not lat.cached and clock.sessions == 2 and lat.ratio == pytest.approx(18 / 19)
    assert json.loads(path.read_text())["quant_cpu_s"] == pytest.approx(18e-6)  # replaced


def test_which_readings_are_believed():
    wall = [20e-6] * 10
    # CPU above the run's wall time by more than reading the thread clock costs: dropped
    assert run_times.plausible_cpu(wall, [19e-6] * 9 + [40e-6]) == [19e-6] * 9
    assert run_times.plausible_cpu(wall, [21e-6] * 10) == [21e-6] * 10  # 1 us over: the clock reads' cost
    # descheduled for most of a run: dropped while 3 runs ran mostly uninterrupted ...
    assert run_times.plausible_cpu(wall, [5e-6] * 7 + [19e-6] * 3) == [19e-6] * 3
    # ... else every plausible reading counts (a machine so loaded no run went uninterrupted)
    assert run_times.plausible_cpu(wall, [5e-6] * 8 + [19e-6] * 2) == [5e-6] * 8 + [19e-6] * 2
    # under half of the runs plausible: none believed (the wall clock decides)
    assert run_times.plausible_cpu(wall, [0.0] * 6 + [19e-6] * 4) == []
    assert run_times.cpu_figures(wall, [float("nan")] * 10) == (0.0, 0.0)
    # the 5th percentile: the second fastest of 2-39, the 5th (index 5) of 100
    assert run_times.low([3.0]) == 3.0 and run_times.low([2.0, 1.0]) == 2.0 and run_times.low([]) == 0.0
    assert run_times.low([float(i) for i in range(100, 0, -1)]) == 6.0
    assert run_times.wall_figures([0.0, 1.0, 2.0, 3.0]) == (2.0, 2.0)
