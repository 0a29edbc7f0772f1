"""A histogram observer's copy with its own spec is made without the state round trip, and is that round trip:
the same state, the same range, and as independent of its source."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.core.calibration.observers import make_observer
from workbench.core.calibration.observers.base import Observer
from workbench.core.recipe.spec import QuantSpec


def _batches(seed: int, per_channel: bool) -> list[np.ndarray]:
    """A first batch that sets the lattice, small ones that wait in the buffer, one that grows the range."""
    rng = np.random.default_rng(seed)
    shape = (2, 3, 5, 5) if per_channel else (2, 40)
    out = [rng.standard_t(3, shape).astype(np.float32) for _ in range(4)]
    out.append((rng.standard_t(3, shape) * 30).astype(np.float32))
    out.append(rng.standard_normal((1, *shape[1:])).astype(np.float32))  # left in the buffer at the copy
    return out


@pytest.mark.parametrize("observer", ["mse", "percentile", "entropy"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_copy_is_the_state_round_trip(observer, per_channel, monkeypatch):
    kw = dict(granularity="per_channel", axis=1) if per_channel else {}
    spec = QuantSpec(observer=observer, dtype="uint8", symmetric=False, **kw)
    obs = make_observer(spec, axis=1 if per_channel else None, name="t")
    for b in _batches(5, per_channel):
        obs.update(b)
    obs.compute_range()  # a range searched already is kept by the copy
    trip = Observer.from_state(obs.state())
    trip._keep_derived(obs)
    monkeypatch.setattr(Observer, "from_state", classmethod(lambda cls, d: pytest.fail("copied through the state")))
    twin = obs.copy(QuantSpec(observer=observer, dtype="uint8", symmetric=False, **kw))  # equal spec, another object
    monkeypatch.undo()
    assert type(twin) is type(obs) and twin.spec == obs.spec
    assert twin.state() == trip.state() == obs.state()
    for a, b in zip(twin.compute_range(), trip.compute_range(), strict=True):
        assert a.dtype == b.dtype == np.float32 and a.tobytes() == b.tobytes()
    assert twin._range is obs._range
    for h, g, src in zip(twin.hists, trip.hists, obs.hists, strict=True):
        assert (h.lo, h.width, h.origin, h.first, h.vmin, h.vmax, h._top, h._fast) == \
               (g.lo, g.width, g.origin, g.first, g.vmin, g.vmax, g._top, g._fast)
        assert h.counts.dtype == np.int64 and h.counts is not src.counts
    before = obs.state()
    more = (np.random.default_rng(9).standard_t(3, _batches(5, per_channel)[0].shape) * 80).astype(np.float32)
    twin.update(more)
    trip.update(more)
    assert obs.state() == before  # the source is untouched by the copy's updates
    assert twin.state() == trip.state()
    for a, b in zip(twin.compute_range(), trip.compute_range(), strict=True):
        assert a.tobytes() == b.tobytes()


def test_copy_with_another_spec_still_goes_through_the_state():
    obs = make_observer(QuantSpec(observer="mse", dtype="uint8", symmetric=False), name="t")
    obs.update(np.random.default_rng(1).standard_normal(500).astype(np.float32))
    other = obs.copy(QuantSpec(observer="mse", dtype="uint16", symmetric=False))
    assert other.spec.dtype == "uint16" and other.state()["data"] == obs.state()["data"]
