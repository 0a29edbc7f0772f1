"""The caches round on threads builds its two sessions side by side: the second QDQ task builds the float
model's session before taking the QDQ one the first task builds, so no worker waits for a build; one session
per model as before, and the table is the inline one, figure for figure."""

from __future__ import annotations

import numpy as np

from tests.test_sensitivity_sweep import tiny_model
from workbench.core import api
from workbench.core.analysis import sensitivity, sweep_tasks
from workbench.core.analysis.executors import InlineExecutor, ProcessExecutor, ThreadExecutor
from workbench.core.analysis.sensitivity import sensitivity_sweep
from workbench.core.analysis.sweep_tasks import CacheTask, SharedSessions, run_cache


def _setup(tmp_path):
    tiny_model(tmp_path / "tiny.onnx")
    x = np.random.default_rng(1).normal(0, 1, (24, 16)).astype(np.float32)
    x[:, 3] *= 6.0
    np.savez(tmp_path / "calib.npz", x=x)
    model = api.open_model(tmp_path / "tiny.onnx")
    return model, api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(tmp_path / "calib.npz")), \
        str(tmp_path / "calib.npz")


def test_second_qdq_cache_task_warms_the_float_session(tmp_path, monkeypatch):
    model, result, data = _setup(tmp_path)
    monkeypatch.setattr(sensitivity, "keeps_float_run", lambda *a: False)  # the float cache runs in this round
    inline = sensitivity_sweep(model, result, data, samples=16, batch_size=4, executor=InlineExecutor())
    seen: list[tuple[str, int, str | None]] = []
    real = sensitivity.run_cache
    monkeypatch.setattr(sensitivity, "run_cache", lambda task: seen.append(
        (task.tag, task.first, task.warm.tag if task.warm else None)) or real(task))
    threads = sensitivity_sweep(model, result, data, samples=16, batch_size=4, executor=ThreadExecutor(2))
    assert sorted(seen) == [("f", 0, None), ("f", 2, None), ("q", 0, None), ("q", 2, "f")]  # 4 batches, 2 runs
    assert threads.to_json() == inline.to_json()
    seen.clear()
    sensitivity_sweep(model, result, data, samples=16, batch_size=4, executor=ThreadExecutor(1))
    assert seen == [("q", 0, None), ("f", 0, None)]  # one run per model: nothing to build beside it
    monkeypatch.setattr(sensitivity, "run_cache", real)  # a process pool pickles the task functions: the real ones
    with ProcessExecutor(2) as pool:  # no shared sessions: each task builds its own, nothing warmed
        procs = sensitivity_sweep(model, result, data, samples=16, batch_size=4, executor=pool)
    assert procs.to_json() == inline.to_json()


def test_a_warming_task_builds_the_other_session_first_and_once(tmp_path, monkeypatch):
    model, result, _data = _setup(tmp_path)
    feeds = [{"x": np.random.default_rng(2).normal(0, 1, (4, 16)).astype(np.float32)}]
    built: list[bool] = []  # the sessions' optimize flag, in build order
    real = sweep_tasks.task_session
    monkeypatch.setattr(sweep_tasks, "task_session", lambda proto, optimize: built.append(optimize) or real(proto, optimize))
    shared = SharedSessions()
    f_task = CacheTask(model.proto, True, feeds, ["y"], tag="f", sessions=shared)
    q_task = CacheTask(result.proto, False, feeds, ["y"], tag="q", sessions=shared, warm=f_task)
    q_values = run_cache(q_task)
    assert built == [True, False]  # the float session first, then its own
    f_values = run_cache(f_task)
    assert built == [True, False]  # the float task found its session built
    assert q_values[0]["y"].shape == f_values[0]["y"].shape == (4, 4)
    alone = CacheTask(result.proto, False, feeds, ["y"], tag="q", warm=f_task)  # no shared sessions: no warming
    assert np.array_equal(run_cache(alone)[0]["y"], q_values[0]["y"]) and built == [True, False, False]
