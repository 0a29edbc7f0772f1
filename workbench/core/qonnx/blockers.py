"""Which node units of a plan a QDQ file cannot hold (QONNX-only activation dtypes, bipolar weights).

Its own module so a QDQ export checks this without importing the QONNX converter and writer.
"""

from __future__ import annotations


def qdq_only_blockers(plan) -> list[str]:
    """Units whose dtype a QDQ export would not reproduce (QONNX-only activations, bipolar)."""
    out = []
    for unit in getattr(plan, "units", {}).values():
        w, a = unit.config.weight, unit.config.activation
        if unit.excluded:
            continue
        if (a is not None and a.qtype.qonnx_only) or (w is not None and w.dtype == "bipolar"):
            out.append(unit.node)
    return out
