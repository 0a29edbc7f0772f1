"""Keep units in float whose tensors carry sentinel values an integer grid cannot hold.

Attention masks are often built as ``(1 - mask) * finfo(float32).min`` (or -1e9) and added to the
scores before Softmax. A calibrated range that includes such values gives a uint8 scale around
1e36: every real score then rounds to the same level and attention is destroyed (this is what
takes all-MiniLM-L6-v2 from 1.00 to 0.75 retrieval under onnxruntime's default recipe). A unit
that produces or consumes a tensor whose calibrated range reaches ``SENTINEL_ABS`` is therefore
left in float and reported; the rest of the model is quantized as planned.
"""

from __future__ import annotations

import numpy as np

from workbench.core.numerics import QParams, qrange

#: |value| from which a calibrated range is treated as holding sentinel values (masks, "-inf").
SENTINEL_ABS = 1e8


def range_absmax(qp: QParams) -> float:
    """Largest |real value| the quantization grid of ``qp`` spans."""
    qmin, qmax = qrange(qp.qtype)
    zp = qp.zero_point.astype(np.float64)
    scale = qp.scale.astype(np.float64)
    return float(np.max(np.maximum(np.abs((qmin - zp) * scale), np.abs((qmax - zp) * scale))))


def sentinel_units(plan, qparams: dict[str, QParams], threshold: float = SENTINEL_ABS) -> dict[str, tuple[str, float]]:
    """Units touching a tensor whose range reaches ``threshold``: node -> (tensor, absmax)."""
    huge = {t: range_absmax(qp) for t, qp in qparams.items()}
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
