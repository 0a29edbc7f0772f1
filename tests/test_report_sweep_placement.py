"""``report --sweep-json`` matches the sweep file to its job by the job's inputs and options (model, calibration
data, samples, recipe and the user's overrides), never by the units the latency placement kept float: those are
measured, and a loaded machine can decide otherwise in the report than in the sweep. The probes are replaced by
fixed ratios here (no timing): the sweep's run measures digits_cnn's first Conv and its AveragePool slower
quantized (kept float), the report's run measures them faster (quantized)."""

from __future__ import annotations

import json
from html import escape

import pytest

from workbench.cli import main
from workbench.core import api
from workbench.core.analysis.sensitivity import SweepResult
from workbench.core.errors import DataError
from workbench.core.pipeline import latency_check, latency_placement
from workbench.core.recipe.recipe import Recipe
from workbench.core.report.sweep_match import sweep_placement_note
from workbench.core.runtime.latency import LatencyComparison

PROBED = ["/f/f.0/Conv", "/f/f.9/AveragePool"]  # one input channel; an AveragePool: the units digits_cnn probes


def _fixed(ratio: float) -> LatencyComparison:
    return LatencyComparison(float_s=1e-4, quant_s=1e-4 * ratio, runs=9, float_median_s=1e-4,
                             quant_median_s=1e-4 * ratio)


def _probes(monkeypatch, ratio: float) -> None:
    """Every unit probe measures ``ratio`` x float; the whole model half its float latency (no fallback). The
    placement's int8 share is off: of digits_cnn's 5 Conv/Gemm units it would keep none float (0 of 5 may be)."""
    monkeypatch.setattr(latency_placement, "MIN_INT8_SHARE", 0.0)
    monkeypatch.setattr(latency_placement, "conv_unit_latency", lambda *a: _fixed(ratio))
    monkeypatch.setattr(latency_placement, "pool_unit_latency", lambda *a: _fixed(ratio))
    monkeypatch.setattr(latency_check, "compare", lambda f, q, feed, **k: _fixed(0.5))


def _excluded(recipe_json: str) -> list[str]:
    return sorted(n for n, s in Recipe.from_json(recipe_json).overrides.items() if s.exclude)


@pytest.fixture
def swept(corpus, tmp_path, monkeypatch):
    """(the model's options, the sweep file) of a sweep whose latency placement kept PROBED float."""
    d = corpus / "digits_cnn"
    common = [str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8", "--no-auto"]
    _probes(monkeypatch, 1.2)
    sweep = tmp_path / "sweep.json"
    assert main(["sweep", *common, "--eval-samples", "4", "--executor", "inline", "--json", str(sweep)]) == 0
    return common, sweep


def test_report_takes_a_sweep_whose_latency_placement_kept_other_units_float(swept, tmp_path, monkeypatch, capsys):
    common, sweep = swept
    doc = json.loads(sweep.read_text())
    assert _excluded(doc["recipe"]) == PROBED  # the recipe it measured: the placement's decisions in it
    _probes(monkeypatch, 0.8)  # the report's own placement keeps nothing float
    capsys.readouterr()
    out = tmp_path / "r.html"
    # refused before ("they differ in overrides"), though the options were the sweep's
    assert main(["report", *common, "--eval-samples", "4", "--sweep-json", str(sweep), "-o", str(out)]) == 0
    assert _excluded(doc["job"]["recipe"]) == []  # the job it was given: nothing float
    assert doc["job"]["samples"] == 8 and len(doc["job"]["model"]) == 64 and len(doc["job"]["data"]) == 64
    note = ("the latency check kept 2 units float in the sweep that this report quantizes (/f/f.0/Conv, "
            "/f/f.9/AveragePool): the sweep table is of the sweep's placement, the rest of the report of its own")
    assert f"note: {sweep}: {note}" in capsys.readouterr().err.splitlines()
    text = out.read_text(encoding="utf-8")
    best = min(doc["rows"], key=lambda r: (-r["gain_db"], r["node"]))  # the sweep's table, as the file holds it
    assert f"<td>{best['node']}</td><td>{best['op_type']}</td><td class=\"n\">{best['only_quant_db']:.2f}</td>" in text
    assert f'<p class="note">{escape(note[0].upper() + note[1:])}.</p>' in text
    assert not {r["node"] for r in doc["rows"]} & set(PROBED)  # the sweep's units: those it quantized


def test_report_still_refuses_a_sweep_of_other_overrides_or_samples(swept, tmp_path, monkeypatch, capsys):
    """The user's own options are compared: an --exclude the sweep did not have, another --samples."""
    common, sweep = swept
    out = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", *common, "--exclude", "/f/f.3/Conv", "--eval-samples", "4", "--sweep-json", str(sweep),
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"error: {sweep}: the sweep measured another recipe (preset cpu-u8s8) than this report's (preset " \
           "cpu-u8s8, as the recipe choice and the options make it); they differ in exclude." in err
    at_16 = [a if a != "8" else "16" for a in common]
    assert main(["report", *at_16, "--eval-samples", "4", "--sweep-json", str(sweep), "-o", str(out)]) == 2
    assert (f"error: {sweep}: the sweep was measured on another job than this report's: its calibration samples "
            "differ (8 there, 16 here).") in capsys.readouterr().err
    assert not out.exists()


def test_a_sweep_file_without_its_job_is_matched_by_the_recipe_it_measured(swept, tmp_path, monkeypatch, capsys):
    """A file written before the job was recorded: the options cannot be told from the placement's decisions."""
    common, sweep = swept
    doc = json.loads(sweep.read_text())
    del doc["job"]
    sweep.write_text(json.dumps(doc))
    out = tmp_path / "r.html"
    assert main(["report", *common, "--eval-samples", "4", "--sweep-json", str(sweep), "-o", str(out)]) == 0
    _probes(monkeypatch, 0.8)
    capsys.readouterr()
    assert main(["report", *common, "--eval-samples", "4", "--sweep-json", str(sweep), "-o", str(out)]) == 2
    assert "(preset cpu-u8s8, as the recipe choice and the options make it); they differ in overrides." in \
        capsys.readouterr().err


def test_sweep_job_round_trips_and_an_unreadable_job_recipe_is_refused():
    doc = {"rows": [{"node": "a", "op_type": "Conv", "only_quant_db": 30.0, "only_float_db": 40.0, "local_db": 35.0,
                     "gain_db": 1.5}], "all_quant_db": 29.5, "samples": 4, "tasks": 3, "recipe": "{}",
           "job": {"model": "ab" * 32, "data": "cd" * 32, "samples": None, "recipe": "{}"}}
    sweep = api.load_sweep(doc, "s.json")
    assert sweep.job == doc["job"] and sweep.to_json() == doc
    bad = {**doc, "job": {**doc["job"], "recipe": json.dumps({"preset": "int3-magic"})}}
    with pytest.raises(DataError, match=r"^s\.json: field job\.recipe: invalid recipe at preset: unknown preset"):
        api.load_sweep(bad, "s.json")


def test_the_placement_note_names_the_units_each_side_kept_float():
    given = Recipe(preset="cpu-u8s8", exclude=["/f/f.3/Conv"])  # the user's own exclusion: in both, never named
    swept = SweepResult([], 30.0, 4, 3, given.with_excluded(["/f/f.0/Conv"]).to_json())
    assert sweep_placement_note(swept, given.with_excluded(["/f/f.0/Conv"])) == ""
    assert sweep_placement_note(swept, given.with_excluded(["/f/f.9/AveragePool", "/f/f.7/Conv"])) == (
        "the latency check kept 1 unit float in the sweep that this report quantizes (/f/f.0/Conv) and 2 units float "
        "in this report that the sweep quantized (/f/f.7/Conv, /f/f.9/AveragePool): the sweep table is of the "
        "sweep's placement, the rest of the report of its own")


@pytest.mark.parametrize(("job", "said"), [
    ("abc", "field job: not an object (str)"),
    ([1, 2], "field job: not an object (list)"),
    (None, "field job: not an object (null)"),
    ({"data": "cd" * 32, "samples": 8, "recipe": "{}"}, "field job.model: not a string (missing)"),
    ({"model": 5, "data": "cd" * 32, "samples": 8, "recipe": "{}"}, "field job.model: not a string (5)"),
    ({"model": "ab" * 32, "data": None, "samples": 8, "recipe": "{}"}, "field job.data: not a string (None)"),
    ({"model": "ab" * 32, "data": "cd" * 32, "samples": "8", "recipe": "{}"},
     "field job.samples: not a sample count, a whole number of at least 1 or null for all ('8')"),
    ({"model": "ab" * 32, "data": "cd" * 32, "samples": True, "recipe": "{}"},
     "field job.samples: not a sample count, a whole number of at least 1 or null for all (True)"),
    ({"model": "ab" * 32, "data": "cd" * 32, "samples": 8.0, "recipe": "{}"},
     "field job.samples: not a sample count, a whole number of at least 1 or null for all (8.0)"),
    ({"model": "ab" * 32, "data": "cd" * 32, "recipe": "{}"},
     "field job.samples: not a sample count, a whole number of at least 1 or null for all ('missing')"),
])
def test_a_hand_edited_job_of_wrong_types_is_refused_in_one_line(job, said):
    """A job that is not an object was ignored (the file matched by its measured recipe, as one written before
    the job was recorded); a samples of "8" was refused as "its calibration samples differ (8 there, 8 here)"."""
    doc = {"rows": [], "all_quant_db": 29.5, "samples": 4, "tasks": 3, "recipe": "{}", "job": job}
    with pytest.raises(DataError) as err:
        api.load_sweep(doc, "s.json")
    assert err.value.message == f"s.json: {said}; the sweep's job cannot be read."


def test_report_refuses_a_sweep_file_whose_job_was_edited_by_hand(swept, tmp_path, capsys):
    common, sweep = swept
    doc = json.loads(sweep.read_text())
    sweep.write_text(json.dumps({**doc, "job": {**doc["job"], "samples": "8"}}))
    capsys.readouterr()
    out = tmp_path / "r.html"
    assert main(["report", *common, "--eval-samples", "4", "--sweep-json", str(sweep), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {sweep}: field job.samples: not a sample count, a whole number of at least 1 or "
                          "null for all ('8'); the sweep's job cannot be read. Run `workbench-cli sweep --json FILE`")
    assert len(err.splitlines()) == 1 and not out.exists()
