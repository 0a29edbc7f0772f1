"""The app reads the latency notes' ``ratio`` field, and a reopened project's unit says when it was measured.

"Show the quantized model's errors" found the ratio it prints with its own regex on the island warnings' words, so a
warning worded otherwise (its ``ratio`` set) gave "slower than float" with no figure. And View > Problems said of
a unit a reopened project keeps float with no saved reason "kept float by the latency check (slower quantized on
this machine)": the project's record was measured when it was saved, maybe on another machine.
"""

from __future__ import annotations

from types import SimpleNamespace

from cli_projects import MODEL, digits_folder

from workbench.core import api
from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.qt.problems_panel import LATENCY_SOURCE, collect_problems
from workbench.qt.quantize_anyway import measured_ratio

KEPT = ["/f/f.0/Conv", "/f/f.9/AveragePool"]


def _warning(message: str, ratio: float | None) -> PlanIssue:
    return PlanIssue("/a/Conv", Severity.WARNING, message, code=IssueCode.LATENCY_KEPT_FLOAT, units=("/a/Conv",),
                     ratio=ratio, island=True)


def test_the_measured_ratio_is_the_island_warnings_field_whatever_its_words():
    doc = SimpleNamespace(result_issues=[_warning("kept float with 2 neighbours: 1.4 times slower quantized", 1.37)])
    assert measured_ratio(doc) == 1.37
    # the field only, never the words: a project's saved results keep the field (an older project's is read from
    # its message when the project is read, tests/qt/test_saved_issue_fields.py)
    worded = _warning("kept float with its island of 1 node unit (/a/Conv): as quantized the model measured "
                      "1.40x its float latency, with 1 island left float 1.02x", None)
    assert measured_ratio(SimpleNamespace(result_issues=[worded])) is None
    assert measured_ratio(SimpleNamespace(result_issues=[_warning("kept float", None)])) is None


def test_problems_of_a_reopened_projects_unit_with_no_saved_reason(window, open_file, corpus, tmp_path):
    """A project whose ``latency_kept`` entries hold no reason (one hand-written, or of a tool that saved none),
    with no saved results: Problems lists its units as kept float when the project was saved, with the ratio
    recorded, not "on this machine"."""
    folder = digits_folder(corpus, tmp_path)
    project = api.new_project(folder / MODEL, api.make_recipe("cpu-u8s8").with_excluded(KEPT))
    project.latency_kept = [api.LatencyKept(node=KEPT[0], ratio=2.0), api.LatencyKept(node=KEPT[1])]
    open_file(window, api.save_project(project, folder / "p.wbproj"))
    notes = [(i.node, i.message, i.units, i.ratio) for source, i in collect_problems(window.doc)
             if source == LATENCY_SOURCE]
    assert notes == [
        (KEPT[0], "kept float by the latency check (slower quantized when the project was saved; it measured 2.00x "
                  "its float latency)", (KEPT[0],), 2.0),
        (KEPT[1], "kept float by the latency check (slower quantized when the project was saved)", (KEPT[1],), None),
    ]
