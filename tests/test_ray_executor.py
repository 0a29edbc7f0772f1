"""Executors: the sweep gives the same table inline, in local processes and on a real local Ray
cluster (two workers on 127.0.0.1); a Ray worker killed mid-task is retried; a missing Ray is a
one-line error."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from workbench.core import api
from workbench.core.analysis.executors import InlineExecutor, ProcessExecutor, RayExecutor, make_executor
from workbench.core.errors import WorkbenchError


def test_make_executor_parses_the_cli_names(monkeypatch):
    assert isinstance(make_executor("inline"), InlineExecutor)
    assert make_executor("processes:3").workers == 3
    assert RayExecutor("127.0.0.1:6379").address == "127.0.0.1:6379"
    with pytest.raises(WorkbenchError, match="Cannot reach a Ray cluster at 127.0.0.1:1"):
        make_executor("ray:127.0.0.1:1")  # nobody listens: one error at once, not minutes of Ray retries
    with pytest.raises(WorkbenchError, match="not HOST:PORT"):
        make_executor("ray:nowhere")
    with pytest.raises(WorkbenchError, match="Unknown executor"):
        make_executor("threads")
    with pytest.raises(WorkbenchError, match="whole number"):
        make_executor("processes:two")
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(WorkbenchError, match="pip install") as err:
        make_executor("ray")
    assert "\n" not in str(err.value)


@pytest.mark.slow
def test_sweep_is_the_same_inline_in_processes_and_on_ray(corpus):
    folder = corpus / "digits_transformer"
    model = api.open_model(folder / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8", reduce_range=True), data=str(folder / "calib.npz"),
                          samples=64)
    tables = {}
    for name, executor in (("inline", InlineExecutor()), ("processes", ProcessExecutor(2)),
                           ("ray", RayExecutor(workers=2))):
        sweep = api.sensitivity_sweep(model, result, str(folder / "eval.npz"), samples=8, executor=executor)
        tables[name] = sweep.to_json()
    assert len(tables["inline"]["rows"]) == 36
    assert tables["processes"] == tables["inline"]
    assert tables["ray"] == tables["inline"]


@pytest.mark.slow
def test_a_killed_ray_worker_is_retried_and_the_results_match(tmp_path):
    marker = str(tmp_path / "pid")
    killed = []

    # defined here so that Ray ships it by value (workers cannot import the test module)
    def _square_or_hang(task):
        """Task of the kill test: the first attempt at task 2 records its PID and waits to be killed."""
        value, marker = task
        if value == 2 and not os.path.exists(marker):
            with open(marker + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.replace(marker + ".tmp", marker)
            time.sleep(120)
        return value * value

    def killer():
        deadline = time.monotonic() + 100
        while time.monotonic() < deadline and not os.path.exists(marker):
            time.sleep(0.05)
        if os.path.exists(marker):
            pid = int(open(marker).read())
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    watcher = threading.Thread(target=killer, daemon=True)
    watcher.start()
    tasks = [(v, marker) for v in range(5)]
    got = list(RayExecutor(workers=2).map(_square_or_hang, tasks))
    watcher.join(timeout=5)
    assert killed, "the task never started"
    assert got == [v * v for v in range(5)] == list(InlineExecutor().map(lambda t: t[0] ** 2, tasks))


@pytest.mark.slow
def test_autotune_e2e_is_the_same_inline_in_processes_and_on_ray(corpus, tmp_path):
    folder = corpus / "digits_transformer"
    model = api.open_model(folder / "model_opset17.onnx")
    recipe = api.make_recipe("cpu-u8s8", reduce_range=True)
    runs = {}
    for name, executor in (("inline", None), ("processes", ProcessExecutor(2)), ("ray", RayExecutor(workers=2))):
        res = api.autotune(model, recipe, data=str(folder / "calib.npz"), eval_data=str(folder / "eval.npz"),
                           # top1 with max_drop 0 is met as quantized (0.948 vs 0.938 float): a cosine target
                           metric="cosine", max_drop=0.0003, samples=64, eval_samples=96, rank="e2e", e2e_candidates=6,
                           executor=executor)
        runs[name] = (res.promoted, [(p.promoted, p.metric) for p in res.curve], res.metric_after,
                      res.result.proto.SerializeToString())
    assert runs["inline"][0], "the target needs promotions: the ranking is exercised"
    assert runs["processes"] == runs["inline"]
    assert runs["ray"] == runs["inline"]


@pytest.mark.slow
def test_sharded_analysis_on_ray_equals_one_pass(corpus):
    folder = corpus / "digits_transformer"
    model = api.open_model(folder / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8", reduce_range=True), data=str(folder / "calib.npz"),
                          samples=64)
    one = api.analyze(model, result, str(folder / "eval.npz"), samples=64)
    shards = api.analyze(model, result, str(folder / "eval.npz"), samples=64, executor=RayExecutor(workers=2),
                         shards=4)
    assert len(one) == 36 and [r.node for r in one] == [r.node for r in shards]
    for a, b in zip(one, shards, strict=True):
        assert a.sqnr_db == pytest.approx(b.sqnr_db, rel=1e-9, abs=1e-9) and a.max_abs == b.max_abs
