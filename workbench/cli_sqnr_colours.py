"""``workbench-cli render --colour sqnr``: each node's SQNR colour and what its grey nodes are.

The app colours every node of a unit by the unit's accumulated SQNR (a Conv + Relu unit's Relu too) and
names in its legend the nodes left grey; the rendered picture does the same from the job's plan and
``analyze`` rows. Imports only the core facade (:mod:`workbench.core.wording`), as ``workbench/cli.py`` does.
"""

from __future__ import annotations

import math
from collections import Counter

from workbench.core.wording import count

#: SQNR drawn for a bit-exact unit (+inf dB), as the app's error view does; all noise (-inf) at its negative
INF_SQNR_DB = 100.0
#: op types the grey note names, most frequent first (minilm_l6_v2 has 23 outside every unit)
MAX_OPS = 4


def node_sqnr(rows, units: dict) -> dict[str, float]:
    """Node name -> accumulated SQNR (dB) to colour by: each row's figure (``rows``: ``analyze``'s, ``.node`` the
    unit's name, ``.sqnr_db`` in dB) on every node of its unit (``units``: unit name -> ``NodeUnit``, the plan's),
    +inf (bit-exact) at :data:`INF_SQNR_DB`, -inf (all noise) at -:data:`INF_SQNR_DB`; NaN (not measured) left
    out, drawn grey."""
    out: dict[str, float] = {}
    for r in rows:
        db = r.sqnr_db
        if math.isnan(db):
            continue
        db = colour_db(db)
        unit = units.get(r.node)
        for node in (unit.nodes if unit is not None and unit.nodes else [r.node]):
            out.setdefault(node, db)
        out[r.node] = db
    return out


def colour_db(db: float) -> float:
    """One SQNR figure (dB) as the picture colours it: +inf (bit-exact) at :data:`INF_SQNR_DB`, -inf (all
    noise) at -:data:`INF_SQNR_DB` (red), NaN and finite figures as they are (the app's ``error_rank.canvas_db``)."""
    return INF_SQNR_DB if db == math.inf else -INF_SQNR_DB if db == -math.inf else float(db)


def grey_note(nodes, units: dict, coloured: dict[str, float], latency_kept: bool) -> str:
    """The legend's note on the nodes drawn grey ("no value"), "" when every node has a figure.

    ``nodes``: the graph's nodes (``.name``, ``.op_type``); ``units``: the plan's (unit name -> ``NodeUnit``,
    ``.excluded`` True when kept float); ``coloured``: :func:`node_sqnr`'s figures; ``latency_kept``: the
    latency check kept units float (its issues). E.g. "no value (grey): 2 nodes not quantized (in no unit:
    MaxPool, Flatten)"; the :data:`MAX_OPS` most frequent op types are named, the rest counted. Where no node
    has a figure and no unit is quantized (``--exclude '*'``, or the latency check keeping every unit float), the
    note says so first: "no unit quantized, so every node is grey (no value): 5 units kept float by ..." (the
    picture was all grey with the reason on stderr only).
    """
    member = {n: name for name, unit in units.items() for n in (unit.nodes or [name])}
    grey = [n for n in nodes if n.name not in coloured]
    if not grey:
        return ""
    kept = sorted({member[n.name] for n in grey if n.name in member and units[member[n.name]].excluded})
    unmeasured = sorted({member[n.name] for n in grey if n.name in member and not units[member[n.name]].excluded})
    loose = [op for op, _n in Counter(n.op_type for n in grey if n.name not in member).most_common()]
    parts = []
    if kept:
        why = ("by the recipe, a guard or the latency check (--no-latency-check measures the units it keeps)"
               if latency_kept else "by the recipe or a guard")
        parts.append(f"{count(len(kept), 'unit')} kept float {why}")
    if loose:
        n = sum(n.name not in member for n in grey)
        more = f", {count(len(loose) - MAX_OPS, 'more op type')}" if len(loose) > MAX_OPS else ""
        parts.append(f"{count(n, 'node')} not quantized (in no unit: {', '.join(loose[:MAX_OPS])}{more})")
    if unmeasured:
        parts.append(f"{count(len(unmeasured), 'unit')} quantized but not measured (no finite SQNR)")
    if not coloured and not unmeasured:  # nothing quantized: the whole picture is grey
        return "no unit quantized, so every node is grey (no value): " + "; ".join(parts)
    return "no value (grey): " + "; ".join(parts)


def all_grey_note(units: dict, latency_units: int) -> str:
    """The one stderr line of a picture with no unit quantized (every node grey): why, and what to do to colour it.

    ``units``: the plan's (unit name -> ``NodeUnit``, ``.excluded`` True when kept float); ``latency_units``: how
    many of them the latency check keeps float (0: none). E.g. "the latency check keeps 5 units float (measured
    slower quantized on this machine), so no unit is quantized and every node is drawn grey; run again with
    --no-latency-check to colour each unit by its SQNR"."""
    if latency_units:
        return (f"the latency check keeps {count(latency_units, 'unit')} float (measured slower quantized on this "
                "machine, as `quantize` writes them), so no unit is quantized and every node is drawn grey; run "
                "again with --no-latency-check to colour each unit by its SQNR")
    if units:
        return (f"no unit is quantized ({count(len(units), 'unit')} kept float by the recipe or a guard), so every "
                "node is drawn grey; give an --exclude or --recipe that leaves some units quantized to colour them "
                "by their SQNR")
    return ("the recipe quantizes no node of this model, so every node is drawn grey (no SQNR to colour by); "
            "draw it with --colour op, or choose another --preset")


__all__ = ["INF_SQNR_DB", "all_grey_note", "colour_db", "grey_note", "node_sqnr"]
