"""Keep units in float whose tensors carry sentinel values an integer grid cannot hold.

Attention masks are often built as ``(1 - mask) * finfo(float32).min`` (or -1e9) and added to the
scores before Softmax. A calibrated range that includes such values gives a uint8 scale around
1e36: every real score then rounds to the same level and attention is destroyed (this is what
takes all-MiniLM-L6-v2 from 1.00 to 0.75 retrieval under onnxruntime's default recipe). A unit
that produces or consumes a tensor whose calibrated range reaches ``SENTINEL_ABS`` is therefore
left in float and reported; the rest of the model is quantized as planned.

The same holds for a Concat whose inputs live on very different scales (a detector head joining
box coordinates in 0..640 with sigmoid scores in 0..1): one output grid for both rounds every
score to 0 or one step. Such a Concat (input range ratio >= ``CONCAT_RATIO``) is kept in float.
"""

from __future__ import annotations

import numpy as np

from workbench.core.formats.numerics import qrange
from workbench.core.formats.qparams import QParams

#: |value| from which a calibrated range is treated as holding sentinel values (masks, "-inf").
SENTINEL_ABS = 1e8
#: Largest / smallest input range of a Concat from which it is kept in float (2**5: the small
#: input would keep fewer than 3 of its 8 bits on a shared grid).
CONCAT_RATIO = 32.0


def range_absmax(qp: QParams) -> float:
    """Largest |real value| the quantization grid of ``qp`` spans."""
    qmin, qmax = qrange(qp.qtype)
    zp = qp.zero_point.astype(np.float64)
    scale = qp.scale.astype(np.float64)
    return float(np.max(np.maximum(np.abs((qmin - zp) * scale), np.abs((qmax - zp) * scale))))


def sentinel_units(plan, qparams: dict[str, QParams], threshold: float = SENTINEL_ABS,
                   masks: dict[str, float] | None = None) -> dict[str, tuple[str, float]]:
    """Units touching a tensor whose range reaches ``threshold``: node -> (tensor, absmax).

    ``masks`` (tensor -> |value|, from :func:`~workbench.core.planning.stats_guard.masking_values`)
    adds the tensors the graph computes from a huge constant, whatever their calibrated range:
    calibration data without padding never reaches the mask value, but other inputs will.
    """
    huge = {t: range_absmax(qp) for t, qp in qparams.items()}
    for t, v in (masks or {}).items():
        huge[t] = max(huge.get(t, 0.0), v)
    huge = {t: v for t, v in huge.items() if v >= threshold}
    found: dict[str, tuple[str, float]] = {}
    for name, unit in plan.units.items():
        if getattr(unit, "excluded", False):
            continue
        for t in list(unit.inputs) + list(unit.outputs):
            root = plan.aliases.get(t, t) if hasattr(plan, "aliases") else t
            if root in huge:
                found[name] = (root, huge[root])
                break
    return found


def _root(plan, t: str) -> str:
    aliases = getattr(plan, "aliases", {})
    seen = set()
    while t in aliases and t not in seen:
        seen.add(t)
        t = aliases[t]
    return t


def disparate_concats(plan, qparams: dict[str, QParams], ratio: float = CONCAT_RATIO) -> dict[str, tuple[str, float]]:
    """Concat units whose inputs' ranges differ by ``ratio`` or more: node -> (smallest input, ratio)."""
    found: dict[str, tuple[str, float]] = {}
    for name, unit in plan.units.items():
        if unit.op_type != "Concat" or getattr(unit, "excluded", False) or len(unit.inputs) < 2:
            continue
        spans = {}
        for t in unit.inputs:
            # a shared input (plan.shared) is calibrated itself: its own range, not the output's grid
            root = t if t in qparams else _root(plan, t)
            if root in qparams:
                spans[t] = range_absmax(qparams[root])
        if len(spans) < 2:
            continue
        small = min(spans, key=spans.get)
        r = max(spans.values()) / max(spans[small], 1e-30)
        if r >= ratio:
            found[name] = (small, r)
    return found
