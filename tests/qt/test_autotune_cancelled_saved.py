"""An autotune run cancelled after an earlier finished one: the project and the report hold the partial points the
panel shows, said to be cancelled, not the earlier curve.

Found by a bug hunt: on digits_cnn, a finished run then a second one cancelled after its first point left the
panel showing that point while the project still saved the first run's curve (shown again on reopen) and File >
Export Report put no curve in the page."""

from __future__ import annotations

import json

import pytest
from finished_runs import finished_autotune
from latency_fakes import quantized_faster
from report_sections import report_section
from test_app_flow import run_job

from workbench.core.jobs import JOBS


@pytest.fixture(autouse=True)
def _latency_scripted(monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized, whatever this machine measures


class _WaitAfterPoint:
    """The job's progress with a ``partial`` that hands a curve point to the window (the job's signal, as a child
    process's job sends it) and then waits for the cancel: the job cannot end before the test's cancel."""

    def __init__(self, progress, cancel, job) -> None:
        self._progress, self._cancel, self._job = progress, cancel, job

    def __call__(self, *args, **kwargs):
        return self._progress(*args, **kwargs)

    def partial(self, data) -> None:
        self._job.partial.emit(data)
        self._cancel._event.wait(60)


def test_a_cancelled_run_replaces_the_earlier_curve_in_the_project_and_the_report(
    qtbot, window, open_file, corpus, tmp_path, monkeypatch
):
    win, panel = window, window.autotune_panel
    res = finished_autotune(qtbot, win, open_file, corpus)
    finished = [e["recipe"] for e in res["curve"]]
    assert len(finished) >= 2

    asked: list[int] = []

    def cancel_at_first_point(kind, _data):
        if kind == "autotune" and not asked:
            asked.append(1)
            win.runs.cancel()

    job = JOBS["autotune"]
    monkeypatch.setitem(JOBS, "autotune", lambda payload, progress, cancel: job(
        payload, _WaitAfterPoint(progress, cancel, win.runs.job), cancel))
    win.runs.partial.connect(cancel_at_first_point)
    state, _res = run_job(qtbot, win, win.act_autotune.trigger, timeout=300_000)
    win.runs.partial.disconnect(cancel_at_first_point)
    assert state == "cancelled" and panel.final is None, _res
    shown = [e["recipe"] for e in panel.points]
    assert 1 <= len(shown) < len(finished)

    project = win.save_project_to(tmp_path / "cancelled.wbproj")
    saved = json.loads(project.read_text())["results"]["autotune"]
    assert saved["cancelled"] is True and [e["recipe"] for e in saved["result"]["curve"]] == shown

    section = report_section(qtbot, win, tmp_path / "cancelled.html", "autotune")
    assert "No autotune curve" not in section
    assert f"Autotune was cancelled after {len(shown)} recipes" in section
    assert panel.summary.text().startswith(f"Autotune cancelled after {len(shown)} recipe")

    open_file(win, corpus / "digits_cnn/model_opset13.onnx")  # another document: no curve
    assert panel.points == []
    open_file(win, project)
    assert panel.final is None and [e["recipe"] for e in panel.points] == shown
    assert panel.summary.text().startswith(f"Autotune cancelled after {len(shown)} recipe")
    reopened = report_section(qtbot, win, tmp_path / "reopened.html", "autotune")
    assert f"Autotune was cancelled after {len(shown)} recipes" in reopened
