"""Reopening a saved project shows the Problems the app showed when it was saved: "1 warning, 49 notes" at the
save became "37 notes" after reopening ppocrv4_rec's project, the int32-bias warning gone. The calibration's own
issues (the writer's, the latency check's) were not saved, only their text lines."""

from __future__ import annotations

import re

from example_copy import open_example_copy
from latency_fakes import quantized_faster
from test_app_flow import run_job

from workbench.core.issues import IssueCode, PlanIssue, Severity


def _rows(panel) -> list[tuple[str, str, str, str]]:
    return [(s, str(i.severity), i.node, i.message) for s, i in panel.problems]


def test_a_reopened_project_lists_the_same_problems(qtbot, window, open_file, tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # digits_cnn quantized whatever this machine measures (latency_fakes)
    open_example_copy(window, open_file, tmp_path)
    state, res = run_job(qtbot, window, window.act_calibrate.trigger, timeout=300_000)
    assert state == "succeeded", res
    # the example's calibration has no writer issues of its own: ppocrv4_rec's int32-bias warning on one of its Convs
    conv = next(n for n in window.canvas.node_names() if window.doc.op_type(n) == "Conv")
    window.doc.result_issues.append(PlanIssue(conv, Severity.WARNING, "int32 bias out of range: the weight scale "
                                              "was raised to fit it", IssueCode.BIAS_OVERFLOW))
    window.doc.resultsChanged.emit()
    assert [s for s, i in window.problems.problems if i.code == IssueCode.BIAS_OVERFLOW] == ["quantize"]
    before = (_rows(window.problems), window.problems.summary.text(), re.sub("<[^>]*>", "", window.problems_link.text()))
    window.save_project_to(tmp_path / "p.wbproj")
    open_file(window, tmp_path / "p.wbproj")
    after = (_rows(window.problems), window.problems.summary.text(), re.sub("<[^>]*>", "", window.problems_link.text()))
    assert after == before
    assert all(isinstance(i, PlanIssue) for i in window.doc.result_issues)
