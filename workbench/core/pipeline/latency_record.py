"""The record of the units the latency check kept float, as a project keeps it (``latency_kept``).

The latency placement (:mod:`~workbench.core.pipeline.latency_placement`) and the latency fallback
(:mod:`~workbench.core.pipeline.latency_fallback`) add their exclusions to the result's recipe, so a saved project
replays the same model without measuring again; in the recipe they read like the user's own exclusions.
:func:`latency_kept_record` turns the units they kept and their ``IssueCode.LATENCY_KEPT_FLOAT`` issues (their
``units`` and ``ratio`` fields) into :class:`~workbench.core.pipeline.project.LatencyKept` entries (node, measured
ratio, the check's note), which the project saves beside the recipe; :func:`replay_notes` are the notes a replay
reports for them.
"""

from __future__ import annotations

from collections.abc import Iterable

from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.pipeline.project import LatencyKept


def _note_for(node: str, notes: list[PlanIssue]) -> PlanIssue | None:
    """The note that says why ``node`` was kept float: the one whose ``units`` name it (a placement probe's, or
    its island's, whatever the message lists), one on the node itself, else the note on the whole model with a
    ratio (every unit float), else the first island's."""
    for issue in notes:
        if node in issue.units or issue.node == node:
            return issue
    whole = [i for i in notes if not i.node and i.ratio is not None]
    islands = [i for i in notes if len(i.units) > 1]
    return (whole or islands or [None])[0]


def latency_kept_record(nodes: Iterable[str], issues: Iterable) -> list[LatencyKept]:
    """One :class:`LatencyKept` per node of ``nodes`` (units the latency check kept float, the names its recipe
    edit excluded), sorted by node, each with the ``ratio`` and the message of the ``issues`` (a job's PlanIssues)
    that say why, read from their ``units`` and ``ratio`` fields, never from the message text (a note without a
    ratio takes the whole model's warning's); a node no note explains gets ratio None and a short reason."""
    notes = [i for i in issues if getattr(i, "code", None) == IssueCode.LATENCY_KEPT_FLOAT]
    # an island a microsecond model's slowdown left float: the warning about the whole model gives the ratio
    whole = next((i.ratio for i in notes if not i.node and i.ratio is not None), None)
    record = []
    for node in sorted(set(nodes)):
        note = _note_for(node, notes)
        if note is None:
            record.append(LatencyKept(node=node, ratio=None, reason="kept float by the latency check (slower quantized)"))
            continue
        record.append(LatencyKept(node=node, ratio=note.ratio if note.ratio is not None else whole,
                                  reason=note.message))
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
                               "again: quantize the model itself to measure again here", code=IssueCode.LATENCY_KEPT_FLOAT,
                               units=(entry.node,), ratio=entry.ratio))
    return notes
