"""The CLI reads the latency notes' ``island`` and ``units`` fields, not their wording.

``_print_issues`` told the latency fallback's island notes from the latency placement's single units by the words
"with its island" in the message, and ``analyze``'s note counted an island's units from "island of N quantized
unit": a note worded otherwise (its fields set) was grouped with the single units and counted as one unit.
"""

from __future__ import annotations

from workbench.cli import _note_latency_kept, _print_issues
from workbench.core.issues import IssueCode, PlanIssue, Severity


def _island(units: tuple[str, ...]) -> PlanIssue:
    """An island note of the latency fallback whose wording names none of the words the CLI looked for."""
    return PlanIssue(units[0], Severity.INFO, f"left float together with {len(units) - 1} neighbours",
                     code=IssueCode.LATENCY_KEPT_FLOAT, units=units, ratio=1.3, island=True)


def _alone(node: str) -> PlanIssue:
    return PlanIssue(node, Severity.INFO, "kept in float: its kernel measured 2.00x its float latency",
                     code=IssueCode.LATENCY_KEPT_FLOAT, units=(node,), ratio=2.0)


ISLANDS = [_island(("a", "b", "c", "d", "e")), _island(("f",)), _island(("g", "h"))]
ALONE = [_alone("p"), _alone("q"), _alone("r")]


def test_island_notes_are_grouped_apart_from_single_units_by_their_field(capsys):
    _print_issues([*ALONE, *ISLANDS])
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "note: p: kept in float: its kernel measured 2.00x its float latency",
        "note: 2 more nodes likewise (latency-kept-float): q, r",
        "note: a: left float together with 4 neighbours",
        "note: 2 more nodes likewise (latency-kept-float): f, g",
    ]


def test_analyze_note_counts_each_islands_units_from_its_field(capsys):
    _note_latency_kept([*ALONE, *ISLANDS], "measures")
    err = capsys.readouterr().err.strip()
    # 3 alone + 5 + 1 + 2 in 3 islands (the one-unit island too)
    assert err.startswith("note: 11 units measured slower quantized (3 alone, 8 in 3 islands) are float here, as "
                          "`quantize` writes them"), err


def test_the_latency_fallbacks_island_notes_say_so_in_their_field():
    from workbench.core.pipeline.latency_fallback import _kept_issue, _small_island_note

    for note in (_small_island_note(["x"], 1.2), _kept_issue(["x", "y"], 1.4, 1.1, 1)):
        assert note.island and note.node == "x"
    assert [len(_small_island_note(["x"], 1.2).units), len(_kept_issue(["x", "y"], 1.4, 1.1, 1).units)] == [1, 2]
