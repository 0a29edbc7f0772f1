"""Per-unit sensitivity from one analysis pass.

The error at a unit's output is the error its inputs bring plus the noise the unit adds itself.
Treating quantization noise as additive and uncorrelated (the usual model, e.g. Widrow & Kollar,
"Quantization Noise", 2008), noise-to-signal ratios add:

    1 / SQNR_out = 1 / SQNR_in + 1 / SQNR_local        (linear ratios, not dB)

so ``SQNR_local = 1 / (1/SQNR_out - 1/SQNR_in)``, where SQNR_in is the worst SQNR among the
unit's quantized inputs (infinite for graph inputs). A unit with a low local SQNR is the one to
promote to a wider dtype or keep in float. This needs one float and one quantized run, instead of
one run per unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class Sensitivity:
    """Local SQNR (dB) a unit adds, and its absolute output SQNR (dB)."""

    node: str
    op_type: str
    local_sqnr_db: float
    output_sqnr_db: float


def _lin(db: float) -> float:
    if db == math.inf:
        return math.inf
    return 10.0 ** (db / 10.0)


def local_sensitivity(plan, rows) -> list[Sensitivity]:
    """Rank units by the noise they add themselves, most harmful (lowest local SQNR) first.

    Parameters
    ----------
    plan : QuantPlan
        Gives each unit's input tensors and which unit produces each tensor.
    rows : list of UnitError
        Output of :func:`workbench.core.analysis.analyze_units` for the fully quantized model.
    """
    out_db = {r.tensor: r.sqnr_db for r in rows}
    producer_db: dict[str, float] = {}
    for unit in plan.units.values():
        for t in unit.outputs:
            if t in out_db:
                producer_db[t] = out_db[t]
    result = []
    for r in rows:
        unit = plan.units.get(r.node)
        ins = [producer_db[t] for t in (unit.inputs if unit else []) if t in producer_db]
        r_in = min((_lin(d) for d in ins), default=math.inf)
        r_out = _lin(r.sqnr_db)
        inv = (1.0 / r_out if r_out > 0 else math.inf) - (1.0 / r_in if r_in > 0 else 0.0)
        local = math.inf if inv <= 0 else 10.0 * math.log10(1.0 / inv)
        result.append(Sensitivity(r.node, r.op_type, local, r.sqnr_db))
    result.sort(key=lambda s: (s.local_sqnr_db, s.node))
    return result
