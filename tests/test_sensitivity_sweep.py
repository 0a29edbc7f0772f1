"""Sensitivity sweep: each unit's figures equal those of the whole variant model run in onnxruntime.

The sweep runs only suffix models over cached activations; here every figure is checked against
the full model the recipe edit would produce (only this unit quantized = every other unit
excluded; only this unit float = this unit excluded), quantized with the same calibration.
"""

from __future__ import annotations

import math
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.analysis import executors
from workbench.core.analysis.executors import (
    InlineExecutor,
    ProcessExecutor,
    ThreadExecutor,
    default_executor,
    make_executor,
)
from workbench.core.analysis.sensitivity import SweepResult, sensitivity_sweep, sweep_executor
from workbench.core.errors import Cancelled
from workbench.core.progress import CancelToken
from workbench.core.recipe.spec import NodeSettings
from workbench.core.runtime.session import make_session


def tiny_model(path) -> None:
    """x[N,16] -> MatMul -> Relu -> MatMul -> Add(residual with the first Relu) -> MatMul -> y[N,4]."""
    rng = np.random.default_rng(0)
    w = [numpy_helper.from_array(rng.normal(0, s, shape).astype(np.float32), f"w{i}")
         for i, (shape, s) in enumerate([((16, 32), 0.3), ((32, 32), 0.2), ((32, 4), 0.3)])]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h0"], name="mm0"),
             helper.make_node("Relu", ["h0"], ["r0"], name="relu0"),
             helper.make_node("MatMul", ["r0", "w1"], ["h1"], name="mm1"),
             helper.make_node("Add", ["h1", "r0"], ["s"], name="add"),
             helper.make_node("MatMul", ["s", "w2"], ["y"], name="mm2")]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], initializer=w)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


@pytest.fixture
def setup(tmp_path):
    path = tmp_path / "tiny.onnx"
    tiny_model(path)
    data = tmp_path / "calib.npz"
    x = np.random.default_rng(1).normal(0, 1, (24, 16)).astype(np.float32)
    x[:, 3] *= 6.0  # one wide channel: coarse activation grid, clearly different unit errors
    np.savez(data, x=x)
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8")
    result = api.quantize(model, recipe, data=str(data))
    return model, recipe, result, str(data), x


def e2e_sqnr(model, proto, x) -> float:
    """End-to-end SQNR (dB) of ``proto`` against the float model on ``x``."""
    ref = make_session(model.proto).run(None, {"x": x})[0].astype(np.float64)
    got = make_session(proto, optimize=False).run(None, {"x": x})[0].astype(np.float64)
    return 10 * math.log10(float((ref * ref).sum()) / float(((ref - got) ** 2).sum()))


def excluded(recipe, nodes):
    return recipe.model_copy(update={"overrides": {n: NodeSettings(exclude=True) for n in nodes}})


def with_pair(proto, tensor: str, qp) -> tuple[onnx.ModelProto, str]:
    """A copy of ``proto`` with a QuantizeLinear -> DequantizeLinear pair (``qp``, per tensor) on
    ``tensor``, every reader reading the DequantizeLinear output (returned too)."""
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    dq = f"{tensor}_pair_dq"
    zp = np.asarray(qp.zero_point).reshape(())
    out.graph.initializer.extend([numpy_helper.from_array(np.asarray(qp.scale, np.float32).reshape(()), f"{tensor}_ps"),
                                  numpy_helper.from_array(zp, f"{tensor}_pz")])
    pair = [helper.make_node("QuantizeLinear", [tensor, f"{tensor}_ps", f"{tensor}_pz"], [f"{tensor}_pq"]),
            helper.make_node("DequantizeLinear", [f"{tensor}_pq", f"{tensor}_ps", f"{tensor}_pz"], [dq])]
    nodes = []
    for n in out.graph.node:
        n.input[:] = [dq if i == tensor else i for i in n.input]
        nodes += [n] + (pair if tensor in n.output else [])
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    assert tensor not in {o.name for o in out.graph.output}
    onnx.checker.check_model(out)
    return out, dq


def only_quantized(model, recipe, result, data, node):
    """The model with only ``node`` quantized as the full plan quantizes it: alone, a MatMul's output
    that only float nodes read would stay float (``float_outputs``), so the full plan's output pair
    is put back (the local figure measures the unit as the full plan writes it)."""
    others = [u.node for u in result.plan.units.values() if not u.excluded and u.node != node]
    only = api.quantize(model, excluded(recipe, others), data=data, calibration=result.calibration, guard=False)
    proto, names = only.proto, dict(only.tensor_map)
    for t in result.plan.units[node].outputs:
        if t in only.plan.units[node].float_outputs:
            proto, names[t] = with_pair(proto, t, result.qparams[t])
    return proto, names


def test_figures_equal_whole_variant_models(setup):
    model, recipe, result, data, x = setup
    sweep = sensitivity_sweep(model, result, data, samples=None, executor=InlineExecutor())
    units = [u for u in result.plan.units.values() if not u.excluded]
    assert sorted(r.node for r in sweep.rows) == sorted(u.node for u in units) and len(units) == 4
    assert sweep.samples == 24 and sweep.tasks == 2 * len(units)
    assert sweep.all_quant_db == pytest.approx(e2e_sqnr(model, result.proto, x), abs=1e-3)
    kept_float = set()
    for r in sweep.rows:
        others = [u.node for u in units if u.node != r.node]
        only = api.quantize(model, excluded(recipe, others), data=data, calibration=result.calibration, guard=False)
        allbut = api.quantize(model, excluded(recipe, [r.node]), data=data, calibration=result.calibration,
                              guard=False)
        # what a variant keeps float that the full plan quantizes: the sweep must price it the same
        kept_float |= {t for v in (only, allbut) for u in v.plan.units.values() for t in u.float_outputs} - {"y"}
        assert r.only_quant_db == pytest.approx(e2e_sqnr(model, only.proto, x), abs=1e-3), r.node
        assert r.only_float_db == pytest.approx(e2e_sqnr(model, allbut.proto, x), abs=1e-3), r.node
        assert r.gain_db == pytest.approx(r.only_float_db - sweep.all_quant_db)
        assert math.isfinite(r.local_db)
    # worst first; the units differ by several dB, so the ranking is meaningful
    values = [r.only_quant_db for r in sweep.rows]
    assert values == sorted(values) and values[-1] - values[0] > 3.0
    # r0 (mm0 alone), h1 (mm1 alone, or add float); both quantized in the full plan
    assert kept_float == {"r0", "h1"} and set(result.plan.activations) >= {"r0", "h1"}


def test_local_figure_is_the_units_own_output(setup):
    """local_db: the unit's fake-quantized output on float inputs, vs its float output."""
    model, recipe, result, data, x = setup
    sweep = sensitivity_sweep(model, result, data, samples=None, executor=InlineExecutor())
    row = next(r for r in sweep.rows if r.node == "mm0")
    only, names = only_quantized(model, recipe, result, data, "mm0")
    from workbench.core.runtime.session import add_outputs

    ref = make_session(add_outputs(model.proto, ["r0"])).run(["r0"], {"x": x})[0].astype(np.float64)
    q_name = names["r0"]
    got = make_session(add_outputs(only, [q_name]), optimize=False).run([q_name], {"x": x})[0]
    expect = 10 * math.log10((ref ** 2).sum() / ((ref - got) ** 2).sum())
    assert row.local_db == pytest.approx(expect, abs=1e-3)


def test_top_limits_end_to_end_units_and_executors_agree(setup):
    model, _recipe, result, data, _x = setup
    full = sensitivity_sweep(model, result, data, samples=16, executor=InlineExecutor())
    top = sensitivity_sweep(model, result, data, samples=16, top=2, executor=InlineExecutor())
    measured = [r for r in top.rows if not math.isnan(r.only_quant_db)]
    assert top.tasks == 4 and len(measured) == 2
    worst_local = sorted(full.rows, key=lambda r: r.local_db)[:2]
    assert {r.node for r in measured} == {r.node for r in worst_local}
    assert [r.node for r in top.rows[:2]] == [r.node for r in measured]  # measured rows first

    class Recording(InlineExecutor):
        calls: list[str] = []

        def map(self, fn, tasks):
            for t in tasks:
                Recording.calls.append(fn.__name__)
                yield fn(t)

    rec = sensitivity_sweep(model, result, data, samples=16, executor=Recording())
    with ProcessExecutor(2) as pool:
        procs = sensitivity_sweep(model, result, data, samples=16, executor=pool)
    # every pass goes through the executor: the fragments pass (one worker: one task; its float run
    # kept for the float activation cache), the QDQ activation cache, then two suffix models per unit
    assert Recording.calls == ["run_fragments", "run_cache"] + ["run_suffix"] * 8
    assert full.tasks == 8
    for a, b, c in zip(full.rows, rec.rows, procs.rows, strict=True):
        assert a.node == b.node == c.node
        assert a.only_quant_db == b.only_quant_db == pytest.approx(c.only_quant_db, abs=1e-9)
        assert a.only_float_db == b.only_float_db == pytest.approx(c.only_float_db, abs=1e-9)


def test_default_executor_uses_every_core_and_gives_the_inline_table(setup, monkeypatch):
    """The sweep's default is one thread per core in this process (inline on a one-core machine):
    no worker process starts, and the table is the inline one, figure for figure. Local processes
    stay what ``make_executor`` gives for ``processes`` and for no name (other fanned-out jobs)."""
    model, _recipe, result, data, _x = setup
    cores = os.cpu_count() or 1
    default = sweep_executor()
    if cores > 1:
        assert isinstance(default, ThreadExecutor) and default.workers == cores
        assert isinstance(default_executor(), ProcessExecutor) and default_executor().workers == cores
    else:
        assert isinstance(default, InlineExecutor)
    assert make_executor("processes").workers == max(2, cores)
    inline = sensitivity_sweep(model, result, data, samples=16, executor=InlineExecutor())

    def no_processes(*args, **kwargs):
        raise AssertionError("the sweep started worker processes")

    monkeypatch.setattr(executors, "ProcessPoolExecutor", no_processes)
    by_default = sensitivity_sweep(model, result, data, samples=16)
    threads = sensitivity_sweep(model, result, data, samples=16, executor=ThreadExecutor(2))
    assert by_default.tasks == inline.tasks == threads.tasks == 8
    assert by_default.to_json() == inline.to_json() == threads.to_json()


def test_suffix_tasks_go_out_earliest_unit_first_and_the_table_is_unchanged(setup, monkeypatch):
    """The units measured end to end are chosen by their own error, but their suffix tasks are handed
    out in graph order (the earliest unit's suffix runs the most nodes), so the workers finish
    together; the table is the one of a sweep that hands them out in the order they were chosen."""
    from workbench.core.analysis import sensitivity

    model, _recipe, result, data, _x = setup
    # in this model the worst own errors come in graph order; with the figures negated the three
    # chosen units (the "worst") come latest first
    measure = sensitivity.local_figures
    monkeypatch.setattr(sensitivity, "local_figures", lambda *a, **k: {n: -v for n, v in measure(*a, **k).items()})
    seen: list[str] = []

    class Recording(InlineExecutor):
        def map(self, fn, tasks):
            for t in tasks:
                if fn.__name__ == "run_suffix" and t.node not in seen:
                    seen.append(t.node)
                yield fn(t)

    top = sensitivity_sweep(model, result, data, samples=16, top=3, executor=Recording())
    position = {n.name: i for i, n in enumerate(model.proto.graph.node)}
    chosen = sorted((r for r in top.rows if not math.isnan(r.only_quant_db)), key=lambda r: r.local_db)
    assert len(seen) == 3 and set(seen) == {r.node for r in chosen}
    assert seen == sorted(seen, key=position.__getitem__) != [r.node for r in chosen]
    monkeypatch.setattr(sensitivity, "largest_first", lambda units, proto: list(units))  # the chosen order
    assert sensitivity_sweep(model, result, data, samples=16, top=3, executor=InlineExecutor()).to_json() \
        == top.to_json()


def _thread_name(_task) -> str:
    import threading

    return threading.current_thread().name


def test_thread_executor_yields_in_order_and_keeps_its_threads_for_a_with_block():
    """Results in task order; inside ``with`` every map runs on the same threads, which end with
    the block; outside one, each map has threads of its own and none is left after it."""
    import threading
    import time

    ex = ThreadExecutor(2)

    def slow_first(k: int) -> int:
        time.sleep(0.05 if k == 0 else 0.0)
        return k * k

    assert list(ex.map(slow_first, range(7))) == [k * k for k in range(7)]
    assert ex._pool is None
    with ex:
        first = set(ex.map(_thread_name, range(6)))
        pool = ex._pool
        second = set(ex.map(_thread_name, range(6)))
        assert ex._pool is pool and pool is not None  # the same threads serve both maps
        assert threading.current_thread().name not in first | second and 1 <= len(first | second) <= 2
    assert ex._pool is None
    gen = ex.map(slow_first, range(100))
    assert next(gen) == 0
    gen.close()  # queued tasks are cancelled, the threads end
    assert ex._pool is None


def test_json_round_trip_suggestion_and_cancel(setup):
    model, _recipe, result, data, _x = setup
    sweep = sensitivity_sweep(model, result, data, samples=16, executor=InlineExecutor())
    back = SweepResult.from_json(sweep.to_json())
    assert back == sweep
    best = max(sweep.rows, key=lambda r: r.gain_db)
    assert sweep.suggestion(min_gain_db=-100.0, max_fraction=0.25) == [best.node]
    assert sweep.suggestion(min_gain_db=best.gain_db + 1.0) == []
    token = CancelToken()
    seen = []

    def progress(done, total, message):
        seen.append((done, total))
        if total == 8 and done >= 2:  # in the sweep proper (2 figures x 4 units), not its preparation
            token.cancel()

    with pytest.raises(Cancelled):
        sensitivity_sweep(model, result, data, samples=16, executor=InlineExecutor(), progress=progress,
                          cancel=token)
    assert (2, 8) in seen and (3, 8) not in seen


def test_dynamic_recipe_is_refused_with_a_hint(setup):
    from workbench.core.errors import RecipeError

    model, _recipe, _result, data, _x = setup
    dynamic = api.quantize(model, api.make_recipe("dynamic-u8"))
    with pytest.raises(RecipeError, match="static") as info:
        sensitivity_sweep(model, dynamic, data, executor=InlineExecutor())
    assert "cpu-u8s8" in info.value.hint


def _worker_pid(_task) -> int:
    return os.getpid()


def test_process_executor_keeps_its_workers_for_a_with_block():
    """Inside ``with``: every map runs on the same worker processes, which end with the block;
    outside one, each map has processes of its own (none left running after it)."""
    ex = ProcessExecutor(2)
    with ex:
        first = set(ex.map(_worker_pid, range(6)))
        second = set(ex.map(_worker_pid, range(6)))
        assert second <= first and os.getpid() not in first and 1 <= len(first) <= 2  # no new processes
    assert ex._pool is None  # the block ended the processes
    alone = set(ex.map(_worker_pid, range(4)))
    assert alone.isdisjoint(first) and ex._pool is None


def chain_model(path, c2: np.ndarray) -> None:
    """x[N,8] -> Add(+1) -> Mul(*c2) -> Add(-0.25) -> MatMul -> y[N,4]: the Mul and the second Add
    read and write tensors whose pairs their quantized neighbours share."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.asarray(v, np.float32), n) for n, v in (("c1", 1.0), ("c2", c2), ("c3", -0.25))]
    inits.append(numpy_helper.from_array(rng.normal(0, 0.4, (8, 4)).astype(np.float32), "w"))
    nodes = [helper.make_node("Add", ["x", "c1"], ["a"], name="add1"),
             helper.make_node("Mul", ["a", "c2"], ["b"], name="mul"),
             helper.make_node("Add", ["b", "c3"], ["c"], name="add2"),
             helper.make_node("MatMul", ["c", "w"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], initializer=inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def dequantizes_to_itself(proto: onnx.ModelProto, weight: str, value: np.ndarray) -> bool:
    """Whether the DequantizeLinear that replaced ``weight`` in ``proto`` gives ``value`` bit for bit
    (evaluated by onnx.reference on the written initializers)."""
    from onnx.reference import ReferenceEvaluator

    inits = {i.name: i for i in proto.graph.initializer}
    node = next(n for n in proto.graph.node if n.op_type == "DequantizeLinear" and n.input[0].startswith(weight)
                and n.input[0] in inits)
    graph = helper.make_graph([node], "dq", [], [helper.make_empty_tensor_value_info(node.output[0])],
                              initializer=[inits[x] for x in node.input if x])
    got = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])).run(None, {})[0]
    return bool(np.array_equal(got, np.asarray(value, np.float32)))


@pytest.mark.parametrize("c2", [np.float32(0.5), np.linspace(0.3, 1.7, 8, dtype=np.float32)])
def test_only_float_that_changes_nothing_is_not_run(tmp_path, monkeypatch, c2):
    """A unit whose pairs its neighbours keep and whose weight dequantizes to itself bit for bit has
    an "only float" model equal to the QDQ model: its figure is the all-quantized one, with no run;
    any other unit's variant still runs (the Mul by a vector, whose int8 grid rounds it). Every
    figure agrees with the whole variant model in onnxruntime."""
    from workbench.core.analysis import sensitivity

    path, data = tmp_path / "chain.onnx", tmp_path / "calib.npz"
    chain_model(path, c2)
    x = np.random.default_rng(4).normal(0, 1, (16, 8)).astype(np.float32)
    np.savez(data, x=x)
    model, recipe = api.open_model(path), api.make_recipe("cpu-u8s8")
    result = api.quantize(model, recipe, data=str(data))
    exact = {c: dequantizes_to_itself(result.proto, c, v) for c, v in (("c2", c2), ("c3", -0.25))}
    assert exact == {"c2": np.ndim(c2) == 0, "c3": True}
    ran = []
    real = sensitivity.run_suffix
    monkeypatch.setattr(sensitivity, "run_suffix", lambda task: ran.append((task.node, task.kind)) or real(task))
    sweep = sensitivity_sweep(model, result, str(data), samples=None, executor=InlineExecutor())
    units = [u.node for u in result.plan.units.values() if not u.excluded]
    assert sorted(units) == ["add1", "add2", "mm", "mul"] and sweep.tasks == 8
    skipped = {("add2", "float")} | ({("mul", "float")} if exact["c2"] else set())
    assert sorted(ran) == sorted({(u, k) for u in units for k in ("quant", "float")} - skipped)
    for r in sweep.rows:
        allbut = api.quantize(model, excluded(recipe, [r.node]), data=str(data), calibration=result.calibration,
                              guard=False)
        assert r.only_float_db == pytest.approx(e2e_sqnr(model, allbut.proto, x), abs=1e-3), r.node
        if (r.node, "float") in skipped:
            assert r.only_float_db == sweep.all_quant_db and r.gain_db == 0.0


def test_caches_split_each_models_batches_over_the_workers_qdq_first(setup, monkeypatch):
    """The float and the QDQ activation caches go out as one task per worker and model (contiguous
    runs of batches, the QDQ model's first: its runs are the longer), not one task per model, so
    two workers finish together; the table is the inline one, figure for figure, on threads and on
    processes (whose cached arrays are files named by batch: two tasks must not share a name)."""
    from workbench.core.analysis import sensitivity

    model, _recipe, result, data, _x = setup
    monkeypatch.setattr(sensitivity, "keeps_float_run", lambda *a: False)  # the float cache runs in this round
    inline = sensitivity_sweep(model, result, data, samples=16, executor=InlineExecutor())
    with ProcessExecutor(2) as pool:
        procs = sensitivity_sweep(model, result, data, samples=16, executor=pool)
    seen: list[tuple[str, int, int]] = []
    real = sensitivity.run_cache
    monkeypatch.setattr(sensitivity, "run_cache", lambda task: seen.append((task.tag, task.first, len(task.feeds)))
                        or real(task))
    threads = sensitivity_sweep(model, result, data, samples=16, batch_size=4, executor=ThreadExecutor(2))
    assert seen == [("q", 0, 2), ("q", 2, 2), ("f", 0, 2), ("f", 2, 2)]  # 16 samples: 4 batches of 4
    seen.clear()
    three = sensitivity_sweep(model, result, data, samples=16, batch_size=4, executor=ThreadExecutor(3))
    assert seen == [("q", 0, 2), ("q", 2, 1), ("q", 3, 1), ("f", 0, 2), ("f", 2, 1), ("f", 3, 1)]
    assert threads.to_json() == three.to_json() == inline.to_json() == procs.to_json()


def test_threads_share_each_rounds_sessions_and_the_table_is_unchanged(setup, monkeypatch):
    """On threads, the fragments round builds its float and fragments sessions once, and the caches
    round one session per model, whatever the number of tasks (they built one per task: 8 sessions
    for 4 batches on 2 threads, now 4); the suffix models one each. The table is the inline one,
    figure for figure."""
    import pickle
    import threading

    from workbench.core.analysis import sensitivity, sweep_tasks
    from workbench.core.analysis.sweep_graph import with_fragments
    from workbench.core.analysis.sweep_tasks import SharedSessions
    from workbench.core.analysis.sweep_types import tensor_types

    model, _recipe, result, data, _x = setup
    monkeypatch.setattr(sensitivity, "keeps_float_run", lambda *a: False)  # the float cache runs in its round
    inline = sensitivity_sweep(model, result, data, samples=16, executor=InlineExecutor())
    built, ran = [], []
    real_session, real_suffix = sweep_tasks.make_session, sensitivity.run_suffix
    monkeypatch.setattr(sweep_tasks, "make_session", lambda *a, **k: built.append(1) or real_session(*a, **k))
    monkeypatch.setattr(sensitivity, "run_suffix", lambda task: ran.append(1) or real_suffix(task))
    threads = sensitivity_sweep(model, result, data, samples=16, batch_size=4, executor=ThreadExecutor(2))
    assert threads.to_json() == inline.to_json()
    assert len(ran) == 8 and len(built) - len(ran) == 4  # fragments + float (once), QDQ + float caches (once)
    # two threads asking for one key: one build, both get it; a pickled copy starts empty
    shared, calls, got = SharedSessions(), [], []
    gate = threading.Barrier(2)

    def ask():
        gate.wait()
        got.append(shared.get("k", lambda: calls.append(1) or object()))

    workers = [threading.Thread(target=ask) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(calls) == 1 and got[0] is got[1]
    assert pickle.loads(pickle.dumps(shared)).get("k", lambda: "fresh") == "fresh"
    # the fragments task reads the model's graph inputs, which are its session's inputs, in order
    fp, qp = model.proto, result.proto
    sfx, _probes = with_fragments(fp, qp, [u for u in result.plan.units.values() if not u.excluded],
                                  result.tensor_map, tensor_types(fp, True))
    assert [i.name for i in real_session(sfx.proto, optimize=False).get_inputs()] == \
        [i.name for i in sfx.proto.graph.input]


def test_every_task_session_runs_without_an_arena_on_one_thread(setup, monkeypatch):
    """The fragments, cache and suffix sessions take their buffers from the heap (no arena grown for
    one or two batches and dropped), one intra-op thread each; the table is the one with arenas."""
    from workbench.core.analysis import sweep_tasks
    from workbench.core.analysis.sweep_tasks import task_session

    model, _recipe, result, data, _x = setup
    real = sweep_tasks.make_session
    monkeypatch.setattr(sweep_tasks, "make_session", lambda proto, **k: real(proto, **{**k, "arena": True}))
    with_arena = sensitivity_sweep(model, result, data, samples=16, executor=InlineExecutor())
    calls: list[dict] = []
    monkeypatch.setattr(sweep_tasks, "make_session", lambda proto, **k: calls.append(k) or real(proto, **k))
    without = sensitivity_sweep(model, result, data, samples=16, executor=InlineExecutor())
    assert without.to_json() == with_arena.to_json()
    # the fragments and float sessions, the QDQ cache (the float one kept from the pass), 8 suffixes
    assert len(calls) == 3 + 8 and all(k["arena"] is False and k["threads"] == 1 for k in calls)
    options = task_session(model.proto, optimize=True).get_session_options()
    assert not options.enable_cpu_mem_arena and options.intra_op_num_threads == 1
