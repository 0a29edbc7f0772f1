"""The Pareto front of autotune's measured points: task metric (higher is better) against weight bytes and
latency (lower is better).

The latency is the point's measured one (``latency``: its model / the float model in onnxruntime,
``autotune(latency=True)``). Points without it use BOPs (``sum(MACs * b_weight * b_activation)``,
:mod:`workbench.core.analysis.cost`) instead, which rank 8-bit, 16-bit and float units the way integer
kernels cost them but miss what onnxruntime adds around them (Q/DQ transitions, layout changes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Costed(Protocol):
    metric: float
    weight_bytes: int | None
    bops: int | None


def front_cost(p: Costed) -> float | None:
    """The front's cost axis besides weight bytes: the measured latency ratio (quantized / float) when the
    point has one, else its BOPs; None when neither is known."""
    latency = getattr(p, "latency", None)
    return latency if latency is not None else p.bops


def _key(p: Costed) -> tuple[float, float, float]:
    m = p.metric if p.metric == p.metric else float("-inf")
    inf = float("inf")
    cost = front_cost(p)
    return (-m, inf if p.weight_bytes is None else p.weight_bytes, inf if cost is None else cost)


def dominates(a: Costed, b: Costed) -> bool:
    """``a`` is at least as good as ``b`` on metric, weight bytes and latency (BOPs without a measured
    latency), and better on one."""
    ka, kb = _key(a), _key(b)
    return all(x <= y for x, y in zip(ka, kb, strict=True)) and ka != kb


def pareto_indices(points: Sequence[Costed]) -> list[int]:
    """Indices of the points no other point dominates (the first of equal points only), in
    order of weight bytes, then latency (or BOPs), then metric (best first)."""
    keep = []
    for i, p in enumerate(points):
        if any(dominates(q, p) for q in points):
            continue
        if any(_key(points[j]) == _key(p) for j in keep):
            continue
        keep.append(i)
    return sorted(keep, key=lambda i: (_key(points[i])[1], _key(points[i])[2], _key(points[i])[0]))
