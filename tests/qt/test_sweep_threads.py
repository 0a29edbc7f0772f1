"""The app's sensitivity sweep runs on the sweep's own default executor, threads on every core: the app's
setting defaulted to "inline" and the job turned no choice into one thread."""

from __future__ import annotations

import pytest

from workbench.core import jobs
from workbench.core.analysis import sensitivity
from workbench.core.analysis.executors import InlineExecutor, ThreadExecutor
from workbench.qt import settings

DIGITS = "digits_cnn/model_opset17.onnx"


class _Stop(Exception):
    pass


def test_the_apps_sweep_job_takes_the_sweeps_thread_executor(qtbot, window, open_file, corpus, monkeypatch):
    open_file(window, corpus / DIGITS)
    started = []
    monkeypatch.setattr(window.runs, "_start", lambda kind, job, *a, **k: started.append(job) or job)
    window.runs.sensitivity()
    payload = started[0].payload
    assert settings.executor() == "threads" and payload["executor"] == "threads"

    seen = {}

    def sweep(*_a, executor=None, **_k):
        seen["executor"] = executor
        raise _Stop

    monkeypatch.setattr(jobs, "sensitivity_sweep", sweep)
    with pytest.raises(_Stop):
        jobs.job_sensitivity(payload, lambda *a: None, jobs.CancelToken())
    assert seen == {"executor": None}  # the sweep's own default
    monkeypatch.setattr(sensitivity.os, "cpu_count", lambda: 2)
    default = sensitivity.sweep_executor()
    assert isinstance(default, ThreadExecutor) and default.workers == 2
    assert isinstance(jobs._sweep_executor("inline"), InlineExecutor)  # the user's choice of one thread
    assert jobs._sweep_executor("processes") is None  # no process pool in the job's daemon process
