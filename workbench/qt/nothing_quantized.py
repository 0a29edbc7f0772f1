"""What the app says when a calibration ended with no node unit quantized (nothing to measure).

The latency check can keep every unit float (ppocr_mobile_v2_cls measured slower quantized on a loaded
machine: its 13 islands, 135 units, all left float), and a recipe or its guards can too. The Errors panel
then has no row to show; instead of "No results yet: calibrate" (which contradicts the "Done" of the
status line) it says that nothing is quantized, why, and what to do. The counts come from the document:
its plan's units and the latency check's island issues of the last calibration.
"""

from __future__ import annotations

from workbench.core.issues import IssueCode, Severity
from workbench.core.wording import count
from workbench.qt.latency_edits import latency_edit_done, latency_kept_units


def latency_islands(issues) -> list:
    """The latency fallback's issues among ``issues`` (PlanIssue): one per island of units it kept float, told by
    their ``island`` field (warnings, and a microsecond model's notes: those were not counted, so the app said "kept
    5 units float" where the CLI said "in 1 island"); the latency placement's single units are notes without it. A
    warning with a node counts too: an island of a project saved before issues kept the field."""
    return [i for i in issues if i.code == IssueCode.LATENCY_KEPT_FLOAT and i.node
            and (i.island or i.severity == Severity.WARNING)]


def islands_note(islands: int) -> str:
    """``13 islands, `` (how many islands the latency fallback kept float, to put before the reason in the
    brackets after "kept 135 units float"); "" without islands (the placement's single units)."""
    return f"{count(islands, 'island')}, " if islands else ""


def latency_kept_any(issues) -> bool:
    """True when ``issues`` hold a unit or an island the latency check kept float."""
    return any(i.code == IssueCode.LATENCY_KEPT_FLOAT and i.node for i in issues)


def latency_kept_float(doc) -> bool:
    """True when the latency check keeps units of ``doc`` float: its last calibration's issues say so, or the
    recipe still excludes units a done latency-check edit (or an opened project's ``latency_kept``) excluded. An export's latency check adds its edit
    ("... (latency check at export)") and the figures are measured again by an analysis, which runs no latency
    check: its issues name none, and the Errors panel blamed "the recipe and its guards"."""
    return latency_kept_any(doc.result_issues) or bool(latency_kept_units(doc))


def nothing_quantized(doc) -> bool:
    """True when the document's last calibration (or analysis) of the current recipe measured no unit because
    none is quantized: results are shown (``result_recipe``), current, and have no row."""
    return (doc.model is not None and doc.quant_summary is None and bool(doc.result_recipe)
            and doc.results_current and not doc.errors)


def nothing_quantized_text(doc) -> str:
    """The Errors panel's text for :func:`nothing_quantized` ("" otherwise): that nothing is quantized, why
    (the latency check kept every unit float, or the recipe and its guards did) and what to do: the "Show the
    quantized model's errors" button and Ctrl+Z only when the latency check's edit is the one Ctrl+Z undoes (a
    reopened project records the units, with no edit to undo: the text described a button that was not there)."""
    if not nothing_quantized(doc):
        return ""
    units = doc.plan.quantized_count()[1] if doc.plan is not None else 0
    every = f"all {count(units, 'node unit')}" if units else "every node unit"
    issues = doc.result_issues
    if not latency_kept_float(doc):
        return (f"Nothing is quantized: the recipe and its guards keep {every} float, so there is no error to "
                "show (View > Problems says why for each). Select nodes and untick \"exclude (keep in float)\" "
                "in the inspector, or choose another preset in the Recipe panel, then calibrate (F5).")
    islands = latency_islands(issues)
    where = f" in {count(len(islands), 'island')}" if islands else ""
    anyway = ("To quantize anyway: select nodes and untick \"exclude (keep in float)\" in the inspector (a node with "
              "an override of its own is never kept float by the latency check) and calibrate (F5).")
    if not latency_edit_done(doc):  # a reopened project's record: no edit of this session to undo, no button
        return (f"Nothing is quantized: the latency check kept {every} float{where} (the quantized model measured "
                "slower than float, as workbench-cli quantize measures it; the project records it), so there is no "
                f"error to show; View > Problems lists them. {anyway}")
    return (f"Nothing is quantized: the latency check kept {every} float{where} (the quantized model measured "
            "slower than float on this machine, as workbench-cli quantize measures it), so there is no error to "
            "show; View > Problems lists them. To see the quantized model's errors anyway: \"Show the quantized "
            "model's errors\" below undoes the latency check's edit (Ctrl+Z, Edit > Undo for \"Keep ... float "
            f"(latency check)\") and runs Analyze (F6) on the recipe as it is (Ctrl+Y keeps the units float again). {anyway}")


def nothing_quantized_status(doc) -> str:
    """The status line's short form of :func:`nothing_quantized_text` ("" when something is quantized)."""
    if not nothing_quantized(doc):
        return ""
    return f"Done, but nothing is quantized: {_why(doc)} (the Errors panel says what to do)."


def _why(doc) -> str:
    return "the latency check kept every unit float" if latency_kept_float(doc) else \
        "the recipe keeps every unit float"


def no_figures_status(doc, figure: str) -> str:
    """The status line when the canvas is asked to colour by ``figure`` ("SQNR", "local SQNR") and the last
    calibration quantized nothing: "No SQNR: nothing is quantized (the latency check kept every unit float;
    the Errors panel says what to do)." ("" when something is quantized or nothing was measured)."""
    if not nothing_quantized(doc):
        return ""
    return f"No {figure}: nothing is quantized ({_why(doc)}; the Errors panel says what to do)."


__all__ = ["islands_note", "latency_islands", "latency_kept_any", "latency_kept_float", "no_figures_status", "nothing_quantized",
           "nothing_quantized_status", "nothing_quantized_text"]
