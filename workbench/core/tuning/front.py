"""The Pareto front of autotune's measured points: task metric (higher is better) against weight bytes and
bit operations (lower is better).

BOPs (``sum(MACs * b_weight * b_activation)``, :mod:`workbench.core.analysis.cost`) stand in for latency:
the core has no latency figure of a plan yet, and BOPs at least rank 8-bit, 16-bit and float units
the way integer kernels cost them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Costed(Protocol):
    metric: float
    weight_bytes: int | None
    bops: int | None


def _key(p: Costed) -> tuple[float, float, float]:
    m = p.metric if p.metric == p.metric else float("-inf")
    inf = float("inf")
    return (-m, inf if p.weight_bytes is None else p.weight_bytes, inf if p.bops is None else p.bops)


def dominates(a: Costed, b: Costed) -> bool:
    """``a`` is at least as good as ``b`` on metric, weight bytes and BOPs, and better on one."""
    ka, kb = _key(a), _key(b)
    return all(x <= y for x, y in zip(ka, kb, strict=True)) and ka != kb


def pareto_indices(points: Sequence[Costed]) -> list[int]:
    """Indices of the points no other point dominates (the first of equal points only), in
    order of weight bytes, then BOPs, then metric (best first)."""
    keep = []
    for i, p in enumerate(points):
        if any(dominates(q, p) for q in points):
            continue
        if any(_key(points[j]) == _key(p) for j in keep):
            continue
        keep.append(i)
    return sorted(keep, key=lambda i: (_key(points[i])[1], _key(points[i])[2], _key(points[i])[0]))
