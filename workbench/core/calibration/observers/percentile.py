"""Percentile observer: clip the range at a percentile of the calibration data.

``observer_args["percentile"]`` (default 99.999). Symmetric specs clip ``|x|`` at the
percentile (the range is ``[-t, t]`` intersected with the data range); asymmetric specs take the
``100 - p`` and ``p`` percentiles of ``x`` as ``rmin`` and ``rmax`` (onnxruntime's
``PercentileCalibrater`` uses the same |x| rule for symmetric ranges; Wu et al. 2020, "Integer
Quantization for Deep Learning Inference: Principles and Empirical Evaluation", section 4.2,
evaluates 99.9 - 99.9999 percentile calibration). Percentiles come from the streaming histogram with linear
interpolation inside a bin, so they are within one bin width of ``numpy.percentile``.
"""

from __future__ import annotations

from workbench.core.calibration.observers.histogram import HistogramObserver, StreamingHistogram
from workbench.core.errors import RecipeError
from workbench.core.recipe.spec import DEFAULT_PERCENTILE, PERCENTILE_RANGE


class PercentileObserver(HistogramObserver):
    """Percentile clipping over a streaming histogram (see module docstring)."""

    name = "percentile"

    def __init__(self, spec, *, axis=None, name="tensor"):
        super().__init__(spec, axis=axis, name=name)
        self.percentile = float(spec.observer_args.get("percentile", DEFAULT_PERCENTILE))
        lo, hi = PERCENTILE_RANGE
        if not lo < self.percentile <= hi:
            raise RecipeError(f"{name}: percentile {self.percentile} is out of range.",
                              hint=f"Use a percentile in ({lo:g}, {hi:g}], e.g. {DEFAULT_PERCENTILE:g}.")

    def _range_from(self, h: StreamingHistogram) -> tuple[float, float]:
        q = self.percentile / 100.0
        if self.spec.symmetric:
            t = h.abs_quantile(q)
            return max(h.vmin, -t), min(h.vmax, t)
        return h.quantile(1.0 - q), h.quantile(q)
