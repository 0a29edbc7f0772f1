"""A calibration too small to win back the loading of the compiled observer loops keeps to numpy."""

from __future__ import annotations

import json

import pytest

from workbench.core import api
from workbench.core.calibration.observers import kernels

PERCENTILE = json.dumps({"preset": "cpu-u8s8", "rules": [{"name": "*", "activation": {"observer": "percentile"}}]})


@pytest.mark.parametrize(("min_values", "loads"), [(400_000_000, False), (0, True)])
def test_kernels_load_only_for_a_job_that_bins_enough_values(corpus, monkeypatch, min_values, loads):
    folder = corpus / "ppocrv4_rec"  # 4 rows: about 2e7 values binned, 1e5 per tensor (the loops start at 32k)
    model = api.open_model(folder / "model.onnx")
    plan = api.plan(model, api.Recipe.from_json(PERCENTILE))
    attempts: list[str] = []

    def blocked():
        attempts.append("loops")
        raise ImportError("not loaded in this test")

    monkeypatch.setattr(kernels, "_impl", None)
    monkeypatch.setattr(kernels, "ENABLED", None)
    monkeypatch.setattr(kernels, "_load", blocked)
    monkeypatch.setattr(kernels, "MIN_JOB_VALUES", min_values)
    cal = api.calibrate(model, plan, folder / "calib.npz", samples=4)
    assert attempts == (["loops"] if loads else [])
    assert len(cal.qparams()) == len(plan.activations)
    assert kernels.get() is None if loads else kernels._MAY_LOAD.get()  # the gate ends with the calibration
