"""The entropy observer keeps the full range until it has enough values per quantization level."""

import numpy as np

from workbench.core.calibration.observers import make_observer
from workbench.core.calibration.observers.entropy import MIN_PER_LEVEL
from workbench.core.recipe.spec import QuantSpec


def _heavy_tailed(n, seed=0):
    x = np.random.default_rng(seed).standard_t(df=2, size=n).astype(np.float32)
    return np.abs(x)  # non-negative: uint8 asymmetric has 255 levels


def test_sparse_histogram_keeps_full_range():
    spec = QuantSpec(dtype="uint8", symmetric=False, observer="entropy")
    obs = make_observer(spec)
    x = _heavy_tailed(MIN_PER_LEVEL * 255 - 10)
    obs.update(x)
    rmin, rmax = obs.compute_range()
    assert float(rmin) == float(x.min()) and float(rmax) == float(x.max())


def test_enough_data_clips_the_tail():
    spec = QuantSpec(dtype="uint8", symmetric=False, observer="entropy")
    obs = make_observer(spec)
    x = _heavy_tailed(200_000, seed=1)
    obs.update(x)
    _, rmax = obs.compute_range()
    assert float(rmax) < 0.5 * float(x.max())
