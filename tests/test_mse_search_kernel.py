"""The MSE observer's range search with the compiled squared errors (observers/_llvm.py grid_sq_errors) gives the
bits of numpy's int_squared_error, so the same errors and the same clip ranges."""

from __future__ import annotations

import llvmlite  # noqa: F401 - a dependency: missing it is an error, not a skip
import numpy as np
import pytest

from workbench.core.calibration.observers import kernels, make_observer, mse
from workbench.core.calibration.observers.base import Observer
from workbench.core.formats.numerics import int_squared_error
from workbench.core.formats.qtypes import get_qtype
from workbench.core.recipe.spec import QuantSpec


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16"])
def test_grid_sq_errors_are_the_bits_of_int_squared_error(dtype):
    """Random points (zeros, values far beyond the grid, quotients beyond float32 that saturate) on random
    grids: every float64 error is bit-equal to numpy's."""
    qt = get_qtype(dtype)
    loops = kernels.get()
    assert loops is not None
    rng = np.random.default_rng(14)
    for _ in range(25):
        p, k = int(rng.integers(1, 2500)), int(rng.integers(1, 70))
        x = (rng.standard_t(3, p) * rng.choice([1e-4, 1.0, 1e4, 1e32])).astype(np.float32)
        x[rng.random(p) < 0.05] = 0.0
        scale = (np.abs(rng.standard_normal(k)) * rng.choice([1e-7, 1e-2, 1.0, 1e3])).astype(np.float32) + np.float32(1e-30)
        zero_point = rng.integers(qt.qmin, qt.qmax + 1, k).astype(np.float32)
        want = int_squared_error(x[None, :], scale[:, None], zero_point[:, None], qt)
        got = loops.grid_sq_errors(x, scale, zero_point, qt.qmin, qt.qmax)
        assert got.dtype == np.float64 and got.shape == (k, p)
        np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def _batches(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    heavy = rng.standard_t(2, 30000).astype(np.float32)  # tails the search clips
    skewed = (rng.exponential(1.0, 30000) - 0.2).astype(np.float32)  # asymmetric around zero
    relu = np.maximum(rng.standard_normal(30000), 0).astype(np.float32) * 3
    return [heavy, skewed, relu, heavy[:500] * 40]


@pytest.mark.parametrize(("spec", "clips"), [(dict(dtype="uint8", symmetric=False), True),
                                             (dict(dtype="int8", symmetric=True), False),
                                             (dict(dtype="uint16", symmetric=False), False),
                                             (dict(dtype="int8", symmetric=False), True)])
def test_mse_range_search_is_the_same_with_the_compiled_errors(spec, clips, monkeypatch):
    """The same histograms searched with numpy's errors and with the compiled ones: identical float32 clip ranges
    (and the compiled loop is the one used when the kernels are loaded). ``clips``: the 8-bit asymmetric searches
    clip both tails of these heavy-tailed values (the search did choose, not just take min / max)."""
    assert kernels.get() is not None
    calls = []
    real = kernels.loaded()
    monkeypatch.setattr(real, "grid_sq_errors", lambda *a, f=real.grid_sq_errors: calls.append(1) or f(*a))
    observed = make_observer(QuantSpec(observer="mse", **spec), name="t")
    data = _batches(3)
    for b in data:
        observed.update(b)
    state = observed.state()
    ranges = {}
    for use in ("numpy", "compiled"):
        monkeypatch.setattr(kernels, "_impl", real if use == "compiled" else None)
        ranges[use] = Observer.from_state(state).compute_range()
        assert bool(calls) == (use == "compiled")
    (lo_n, hi_n), (lo_c, hi_c) = ranges["numpy"], ranges["compiled"]
    assert lo_n.dtype == lo_c.dtype == np.float32
    assert lo_n.tobytes() == lo_c.tobytes() and hi_n.tobytes() == hi_c.tobytes()
    values = np.concatenate(data)
    if clips:
        assert float(values.min()) < float(lo_c) and float(hi_c) < float(values.max())


def test_int_errors_without_the_kernels_use_numpy(monkeypatch):
    """With the compiled loops not loaded, the weighted errors are numpy's (``int_squared_error`` then the product)."""
    monkeypatch.setattr(kernels, "_impl", None)
    qt = get_qtype("uint8")
    pts = np.linspace(-3, 5, 64, dtype=np.float32)
    wts = np.arange(64, dtype=np.float64)
    scale = np.array([0.01, 0.03, 0.1], np.float32)
    zp = np.array([128, 100, 30], np.uint8)
    want = int_squared_error(pts[None, :], scale[:, None], zp.astype(np.float32)[:, None], qt) @ wts
    np.testing.assert_array_equal(mse._int_errors(pts, wts, scale, zp, qt), want)
