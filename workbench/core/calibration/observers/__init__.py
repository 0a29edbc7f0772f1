"""Streaming calibration observers, keyed by name.

``make_observer(spec, axis=...)`` builds the observer ``spec.observer`` names:

========== =========================================================== ===========================
name       range                                                       granularity
========== =========================================================== ===========================
minmax     running min / max (optional moving average)                 tensor, channel, block
percentile ``observer_args["percentile"]`` (default 99.999) of x or |x| tensor, channel
entropy    KL-divergence threshold (Migacz 2017, TensorRT)             tensor, channel
mse        clip range with the least quantization MSE                  tensor, channel
========== =========================================================== ===========================

Every observer keeps a fixed-size state (histogram observers: ``observer_args["bins"]``,
default 2048), skips empty batches, counts NaN/Inf in ``nonfinite`` and leaves them out, and
round-trips through ``state()`` / ``Observer.from_state()`` as plain JSON.
"""

from __future__ import annotations

from workbench.core.calibration.observers.base import Observer
from workbench.core.calibration.observers.entropy import EntropyObserver
from workbench.core.calibration.observers.histogram import HistogramObserver, StreamingHistogram
from workbench.core.calibration.observers.minmax import MinMaxObserver
from workbench.core.calibration.observers.mse import MseObserver
from workbench.core.calibration.observers.percentile import PercentileObserver
from workbench.core.errors import RecipeError
from workbench.core.recipe.spec import QuantSpec

OBSERVERS: dict[str, type[Observer]] = {
    cls.name: cls for cls in (MinMaxObserver, PercentileObserver, EntropyObserver, MseObserver)
}


def make_observer(spec: QuantSpec, *, axis: int | None = None, name: str = "tensor") -> Observer:
    """New observer for one tensor.

    Parameters
    ----------
    spec : QuantSpec
        ``spec.observer`` picks the class; dtype / symmetric / reduce_range / power_of_two /
        granularity / block_size / observer_args configure it.
    axis : int or None
        Channel or block axis (overrides ``spec.axis``); required for per_channel / per_block.
    name : str
        Tensor name for error messages and the saved state.

    Raises
    ------
    RecipeError
        Unknown observer, an unsupported granularity for it, or a missing axis.
    """
    try:
        cls = OBSERVERS[spec.observer]
    except KeyError:
        raise RecipeError(f"{name}: unknown observer {spec.observer!r}.",
                          hint=f"Use one of: {', '.join(OBSERVERS)}.") from None
    return cls(spec, axis=axis, name=name)


__all__ = ["OBSERVERS", "EntropyObserver", "HistogramObserver", "MinMaxObserver", "MseObserver",
           "Observer", "PercentileObserver", "StreamingHistogram", "make_observer"]
