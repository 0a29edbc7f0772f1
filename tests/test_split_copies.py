"""calibrate_split's snapshot of the first rows and merge_shards copy observers with Observer.copy, not through
their JSON state: the same states, qparams and independence as the state round trip."""

from __future__ import annotations

import numpy as np
import pytest
from test_calibrate import TENSORS, _data, _model, _plan

from workbench.core.calibration.calibrate import calibrate_split, merge_shards
from workbench.core.calibration.observers.base import Observer
from workbench.core.calibration.observers.histogram import HistogramObserver
from workbench.core.data.loader import open_data
from workbench.core.model.load import prepare_proto


def _round_trip(self, spec=None):
    twin = Observer.from_state(self.state())
    twin._keep_derived(self)
    return twin


@pytest.mark.parametrize("observer", ["minmax", "mse", "percentile"])
def test_split_and_merge_equal_the_state_round_trip(tmp_path, observer, monkeypatch):
    model = prepare_proto(_model())
    path, _ = _data(tmp_path, n=10)
    plan = _plan(observer)
    results = []
    for copy in (None, _round_trip):  # as now, then as before (every copy through the state)
        if copy is not None:
            monkeypatch.setattr(HistogramObserver, "copy", copy)
        first, full = calibrate_split(model, plan, open_data(path, model), at=7)
        results.append((first, merge_shards(model, plan, [(0, first)]), full))
    monkeypatch.undo()
    for now, before in zip(results[0], results[1], strict=True):
        assert set(now.observers) == set(before.observers)
        for t, obs in now.observers.items():
            assert obs.state() == before.observers[t].state(), t
    for t in TENSORS:
        a, b = results[0][1].observers[t].qparams(), results[1][1].observers[t].qparams()
        assert np.asarray(a.scale).tobytes() == np.asarray(b.scale).tobytes() and \
               np.asarray(a.zero_point).tobytes() == np.asarray(b.zero_point).tobytes(), t


def test_histograms_are_not_copied_through_their_state_and_stay_independent(tmp_path, monkeypatch):
    model = prepare_proto(_model())
    path, x = _data(tmp_path, n=10)
    plan = _plan("mse")
    real = Observer.from_state.__func__

    def from_state(cls, d):
        assert d["observer"] == "minmax", f"{d['tensor']} copied through its state"
        return real(cls, d)

    monkeypatch.setattr(Observer, "from_state", classmethod(from_state))
    first, _ = calibrate_split(model, plan, open_data(path, model), at=7)
    before = {t: o.state() for t, o in first.observers.items()}
    merged = merge_shards(model, plan, [(0, first)])
    for t in TENSORS:
        merged.observers[t].update(x[:3] * 50)
    assert {t: o.state() for t, o in first.observers.items()} == before  # the shard is untouched
