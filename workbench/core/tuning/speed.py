"""Whether autotune's pick runs faster than the float model, and a faster pick within the target if not.

A recipe can meet the metric target and still run no faster than float: onnxruntime runs 16-bit
activations as DequantizeLinear + a float kernel, so every unit at int16 (a16w8) costs float's time plus
its Q/DQ (ppocr_mobile_v2_cls: 9.38 ms against float's 9.63 ms, where the file `quantize` writes ran
3.98 ms). :func:`check_speed` measures the pick against float and, when it is not faster, the other
points on target (cheapest first) until one is; it never picks a point below the target.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.pipeline.latency_check import LOADED_DECISIVE, MIN_FLOAT_S, NOISE
from workbench.core.runtime.latency import LatencyComparison

#: A point is faster than float when its latency ratio (quantized / float, as printed: 2 decimals) is at
#: most this (beyond the noise of two measurements of one pair, :data:`NOISE`).
FASTER_THAN = round(1.0 / NOISE, 2)
#: Points on target measured besides the pick, at most, when the pick is not faster.
MAX_OTHERS = 4


@dataclass
class SpeedCheck:
    """The outcome of :func:`check_speed`.

    Attributes
    ----------
    pick : Any
        The point chosen (the one given, or a faster point on target).
    latency : LatencyComparison
        Its measurement against the float model.
    faster : bool
        Its ratio is at most :data:`FASTER_THAN`.
    tried : list of (point, LatencyComparison)
        Every point measured, the given pick first.
    small : bool
        The float model runs under :data:`MIN_FLOAT_S`: only the pick was timed (see :func:`check_speed`).
    """

    pick: Any
    latency: LatencyComparison
    faster: bool
    tried: list[tuple[Any, LatencyComparison]] = field(default_factory=list)
    small: bool = False


def is_faster(lat: LatencyComparison) -> bool:
    """The ratio as printed (2 decimals) is at most :data:`FASTER_THAN`."""
    return round(lat.ratio, 2) <= FASTER_THAN


def clearly_faster(lat: LatencyComparison) -> bool:
    """:func:`is_faster` from a reliable measurement, or, taken under load, by a clear margin (at most
    1 / :data:`~workbench.core.pipeline.latency_check.LOADED_DECISIVE`): a loaded machine's noise does not swap
    the pick for a costlier point."""
    return is_faster(lat) and (lat.reliable or round(lat.ratio, 2) <= round(1.0 / LOADED_DECISIVE, 2))


def check_speed(pick: Any, on_target: Sequence[Any], measure: Callable[[Any], LatencyComparison],
                max_others: int = MAX_OTHERS) -> SpeedCheck:
    """Measure ``pick`` (``measure(point)``: its model against float); when it is not faster, measure the
    points of ``on_target`` other than ``pick``, in their order, up to ``max_others``, and return the first
    faster one (:func:`clearly_faster`: under load only by a clear margin). A float model under :data:`MIN_FLOAT_S` per run (the digits models: the input Q and output
    DQ alone outweigh int8, so quantization does not pay at that size) is not searched: only ``pick`` is
    measured and reported (``small``)."""
    lat = measure(pick)
    tried = [(pick, lat)]
    if lat.timed_float_s < MIN_FLOAT_S:
        return SpeedCheck(pick, lat, is_faster(lat), tried, small=True)
    if is_faster(lat):
        return SpeedCheck(pick, lat, True, tried)
    for other in [p for p in on_target if p is not pick][:max_others]:
        other_lat = measure(other)
        tried.append((other, other_lat))
        if clearly_faster(other_lat):
            return SpeedCheck(other, other_lat, True, tried)
    return SpeedCheck(pick, lat, False, tried)
