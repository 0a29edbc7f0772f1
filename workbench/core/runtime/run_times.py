"""One model's figures from its timed runs: a low percentile of the wall-clock seconds and of the plausible
thread CPU seconds (:mod:`workbench.core.runtime.latency` times the runs).

The fastest single reading used to decide: one broken reading could then decide alone (digits_cnn at a load
average of 2.9 on 2 cores: the float model's fastest thread CPU time was 0.010 ms, half its fastest wall time,
and the ratio read 1.83x where the wall clock said 0.90x). So:

- a thread CPU reading is dropped when it cannot be right: not a positive finite number, or above its run's wall
  time by more than the cost of reading the thread clock (:data:`CPU_OVER_WALL_S`; one thread cannot use more
  CPU than the time that passed);
- of the rest, the runs whose CPU time is at least :data:`MIN_CPU_OF_WALL` of their wall time (the thread ran
  for most of the run) are used when there are at least :data:`MIN_READINGS` of them; a run below that was
  descheduled for most of it or its reading is broken. On a machine so loaded that fewer runs went mostly
  uninterrupted, every plausible reading is used (thread CPU time leaves the waiting out);
- when under half of the runs have a plausible CPU reading, the CPU figures are 0.0 (not recorded): the
  wall clock decides instead;
- the figure is the :data:`LOW_PERCENTILE` th percentile of the readings kept (an order statistic, never the
  single fastest of two or more), so that one reading too low cannot decide.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: A run whose thread CPU time is below this fraction of its wall time was descheduled for most of it (or its
#: reading is broken).
MIN_CPU_OF_WALL = 0.5
#: Thread CPU time may exceed the run's wall time by this many seconds (the thread clock is read around the
#: wall clock: about 0.7 us a read on x86_64 Linux) plus :data:`CPU_OVER_WALL_FRACTION` of the wall time.
CPU_OVER_WALL_S = 5e-6
CPU_OVER_WALL_FRACTION = 0.01
#: The percentile of a model's readings that stands for its latency.
LOW_PERCENTILE = 5
#: Fewest mostly-uninterrupted runs used on their own.
MIN_READINGS = 3


def low(values: Sequence[float]) -> float:
    """The :data:`LOW_PERCENTILE` th percentile of ``values`` (seconds) as an order statistic: the value at index
    ``max(1, n * LOW_PERCENTILE // 100)`` of the sorted values (the second fastest of 2-39 values), the only
    value of one; 0.0 of none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(1, len(ordered) * LOW_PERCENTILE // 100))]


def median(values: Sequence[float]) -> float:
    """The median of ``values`` (seconds); 0.0 of none."""
    if not values:
        return 0.0
    ordered, mid = sorted(values), len(values) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _positive(x: float) -> bool:
    return math.isfinite(x) and x > 0


def wall_figures(wall: Sequence[float]) -> tuple[float, float]:
    """(:func:`low`, :func:`median`) of the positive finite wall-clock seconds in ``wall``; (0.0, 0.0) when there
    is none."""
    kept = [w for w in wall if _positive(w)]
    return low(kept), median(kept)


def plausible_cpu(wall: Sequence[float], cpu: Sequence[float]) -> list[float]:
    """The thread CPU seconds of ``cpu`` (one per run, as ``wall``) that can be believed, see the module
    docstring; [] when under half of the runs have a plausible reading (the wall clock decides then)."""
    valid = [(w, c) for w, c in zip(wall, cpu, strict=True)
             if _positive(w) and _positive(c) and c <= w * (1 + CPU_OVER_WALL_FRACTION) + CPU_OVER_WALL_S]
    if 2 * len(valid) < len(cpu) or not valid:
        return []
    steady = [c for w, c in valid if c >= MIN_CPU_OF_WALL * w]
    return steady if len(steady) >= MIN_READINGS else [c for _, c in valid]


def cpu_figures(wall: Sequence[float], cpu: Sequence[float]) -> tuple[float, float]:
    """(:func:`low`, :func:`median`) of :func:`plausible_cpu`; (0.0, 0.0) when the CPU readings are not
    believable (the wall clock decides then)."""
    kept = plausible_cpu(wall, cpu)
    return low(kept), median(kept)
