"""calibrate_split(finish_first=True) hands back the first rows finished by the pass's own derivations: the same
observers as merge_shards of the unfinished first rows (what the recipe choice called), with the derived nodes'
onnxruntime session built once instead of twice for the same model bytes."""

from __future__ import annotations

import numpy as np
import pytest
from test_calibrate import TENSORS, _data, _model, _plan

from workbench.core.calibration.calibrate import calibrate_split, merge_shards
from workbench.core.calibration.observers import derived
from workbench.core.data.loader import open_data
from workbench.core.model.load import prepare_proto


def _same(a, b, timed=False):
    assert set(a.observers) == set(b.observers)
    for t, obs in a.observers.items():
        assert obs.state() == b.observers[t].state(), t
        qa, qb = obs.qparams(), b.observers[t].qparams()
        assert np.asarray(qa.scale).tobytes() == np.asarray(qb.scale).tobytes(), t
        assert np.asarray(qa.zero_point).tobytes() == np.asarray(qb.zero_point).tobytes(), t
    assert (a.samples_seen, a.nonfinite, a.empty, a.reused, a.batch_size, a.data_nonfinite) == \
        (b.samples_seen, b.nonfinite, b.empty, b.reused, b.batch_size, b.data_nonfinite)
    assert timed or a.seconds == b.seconds  # a pass's own wall time differs between two passes


@pytest.mark.parametrize("observer", ["minmax", "mse"])
@pytest.mark.parametrize("fetched", [frozenset(), frozenset({"R"})])
def test_first_rows_finished_by_the_pass_equal_merge_shards(tmp_path, observer, fetched, monkeypatch):
    model = prepare_proto(_model())
    path, x = _data(tmp_path, n=10)
    plan = _plan(observer)
    x[3, 0, 0, 0] = np.nan  # a non-finite row before the split: counted for C and, derived, for R
    np.savez(path, X=x)
    builds = []
    real = derived.Deriver._build
    monkeypatch.setattr(derived.Deriver, "_build", lambda self, proto: builds.append(1) or real(self, proto))

    first, full = calibrate_split(model, plan, open_data(path, model), at=7, fetched=fetched, finish_first=True)
    derives = 0 if fetched else 1  # R = Relu(C) is derived from C's observer unless it is fetched
    assert len(builds) == derives
    part, full_before = calibrate_split(model, plan, open_data(path, model), at=7, fetched=fetched)
    merged = merge_shards(model, plan, [(0, part)], fetched=fetched, warn=False)
    assert len(builds) == 3 * derives  # the pass, then merge_shards on the same model again
    _same(first, merged)
    _same(full, full_before, timed=True)
    # real values: rows 0..6 only; R's range is Relu of C's, whether derived or fetched
    # the NaN at X[3, 0, 0, 0] reaches C at one position of its 4 channels, R = Relu(C) there (derived or
    # fetched), and every one of M's and Y's 5 values through the Flatten + MatMul
    assert first.samples_seen == 7
    assert sorted(first.nonfinite) == [("C", 3, 4), ("M", 3, 5), ("R", 3, 4), ("X", 3, 1), ("Y", 3, 5)]
    lo, hi = (float(v) for v in first.observers["X"].compute_range())
    seen = x[:7][np.isfinite(x[:7])]
    if observer == "minmax":
        assert (lo, hi) == (float(seen.min()), float(seen.max()))
        c_lo, c_hi = (float(v) for v in first.observers["C"].compute_range())
        assert [float(v) for v in first.observers["R"].compute_range()] == [max(c_lo, 0.0), c_hi]
    for t in TENSORS:
        assert first.observers[t].count > 0, t
