"""The app's evaluate and autotune jobs (workbench.core.jobs), run headless on the bundled digits_cnn.

job_autotune sends every curve point as a partial result the moment it is measured, with the recipe
that gave it: re-quantizing that recipe from scratch and scoring it gives the point's metric.
job_evaluate gives the report of workbench.core.analysis.evaluate on the job's own quantized model,
and refuses a metric file without the allow-code opt-in (or an unknown metric) before calibrating.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bundled_example import EXAMPLE

from workbench.core import api, jobs
from workbench.core.errors import DataError
from workbench.core.progress import CancelToken
from workbench.core.tuning.autotune import load_score, make_eval_set, run_outputs

MODEL, CALIB, EVAL = (str(EXAMPLE / f) for f in ("digits_cnn.onnx", "digits_cnn_calib.npz", "digits_cnn_eval.npz"))
METRIC_FILE = Path(__file__).resolve().parents[1] / "examples" / "metrics" / "minilm_retrieval.py"


def _payload(**extra):
    return {"model_path": MODEL, "recipe": api.make_recipe("cpu-u8s8").to_json(),
            "data": {"kind": "npz", "path": CALIB}, "samples": 32, "calibration": None,
            "eval_data": EVAL, "eval_samples": 16, **extra}


class Recorder:
    """A progress callback with the ``partial`` channel the app's child process gives jobs."""

    def __init__(self):
        self.partials: list[dict] = []
        self.messages: list[str] = []

    def __call__(self, done, total, message):
        self.messages.append(message)

    def partial(self, data):
        self.partials.append(data)


def test_autotune_job_streams_each_point_with_its_recipe():
    rec = Recorder()
    # an output SQNR no recipe with an 8-bit unit reaches: the walk climbs until every unit is float
    res = jobs.job_autotune(_payload(metric="output_sqnr", min_score=200.0, promote_to="float"), rec, CancelToken())
    assert [e["point"]["promoted"] for e in rec.partials][:2] == [0, 1]
    assert [e["point"]["trial"] for e in rec.partials] == list(range(len(rec.partials)))  # streamed as measured
    assert sorted(rec.partials, key=lambda e: e["point"]["promoted"]) == res["curve"]
    assert res["met"] and len(res["curve"]) >= 3  # met only with every unit in float (SQNR inf)
    assert res["curve"][-1]["point"]["promoted"] == len(res["promoted"])
    model = api.open_model(MODEL)
    ev = make_eval_set(model, EVAL, 16)
    score = load_score("output_sqnr")
    for entry in res["curve"]:
        recipe = api.Recipe.model_validate_json(entry["recipe"])
        excluded = {n for n, u in api.plan(model, recipe).units.items() if u.excluded}
        assert len(excluded) == entry["point"]["promoted"]
        quant = api.quantize(model, recipe, data=CALIB, samples=32)
        assert score(run_outputs(quant.proto, ev.feeds), ev.float_outputs, ev.labels) == \
            pytest.approx(entry["point"]["metric"], abs=1e-6)
        assert entry["metric_float"] == res["metric_float"]


def test_autotune_job_without_partial_channel_returns_the_same_curve():
    plain = jobs.job_autotune(_payload(metric="top1", max_drop=0.0), lambda *_a: None, CancelToken())
    assert plain["curve"] and plain["curve"][0]["point"]["promoted"] == 0
    assert plain["met"] == (plain["metric_after"] >= plain["metric_float"])


def test_evaluate_job_matches_the_core_report():
    res = jobs.job_evaluate(_payload(metric="top1"), Recorder(), CancelToken())
    rep = res["report"]
    model = api.open_model(MODEL)
    quant = api.quantize(model, api.make_recipe("cpu-u8s8"),
                         calibration=api.CalibrationResult.from_json(res["calibration"]))
    ref = api.evaluate(model, quant.proto, EVAL, samples=16, metric="top1")
    assert rep.samples == ref.samples == 16
    assert (rep.float_metric, rep.quant_metric) == (ref.float_metric, ref.quant_metric)
    assert [o.sqnr_db for o in rep.outputs] == pytest.approx([o.sqnr_db for o in ref.outputs])
    assert rep.optimization_level == "ORT_ENABLE_ALL" == rep.to_json()["optimization_level"]


@pytest.mark.parametrize("metric, allow, words", [
    (str(METRIC_FILE), False, "runs its Python code"),
    ("top5", False, "--metric 'top5': unknown metric"),
])
def test_evaluate_job_refuses_metric_before_calibrating(metric, allow, words):
    rec = Recorder()
    # the calibration data does not exist: an error about the metric proves nothing was calibrated
    payload = _payload(metric=metric, allow_code=allow, data={"kind": "npz", "path": "/nonexistent/calib.npz"})
    with pytest.raises(DataError, match=words):
        jobs.job_evaluate(payload, rec, CancelToken())
    assert rec.messages == []
