"""The record of the units the latency check kept float, as a project keeps it (``latency_kept``).

The latency placement (:mod:`~workbench.core.pipeline.latency_placement`) and the latency fallback
(:mod:`~workbench.core.pipeline.latency_fallback`) add their exclusions to the result's recipe, so a saved project
replays the same model without measuring again; in the recipe they read like the user's own exclusions.
:func:`latency_kept_record` turns the units they kept and their ``IssueCode.LATENCY_KEPT_FLOAT`` issues into
:class:`~workbench.core.pipeline.project.LatencyKept` entries (node, measured ratio, the check's note), which the
project saves beside the recipe; :func:`replay_notes` are the notes a replay reports for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.pipeline.project import LatencyKept

#: The ratio in the latency check's notes ("as QLinearConv it measured 1.23x its float latency", "as quantized
#: the model measured 1.40x its float latency").
MEASURED = re.compile(r"measured (\d+(?:\.\d+)?)x its float latency")
#: The units an island note names: "kept float with its island of 3 quantized units (a, b, c): ..." (up to three,
#: then "and N more").
_ISLAND = re.compile(r"with its island of [^(]*\((.*?)\):")


def measured_ratio(message: str) -> float | None:
    """The quantized / float latency ratio a latency check's note gives (1.4), or None when it gives none."""
    found = MEASURED.search(message)
    return float(found.group(1)) if found else None


def _island_nodes(message: str) -> list[str]:
    found = _ISLAND.search(message)
    if not found:
        return []
    return [n.split(" and ")[0] for n in found.group(1).split(", ")]


def _note_for(node: str, notes: list[PlanIssue]) -> PlanIssue | None:
    """The note that says why ``node`` was kept float: its own (a placement probe, its island's first unit), the
    island note naming it, else the note on the whole model (every unit float), else the first island's (the
    placement notes each name their own unit: a unit none names was left float with an island)."""
    for issue in notes:
        if issue.node == node:
            return issue
    for issue in notes:
        if node in _island_nodes(issue.message):
            return issue
    whole = [i for i in notes if not i.node and measured_ratio(i.message) is not None]
    islands = [i for i in notes if i.node and _island_nodes(i.message)]
    return (whole or islands or [None])[0]


def latency_kept_record(nodes: Iterable[str], issues: Iterable) -> list[LatencyKept]:
    """One :class:`LatencyKept` per node of ``nodes`` (units the latency check kept float, the names its recipe
    edit excluded), sorted by node, each with the ratio and the note of the ``issues`` (a job's PlanIssues) that
    say why (a note without a ratio, an island's "(the warning about the whole model)", takes that warning's);
    a node no note explains gets ratio None and a short reason."""
    notes = [i for i in issues if getattr(i, "code", None) == IssueCode.LATENCY_KEPT_FLOAT]
    # an island a microsecond model's slowdown left float: its note points at the warning about the whole model,
    # which gives the ratio measured ("as quantized the model measured 1.11x its float latency")
    whole = next((r for i in notes if not i.node and (r := measured_ratio(i.message)) is not None), None)
    record = []
    for node in sorted(set(nodes)):
        note = _note_for(node, notes)
        message = note.message if note is not None else "kept float by the latency check (slower quantized)"
        ratio = measured_ratio(message)
        record.append(LatencyKept(node=node, ratio=whole if ratio is None and note is not None else ratio,
                                  reason=message))
    return record


def moved_record(record: Iterable[LatencyKept] | None, renamed: dict[str, str | None]) -> list[LatencyKept] | None:
    """``record`` (a project's ``latency_kept``) for the project's recipe applied to another model: each entry under
    the node its override now applies to (``renamed``: old override name -> new name, None when it matches no node
    any more; such entries are dropped, as their overrides are). None when none is left."""
    moved = {}  # one entry per new name (a project's latency_kept names each unit once)
    for entry in record or []:
        if renamed.get(entry.node) is not None:
            moved.setdefault(renamed[entry.node], entry.model_copy(update={"node": renamed[entry.node]}))
    return sorted(moved.values(), key=lambda e: e.node) or None


def replay_notes(record: Iterable[LatencyKept], excluded: Iterable[str], project_path: object) -> list[PlanIssue]:
    """The notes a replay of the project at ``project_path`` reports for its ``latency_kept`` ``record``: one
    per unit the recipe still excludes (``excluded``: the plan's excluded unit names), kept float as the project
    says without measuring again (``IssueCode.LATENCY_KEPT_FLOAT``, info, as the latency placement's own)."""
    still = set(excluded)
    notes = []
    for entry in record:
        if entry.node not in still:
            continue
        measured = f"; it measured {entry.ratio:.2f}x its float latency" if entry.ratio is not None else ""
        notes.append(PlanIssue(entry.node, Severity.INFO,
                               f"kept float by the latency check when {project_path} was saved (slower quantized "
                               f"on that machine{measured}); replayed as the project's recipe says, not measured "
                               "again: quantize the model itself to measure again here", code=IssueCode.LATENCY_KEPT_FLOAT))
    return notes
