"""What the Errors bars rank by: each unit's own noise (local SQNR) or its accumulated SQNR.

*Accumulated* is a unit's output SQNR in the quantized model against the float model, everything
upstream quantized too: once one unit is bad, every unit behind it is low as well, so the worst
bars are often far from where the error starts (ppocrv4_rec: p2o.Add.258 at 1.1 dB accumulated adds
11.2 dB itself). *Local* ("own noise") is the noise the unit adds itself: its quantized nodes (input and
output rounding, weights) run alone on the float model's values of its inputs, against float
(:func:`workbench.core.analysis.sensitivity.local_sensitivity`, the ``local`` figures of the
calibrate job): its lowest bars are the units to keep float or give a wider dtype, which is what
"where does the error come from" asks. Every quantized unit has one (it was derived from the accumulated
noise before and after each unit, which left 69 of nudenet_320n's 147 units without: "inf"); the bars start
ranked by the accumulated SQNR, what the output sees (:data:`DEFAULT_RANK`), and own noise is a switch away.

Local figures as the calibrate job writes them: dB, "inf" (no noise: exact on float inputs, or, derived
where a unit's nodes cannot run alone, no noisier than its inputs), "-inf", or None (an input's noise was
not measured); a unit missing from them has no figure either.
"""

from __future__ import annotations

import math

#: rank key -> the switch's text
RANKS = {"local": "own noise (local SQNR)", "accumulated": "accumulated SQNR"}
#: the rank the bars start with (module docstring: the figure the model's output sees)
DEFAULT_RANK = "accumulated"
#: rank key -> the bars' axis title
AXIS_TITLES = {"local": "own noise: local SQNR", "accumulated": "accumulated SQNR"}
#: the switch's tooltip
RANK_TIP = ("Rank the bars by\n"
            "- own noise (local SQNR): the SQNR of the noise the unit adds itself (its quantized nodes alone on "
            "the float model's values of its inputs); the lowest bar is where the error comes from (keep it "
            "float or give it a wider dtype);\n"
            "- accumulated SQNR: the unit's output in the quantized model against the float model, everything "
            "upstream quantized too; every unit behind a bad one is low as well.\n"
            "The bar shows the figure ranked by, the tick across it the other one; the tooltip gives both.")


def local_db(value) -> float:
    """A local figure as the calibrate job writes it (float, "inf", "-inf", None) -> dB (NaN: not measured)."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def figure(row, local: dict, rank: str) -> float:
    """Row ``row``'s figure for ``rank`` (dB; NaN when not measured)."""
    return local_db(local.get(row.node)) if rank == "local" else float(row.sqnr_db)


def ranked(rows: list, local: dict, rank: str) -> list:
    """``rows`` worst first by ``rank``: -inf, the finite values up, +inf, then the unmeasured (NaN); ties
    by accumulated SQNR, then name."""
    def key(r):
        v = figure(r, local, rank)
        acc = float(r.sqnr_db)
        return (math.isnan(v), v if not math.isnan(v) else 0.0, acc if not math.isnan(acc) else math.inf, r.node)
    return sorted(rows, key=key)


def has_local(rows: list, local: dict) -> bool:
    """Whether any of ``rows`` has a local figure (a project saved before they were measured has none)."""
    return any(not math.isnan(local_db(local.get(r.node))) for r in rows)


def drawn(v: float, inf_db: float) -> float:
    """A figure as a bar length or tick position: +inf at ``inf_db``, NaN and -inf as 0."""
    if v == math.inf:
        return inf_db
    return float(v) if math.isfinite(v) else 0.0


def worst_text(row, local: dict, rank: str) -> str:
    """The summary's "worst" clause for the first bar of ``rank``, both figures named."""
    acc = _db(float(row.sqnr_db))
    if rank == "local":
        return f"most own noise {row.node} at {_db(figure(row, local, 'local'))} local SQNR ({acc} accumulated)"
    own = figure(row, local, "local")
    return f"worst {row.node} at {acc}" + ("" if math.isnan(own) else f" (its own noise {_db(own)})")


def _db(v: float) -> str:
    return "no noise" if v == math.inf else "not measured" if math.isnan(v) else f"{v:.1f} dB"


def marker_note(rank: str) -> str:
    """The bar legend's words for the tick: the figure not ranked by."""
    other = "accumulated" if rank == "local" else "local"
    return f"tick: {AXIS_TITLES[other]}; grey bar: not measured"


#: the canvas legend's title while it shows each unit's own noise (colour box entry "own noise")
LOCAL_LABEL = "Own noise, local SQNR (dB)"
#: the legend's notes in that mode: what the figure is, and the colours that are not on the scale (a model with
#: nodes quantized only as another unit's input gets :func:`local_notes` instead, naming one of them)
LOCAL_NOTES = ["the noise each quantized unit adds itself, run alone on float inputs (Errors: rank by own noise)",
               "linear between the stops; no noise shown as 100 dB, all noise (-inf) as -100 dB (red)",
               "no value (grey): float nodes; units whose input noise was not measured"]
#: the legend's notes in the accumulated SQNR mode (:func:`sqnr_notes` names a node quantized only as an input)
SQNR_NOTES = ["linear between the stops; bit-exact shown as 100 dB, all noise (-inf) as -100 dB (red)",
              "no value (grey): float nodes"]


def input_only_nodes(graph, plan) -> list[tuple[str, str, str, str]]:
    """The nodes of ``graph`` (the plan's main graph: ``.node`` with ``.name``, ``.op_type``, ``.output``) in no
    unit of ``plan`` (a ``QuantPlan``) whose output a quantized unit reads quantized: their output's Q/DQ pair is
    that unit's input rounding, so they have no figure of their own and are drawn grey (nudenet_320n: each
    SiLU's Sigmoid read by its Mul; digits_cnn: its MaxPool and Flatten read by a Conv and the Gemm). In graph
    order, each as (node, op type, the reading unit, its op type)."""
    members = {n for name, unit in plan.units.items() for n in (unit.nodes or [name])}
    readers: dict[str, tuple[str, str]] = {}  # tensor -> the first quantized unit reading it quantized
    for name, unit in plan.units.items():
        if not unit.excluded:
            for q in unit.quant_inputs:
                if q.role == "activation":
                    readers.setdefault(q.tensor, (name, unit.op_type))
    out = []
    for node in graph.node:
        read = next((readers[t] for t in node.output if t in readers), None)
        if node.name not in members and read is not None:
            out.append((node.name, node.op_type, *read))
    return out


def _input_only_note(nodes: list[tuple[str, str, str, str]], counts_in: str) -> str:
    """The grey entry's words on :func:`input_only_nodes` (``nodes``), with the first as the example:
    "3 nodes quantized only as another unit's input (e.g. MaxPool /f/f.4/MaxPool, read by Conv /f/f.7/Conv:
    its rounding counts in that unit's SQNR)"; ``counts_in``: the figure ("SQNR", "own noise")."""
    node, op, reader, reader_op = nodes[0]
    many = f"{len(nodes)} nodes" if len(nodes) > 1 else "1 node"
    return (f"{many} quantized only as another unit's input (e.g. {op} {node}, read by {reader_op} {reader}: its "
            f"rounding counts in that unit's {counts_in})")


def sqnr_notes(nodes: list[tuple[str, str, str, str]]) -> list[str]:
    """:data:`SQNR_NOTES`, its grey entry naming the model's own nodes quantized only as another unit's input
    (``nodes``: :func:`input_only_nodes`; none: the notes as they are)."""
    if not nodes:
        return list(SQNR_NOTES)
    return SQNR_NOTES[:-1] + [f"{SQNR_NOTES[-1]}; {_input_only_note(nodes, 'SQNR')}"]


def local_notes(nodes: list[tuple[str, str, str, str]]) -> list[str]:
    """:data:`LOCAL_NOTES`, its grey entry naming the model's own nodes quantized only as another unit's input
    (``nodes``: :func:`input_only_nodes`; none: the notes as they are)."""
    if not nodes:
        return list(LOCAL_NOTES)
    return LOCAL_NOTES[:-1] + [f"{LOCAL_NOTES[-1]}; {_input_only_note(nodes, 'own noise')}"]


def canvas_sqnr(rows: list, inf_db: float, units: dict | None = None) -> dict[str, float]:
    """Node -> accumulated SQNR (dB) for the canvas colours, as ``workbench-cli render --colour sqnr`` draws it.

    ``rows``: the Errors rows (``.node`` the unit's name, ``.sqnr_db`` in dB). +inf (bit-exact) is drawn at
    ``inf_db``, -inf (all noise: the worst a unit can be) at -``inf_db``, i.e. red; NaN (not measured) is left
    out, so grey. ``units`` as in :func:`unit_spread`: every node of a unit takes the unit's figure. A -inf unit
    was left out and drawn grey, as if float, where render draws it red.
    """
    return unit_spread(canvas_values({r.node: r.sqnr_db for r in rows}, inf_db), units)


def canvas_db(db: float, inf_db: float) -> float:
    """One SQNR figure (dB) as the canvas colours it: +inf (bit-exact) at ``inf_db``, -inf (all noise) at
    -``inf_db`` (red, the worst band), NaN (not measured) as NaN; finite figures as they are."""
    db = float(db)
    return inf_db if db == math.inf else -inf_db if db == -math.inf else db


def canvas_values(values: dict[str, float], inf_db: float) -> dict[str, float]:
    """Name (node or tensor) -> SQNR (dB) for the canvas colours (:func:`canvas_db`), NaN left out (drawn
    grey). The app's Errors colours, ``render --colour sqnr``, the diff panes and ``render --compare`` all
    draw -inf red this way (the diff panes left it out, grey)."""
    out = {}
    for name, db in values.items():
        v = canvas_db(db, inf_db)
        if not math.isnan(v):
            out[name] = v
    return out


def canvas_local(local: dict, inf_db: float, units: dict | None = None) -> dict[str, float]:
    """Node -> local SQNR for the canvas colours: measured units only, +inf at ``inf_db``, -inf (all noise) at
    -``inf_db``. ``units`` (unit name -> its ``NodeUnit``, the plan's): every node of a unit takes the unit's
    figure (the Clip of an Add + Clip unit, the Relu of a Conv + Relu, were drawn grey beside their coloured
    Add and Conv)."""
    return unit_spread(canvas_values({node: local_db(value) for node, value in local.items()}, inf_db), units)


def unit_spread(values: dict[str, float], units: dict | None) -> dict[str, float]:
    """``values`` (unit name -> figure, keyed by the unit's first node) with every node of each unit given
    its unit's figure: ``units`` is unit name -> ``NodeUnit`` (the plan's; None or {}: ``values`` as given).
    A node's own value is kept. The Clip of an Add + Clip unit, the Relu of a Conv + Relu, were drawn grey
    beside their coloured Add and Conv."""
    out = dict(values)
    for name, unit in (units or {}).items():
        if name in values:
            for member in unit.nodes:
                out.setdefault(member, values[name])
    return out
