"""The caches round on threads builds its two sessions side by side: the second QDQ task builds the float
model's session before taking the QDQ one the first task builds, so no worker waits for a build; one session
per model as before, and the table is the inline one, figure for figure."""

from __future__ import annotations

import threading

import numpy as np

from tests.test_sensitivity_sweep import tiny_model
from workbench.core import api
from workbench.core.analysis import sensitivity, sweep_tasks
from workbench.core.analysis.executors import InlineExecutor, ProcessExecutor, ThreadExecutor
from workbench.core.analysis.sensitivity import sensitivity_sweep


def _setup(tmp_path):
    tiny_model(tmp_path / "tiny.onnx")
    x = np.random.default_rng(1).normal(0, 1, (24, 16)).astype(np.float32)
    x[:, 3] *= 6.0
    np.savez(tmp_path / "calib.npz", x=x)
    model = api.open_model(tmp_path / "tiny.onnx")
    return model, api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(tmp_path / "calib.npz")), \
        str(tmp_path / "calib.npz")


def test_second_qdq_cache_task_builds_the_float_session(tmp_path, monkeypatch):
    model, result, data = _setup(tmp_path)
    inline = sensitivity_sweep(model, result, data, samples=16, batch_size=4, executor=InlineExecutor())
    running = threading.local()
    builds: list[tuple[str, int, bool]] = []  # (task's model, its first batch, the session's optimize)
    real_cache, real_session = sensitivity.run_cache, sweep_tasks.task_session

    def run_cache(task):
        running.task = (task.tag, task.first)
        try:
            return real_cache(task)
        finally:
            running.task = None

    def task_session(proto, optimize):
        task = getattr(running, "task", None)
        if task is not None:
            builds.append((*task, optimize))
        return real_session(proto, optimize)

    monkeypatch.setattr(sensitivity, "run_cache", run_cache)
    monkeypatch.setattr(sweep_tasks, "task_session", task_session)
    threads = sensitivity_sweep(model, result, data, samples=16, batch_size=4, executor=ThreadExecutor(2))
    # the QDQ model runs as written (optimize False), the float one optimized; 4 batches: runs at 0 and 2
    assert sorted(builds) == [("q", 0, False), ("q", 2, True)]
    assert threads.to_json() == inline.to_json()
    builds.clear()
    sensitivity_sweep(model, result, data, samples=16, batch_size=4, executor=ThreadExecutor(1))
    assert builds == [("q", 0, False), ("f", 0, True)]  # one run per model: nothing to build beside it
    monkeypatch.undo()  # a process pool pickles the task functions: the real ones
    with ProcessExecutor(2) as pool:  # no shared sessions: each task builds its own, nothing warmed
        procs = sensitivity_sweep(model, result, data, samples=16, batch_size=4, executor=pool)
    assert procs.to_json() == inline.to_json()
