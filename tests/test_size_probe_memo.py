"""The size probe runs the float model once per model, data and candidate set: the recipe choice quantizes
its ``preset`` and ``mse`` variants with the same guards, and each ran the float model at two sizes (two
runs of nudenet_320n at 320x320 and 640x640 in one choice; 0.3-0.35 s of CPU each)."""

from __future__ import annotations

import numpy as np
from test_size_guard import _grid_model

from workbench.core import api
from workbench.core.model.load import prepare_proto
from workbench.core.pipeline import size_probe
from workbench.core.recipe.recipe import Recipe


def _counting(monkeypatch) -> list[list[str]]:
    """Record the candidates of every run of the float model by the probe."""
    runs: list[list[str]] = []
    probe = size_probe._probe

    def counted(model, data, tensors):
        runs.append(list(tensors))
        return probe(model, data, tensors)

    monkeypatch.setattr(size_probe, "_probe", counted)
    return runs


def _data(tmp_path, name="calib.npz") -> str:
    path = tmp_path / name
    np.savez(path, X=np.random.default_rng(1).standard_normal((8, 3, 8, 8)).astype(np.float32))
    return str(path)


def test_the_choice_probes_once(monkeypatch, tmp_path):
    runs = _counting(monkeypatch)
    model = prepare_proto(_grid_model("H", "W"))
    report = api.choose_recipe(model, Recipe(preset="cpu-u8s8"), _data(tmp_path))
    assert report.skipped is None and set(report.scores) == {"preset", "mse", "compute+mse"}
    # preset and mse both quantize the grid's 3 units and probe them; compute+mse quantizes the Conv only
    assert len(runs) == 1
    # the choice's answer is the probe's: the grid units stay float in what it writes
    res = api.quantize(model, report.recipe, data=_data(tmp_path), calibration=report.calibration)
    assert sorted(n for n, u in res.plan.units.items() if not u.excluded) == ["conv"]


def test_a_kept_answer_is_the_probes_own(tmp_path):
    model = prepare_proto(_grid_model("H", "W"))
    data, memo = _data(tmp_path), {}
    tensors = ["cols", "grid", "c_term"]
    first = size_probe.changing_with_size(model, data, tensors, memo=memo)
    assert first == ["cols", "grid"]  # c_term reads the static channel count
    assert size_probe.changing_with_size(model, data, tensors, memo=memo) == first
    assert size_probe.changing_with_size(model, data, tensors) == first


def test_other_data_or_tensors_run_again(monkeypatch, tmp_path):
    runs = _counting(monkeypatch)
    model = prepare_proto(_grid_model("H", "W"))
    data, memo = _data(tmp_path), {}
    size_probe.changing_with_size(model, data, ["grid"], memo=memo)
    size_probe.changing_with_size(model, data, ["grid"], memo=memo)
    assert len(runs) == 1
    size_probe.changing_with_size(model, "".join(data), ["grid"], memo=memo)  # an equal path: another object
    size_probe.changing_with_size(model, data, ["grid", "cols"], memo=memo)
    size_probe.changing_with_size(model, None, ["grid"], memo=memo)  # a random sample is never kept
    size_probe.changing_with_size(model, None, ["grid"], memo=memo)
    assert len(runs) == 5
