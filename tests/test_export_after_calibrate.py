"""An export after a calibration writes the model the calibration analysed, as it is (core/jobs.py,
core/pipeline/calibrated.py): the export ran the whole quantize pipeline again, latency check included
(ppocrv4_rec: 9-19 s of planning, placement guard and latency check on a loaded 2-core machine), and
when its latency check kept units float the file was not the model the user had looked at. An edit made
after the calibration (recipe, data, the model file) still quantizes again, and says why."""

from __future__ import annotations

import shutil

import onnx
import pytest

from workbench.core import api
from workbench.core.issues import IssueCode
from workbench.core.jobs import job_calibrate, job_export
from workbench.core.pipeline.latency_check import LatencyCheck
from workbench.core.progress import CancelToken
from workbench.core.runtime import unit_latency
from workbench.core.runtime.latency import LatencyComparison


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


@pytest.fixture
def latency_checks(monkeypatch):
    """Counts the latency check's runs (cached measurements count too: the pass runs either way)."""
    runs: list[str] = []
    run = LatencyCheck.run

    def counting(self, job):
        runs.append("latency-check")
        return run(self, job)

    monkeypatch.setattr(LatencyCheck, "run", counting)
    return runs


@pytest.fixture
def analysed(monkeypatch):
    """The serialised models the calibrate job analyses per unit."""
    models: list[bytes] = []
    analyze = api.analyze

    def keeping(model, result, data, **kw):
        models.append(result.proto.SerializeToString())
        return analyze(model, result, data, **kw)

    monkeypatch.setattr(api, "analyze", keeping)
    return models


def _payload(model_path, data_path, samples: int = 8) -> dict:
    return {"model_path": str(model_path), "recipe": api.make_recipe("cpu-u8s8").to_json(),
            "data": {"kind": "npz", "path": str(data_path)}, "samples": samples, "calibration": None}


def _run(job, payload) -> tuple[dict, list[str]]:
    """The job's result and its phases (the text before the first ': ' of each message, runs collapsed)."""
    tops: list[str] = []

    def progress(_done, _total, message):
        top = message.split(": ", 1)[0]
        if not tops or tops[-1] != top:
            tops.append(top)

    return job(payload, progress, CancelToken()), tops


def _calibrate(payload: dict) -> dict:
    result, _ = _run(job_calibrate, {**payload, "reuse": False, "analysis_samples": 8})
    return result


def _export(payload: dict, cal: dict, path, **changes) -> tuple[dict, list[str]]:
    """Export as the app does after ``cal``: the document's recipe (the one analysed), cache and kept model."""
    return _run(job_export, {**payload, "recipe": cal["recipe"], "calibration": cal["calibration"], "reuse": True,
                             "path": str(path), "format": "qdq", "choose": False, "calibrated": cal.get("written"),
                             **changes})


def test_export_after_calibrate_writes_the_analysed_model_without_a_latency_check(
        corpus, tmp_path, latency_checks, analysed, monkeypatch):
    # the latency placement's probes fixed (each unit measures its quantized form slower): timed, the pipeline run
    # again below could keep other units of digits_cnn float than the calibration's on a loaded machine
    monkeypatch.setattr(unit_latency, "compare", lambda f, q, feed, **k: LatencyComparison(float_s=1e-3, quant_s=2e-3, runs=5))
    d = corpus / "digits_cnn"
    payload = _payload(d / "model_opset17.onnx", d / "calib.npz")
    cal = _calibrate(payload)
    assert latency_checks == ["latency-check"]  # the calibration measured its model once
    assert len(analysed) == 1

    out = tmp_path / "m.onnx"
    res, phases = _export(payload, cal, out)
    assert phases == ["Writing"]
    assert latency_checks == ["latency-check"]  # none more
    assert out.read_bytes() == analysed[0]  # the model the Errors bars measured, byte for byte
    kept = cal["written"]
    assert kept["latency"]["runs"] > 0 and kept["latency"]["float_s"] > 0
    assert [i.code for i in kept["issues"]].count(IssueCode.LATENCY) == 1
    assert res["reused"] is True and res["rerun"] is None and res["recipe"] == cal["recipe"]
    assert res["units"] == kept["units"]
    assert res["latency"] == kept["latency"]
    assert any("latency quantized / float" in t for t in res["issues"])

    # the same bytes as the quantize pipeline writes for that recipe and cache (what the export wrote before)
    again, phases = _export(payload, cal, tmp_path / "again.onnx", calibrated=None)
    assert "Quantizing" in phases and latency_checks == ["latency-check"] * 2
    assert (tmp_path / "again.onnx").read_bytes() == out.read_bytes()
    assert again["reused"] is False and again["rerun"] is None


def test_an_edit_after_calibrating_quantizes_again_and_says_why(corpus, tmp_path, latency_checks):
    d = corpus / "digits_cnn"
    model = tmp_path / "model.onnx"
    shutil.copyfile(d / "model_opset17.onnx", model)
    payload = _payload(model, d / "calib.npz")
    cal = _calibrate(payload)
    # a unit the calibration quantized (its latency placement may have kept some float already)
    plan = api.plan(api.open_model(model), api.Recipe.from_json(cal["recipe"]))
    unit = next(n for n, u in sorted(plan.units.items()) if not u.excluded)
    edited = api.Recipe.from_json(cal["recipe"]).with_excluded([unit]).to_json()

    res, phases = _export(payload, cal, tmp_path / "edited.onnx", recipe=edited)
    assert res.get("rerun") == "the recipe was edited since the calibration" and res["reused"] is False
    assert "Quantizing" in phases and len(latency_checks) == 2
    assert res["units"][0] == cal["written"]["units"][0] - 1
    assert (tmp_path / "edited.onnx").read_bytes() != cal["written"]["model"]

    res, _ = _export(payload, cal, tmp_path / "rows.onnx", samples=5)
    assert res["rerun"] == "the calibration sample count changed since the calibration" and len(latency_checks) == 3

    res, _ = _export(payload, cal, tmp_path / "data.onnx", data={"kind": "npz", "path": str(d / "eval.npz")})
    assert res["rerun"] == "the calibration data changed since the calibration" and len(latency_checks) == 4

    proto = onnx.load(model)
    proto.doc_string = "retrained"
    onnx.save(proto, model)
    res, _ = _export(payload, cal, tmp_path / "file.onnx")
    assert res["rerun"] == "the model file changed since the calibration" and len(latency_checks) == 5

    res, _ = _export(payload, cal, tmp_path / "m.qonnx.onnx", format="qonnx")  # the same rule for QONNX
    assert res["rerun"] == "the model file changed since the calibration" and len(latency_checks) == 6



def test_qonnx_export_after_calibrate_writes_from_its_ranges(corpus, tmp_path, latency_checks, monkeypatch):
    # each probed unit measures slower quantized: the latency placement keeps attention MatMuls float
    monkeypatch.setattr(unit_latency, "compare", lambda f, q, feed, **k: LatencyComparison(float_s=1e-3, quant_s=2e-3, runs=5))
    d = corpus / "digits_transformer"
    payload = _payload(d / "model_opset17.onnx", d / "calib.npz", samples=16)
    cal = _calibrate(payload)
    assert latency_checks == ["latency-check"]

    out = tmp_path / "kept.qonnx.onnx"
    res, phases = _export(payload, cal, out, format="qonnx")
    assert phases == ["Opening", "Quantizing", "Writing"] and latency_checks == ["latency-check"]  # none more
    assert res["reused"] is True and res["rerun"] is None and res["latency"] == cal["written"]["latency"]
    assert res["recipe"] == cal["recipe"] and res["units"] == cal["written"]["units"]
    # the bytes `workbench-cli quantize --format qonnx` writes: the preset quantized with the latency check
    model = api.open_model(d / "model_opset17.onnx")
    cli = api.quantize(model, api.make_recipe("cpu-u8s8"), data=payload["data"], samples=16, latency_check=True)
    api.export(cli, tmp_path / "cli.qonnx.onnx", format="qonnx", model=model, static_shapes=True)
    assert out.read_bytes() == (tmp_path / "cli.qonnx.onnx").read_bytes()
    assert {n.op_type for n in onnx.load(out).graph.node} >= {"Quant", "MatMul"}

    # ranges that no longer give the kept model (here: none kept): quantized afresh, and said why
    res, phases = _export(payload, cal, tmp_path / "fresh.qonnx.onnx", format="qonnx", calibration=None)
    assert res["rerun"] == "the calibration's ranges no longer give the model it analysed" and not res["reused"]
    assert "Quantizing" in phases and latency_checks == ["latency-check"] * 3
