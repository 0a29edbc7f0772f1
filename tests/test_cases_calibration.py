"""Failure cases 05 (NaN/Inf data), 11 (variable sequence length) and 12 (empty tensor) through
the calibration runner, against the expectations in shared/cases/README.md."""

from __future__ import annotations

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator

from workbench.core.api import make_recipe
from workbench.core.calibration.calibrate import calibrate
from workbench.core.data.loader import open_data
from workbench.core.formats.numerics import fake_quantize
from workbench.core.model.load import load_model
from workbench.core.planning.plan import build_plan
from workbench.core.recipe.spec import QuantSpec

OBSERVERS = ("minmax", "percentile", "entropy", "mse")


class Plan:
    def __init__(self, activations):
        self.activations = activations


def _open(cases, name):
    model = load_model(cases / f"{name}.onnx")
    return model, open_data(cases / f"{name}.npz", model)


def _plan(model, observer, extra=()):
    acts = dict(build_plan(model, make_recipe("cpu-u8s8")).activations)
    for t in extra:
        acts[t] = next(iter(acts.values()))
    return Plan({t: s.model_copy(update={"observer": observer}) for t, s in acts.items()})


def _reference(model, source, names):
    """Per-sample values of ``names`` from onnx.reference (the float model's real values)."""
    ref = ReferenceEvaluator(model.proto)
    out = []
    for feed in source.samples():
        vals = ref.run(None, feed, intermediate=True)
        vals.update(feed)
        out.append({t: np.asarray(vals[t]) for t in names})
    return out


def _all_finite_positive(qparams):
    return all(np.isfinite(q.scale).all() and (q.scale > 0).all() for q in qparams.values())


@pytest.mark.parametrize("observer", OBSERVERS)
def test_05_nan_inf_gives_nan_aware_ranges_and_names_tensor_and_sample(cases, observer):
    model, source = _open(cases, "05_nan_inf_calibration")
    plan = _plan(model, observer, extra=["C"])
    assert {"X", "Y", "C"} <= set(plan.activations)
    res = calibrate(model, plan, source)
    assert res.samples_seen == 6
    assert _all_finite_positive(res.qparams())
    rows = {(t, s): c for t, s, c in res.nonfinite}
    assert rows[("X", 2)] == 1 and rows[("X", 4)] == 1
    assert {s for _, s, _ in res.nonfinite} == {2, 4}  # C and Y inherit the NaN / Inf, same samples
    assert ("C", 2) in rows and ("C", 4) in rows
    text = " ".join(res.warnings)
    assert "input 'X' of the calibration data holds NaN/Inf: sample 2 (1), sample 4 (1)." in text
    assert "left out of the ranges of the 3 tensors they reach: " in text and all(f" {t}" in text for t in "XYC")
    if observer == "minmax":
        vals = _reference(model, source, ["X", "C"])
        for t in ("X", "C"):
            allv = np.concatenate([v[t].ravel() for v in vals])
            fin = allv[np.isfinite(allv)]
            rmin, rmax = res.observers[t].compute_range()
            assert float(rmin) == pytest.approx(fin.min(), rel=1e-5) and float(rmax) == pytest.approx(fin.max(), rel=1e-5)


@pytest.mark.parametrize("observer", OBSERVERS)
def test_11_variable_sequence_length_every_observer(cases, observer):
    model, source = _open(cases, "11_histogram_calib_variable_seq")
    plan = _plan(model, observer, extra=["M", "Y"])  # Y: the MatMul unit's output, a graph output kept float
    res = calibrate(model, plan, source)
    assert res.samples_seen == 4 and res.nonfinite == []
    vals = _reference(model, source, ["X", "M", "Y"])
    assert res.observers["Y"].count == sum(v["Y"].size for v in vals) == (5 + 7 + 9 + 12) * 8
    qps = res.qparams()
    assert _all_finite_positive(qps)
    for t in ("X", "M", "Y"):
        allv = np.concatenate([v[t].ravel() for v in vals])
        rmin, rmax = res.observers[t].compute_range()
        assert allv.min() - 1e-5 <= float(rmin) <= float(rmax) <= allv.max() + 1e-5
        if observer == "minmax":
            assert float(rmin) == pytest.approx(allv.min(), rel=1e-5)
            assert float(rmax) == pytest.approx(allv.max(), rel=1e-5)
    for v in vals:  # the calibrated grid reproduces Y within 5 % of its range on every sample
        y = v["Y"].astype(np.float32)
        err = np.abs(fake_quantize(y, qps["Y"]) - y).max() / np.abs(y).max()
        # entropy too: 264 values are too few for a KL threshold, so it keeps the full range
        assert err < 0.05, (observer, err)


def test_12_empty_tensor_is_skipped_with_finite_ranges(cases):
    model, source = _open(cases, "12_empty_tensor_calibration")
    acts = _plan(model, "minmax", extra=["E", "Y"]).activations  # Y: a graph output the plan keeps float
    for obs in OBSERVERS:  # every observer on the empty tensor and on its neighbours
        res = calibrate(model, Plan({t: QuantSpec(observer=obs) for t in acts}), source)
        assert res.empty == ["E"]
        assert res.observers["E"].count == 0 and res.nonfinite == []
        qps = res.qparams()
        assert _all_finite_positive(qps)
        assert float(qps["E"].scale) == 1.0
    vals = _reference(model, source, ["XC", "Y"])
    res = calibrate(model, Plan(acts), source)
    for t in ("XC", "Y"):
        allv = np.concatenate([v[t].ravel() for v in vals])
        rmin, rmax = res.observers[t].compute_range()
        assert float(rmin) == pytest.approx(allv.min(), rel=1e-5) and float(rmax) == pytest.approx(allv.max(), rel=1e-5)
    assert any("E: empty" in w for w in res.warnings)
