"""A project's saved results keep each issue's structured fields (``units``, ``ratio``, ``island``).

They held node, severity, message and code only, so a reopened project's latency notes lost the island's units
and the measured ratio, and "Show the quantized model's errors" read the ratio back out of the message's words with
a regex. And a calibration that quantized nothing (every unit kept float by the latency check) saved no results at
all (no row, no qparams), so the reopened project said "No results yet" instead of why. The latency measurements are faked (latency_fakes.slow_quantized: every quantized model 1.5x float, the
latency fallback keeps every island float), not timed.
"""

from __future__ import annotations

import json

from cli_projects import run_job
from latency_fakes import slow_quantized

from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.qt.document import issue_json, typed_issues
from workbench.qt.nothing_quantized import latency_islands
from workbench.qt.quantize_anyway import measured_ratio


def _fields(issues) -> list[tuple]:
    return [(i.node, str(i.severity), i.message, str(i.code), i.units, i.ratio, i.island) for i in issues]


def _problems(win) -> list[tuple]:
    return [(s, str(i.severity), i.node, i.message, i.units, i.ratio, i.island) for s, i in win.problems.problems]


def _calibrated_project(qtbot, win, open_file, corpus, monkeypatch, tmp_path):
    slow_quantized(monkeypatch)
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    win.calibration.choose_first.setChecked(False)  # the preset as it is: the latency check's edit alone
    win.calibration.samples.setValue(16)
    win.calibration.analysis_samples.setValue(8)
    state, res = run_job(qtbot, win, win.act_calibrate.trigger)
    assert state == "succeeded", res
    return win.save_project_to(tmp_path / "digits.wbproj")


def test_a_reopened_projects_latency_notes_keep_units_ratio_and_island(qtbot, window, open_file, corpus, monkeypatch,
                                                                       tmp_path):
    win, doc = window, window.doc
    path = _calibrated_project(qtbot, win, open_file, corpus, monkeypatch, tmp_path)
    islands = latency_islands(doc.result_issues)
    assert islands and all(i.island and i.ratio == 1.5 and i.units and i.units[0] == i.node for i in islands)
    before = (_fields(doc.result_issues), measured_ratio(doc), [len(i.units) for i in islands], _problems(win))

    open_file(win, path)
    assert doc.undo_stack.count() == 0 and doc.result_recipe  # the saved results are shown
    # and said so: the status read "(no saved results)" for results without a row
    assert "Project digits.wbproj: per-unit results, calibration cache restored." in win.status_label.text()
    after = (_fields(doc.result_issues), measured_ratio(doc), [len(i.units) for i in latency_islands(doc.result_issues)],
             _problems(win))
    assert after == before
    assert after[1] == 1.5
    # nothing is quantized: the results (no row, their issues) were not saved at all, and the reopened project said
    # "No results yet" where the session before said why nothing is quantized
    qtbot.waitUntil(lambda: win.errors.summary.text().startswith("Nothing is quantized"), timeout=10_000)
    text = win.errors.summary.text()
    assert text.startswith("Nothing is quantized: the latency check kept all 5 node units float in 1 island"), text
    assert "the project records it" in text


def test_an_older_projects_issues_open_as_before(qtbot, window, open_file, corpus, monkeypatch, tmp_path):
    """A project saved before the fields were: every issue still reads (node, severity, message, code), the latency
    warnings' ratio from their message as the app read it then; units () and island False."""
    win, doc = window, window.doc
    path = _calibrated_project(qtbot, win, open_file, corpus, monkeypatch, tmp_path)
    before = [(i.node, str(i.severity), i.message, str(i.code)) for i in doc.result_issues]
    project = json.loads(path.read_text())
    for item in project["results"]["problems"]:
        for key in ("units", "ratio", "island"):
            del item[key]
    old = tmp_path / "old.wbproj"
    old.write_text(json.dumps(project))

    open_file(win, old)
    assert [(i.node, str(i.severity), i.message, str(i.code)) for i in doc.result_issues] == before
    assert all(i.units == () and not i.island for i in doc.result_issues)
    islands = latency_islands(doc.result_issues)
    assert islands and [i.ratio for i in islands] == [1.5] * len(islands)
    assert measured_ratio(doc) == 1.5


def test_saved_issue_fields_round_trip_and_bad_ones_are_left_out():
    issue = PlanIssue("/a/Conv", Severity.WARNING, "kept float", IssueCode.LATENCY_KEPT_FLOAT,
                      units=("/a/Conv", "/b/Relu, 1"), ratio=1.37, island=True)
    saved = json.loads(json.dumps(issue_json(issue)))
    assert saved == {"node": "/a/Conv", "severity": "warning", "message": "kept float", "code": "latency-kept-float",
                     "units": ["/a/Conv", "/b/Relu, 1"], "ratio": 1.37, "island": True}
    assert typed_issues([saved]) == [issue]
    plain = PlanIssue("", Severity.INFO, "a note", IssueCode.PREPARATION_NOTE)
    assert typed_issues([issue_json(plain)]) == [plain]
    bad = [{**saved, "units": "/a/Conv"}, {**saved, "ratio": "1.37"}, {**saved, "ratio": True}, {**saved, "island": 1}]
    assert typed_issues(bad) == []
