"""The sweep runs the float model once for the own-error pass and the float activation cache: the float
session outputs the fragments' inputs and whatever any unit's "only quantized" suffix reads
(sweep_graph.side_reads), and its values serve both. When a task's second batch would take them over
KEEP_BYTES (or the workers are other processes) the cache runs the float model again in a session with
the same outputs, so the table is the same figure for figure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.core import api
from workbench.core.analysis import sensitivity
from workbench.core.analysis.executors import InlineExecutor, ProcessExecutor, ThreadExecutor
from workbench.core.analysis.sensitivity import sensitivity_sweep, sweepable_units
from workbench.core.analysis.sweep_graph import only_quantized, pair_index, side_reads, with_fragments
from workbench.core.analysis.sweep_types import tensor_types
from workbench.core.data.loader import open_data_source
from workbench.core.recipe.spec import NodeSettings
from workbench.core.runtime.session import make_session


@pytest.fixture
def transformer(corpus):
    folder = corpus / "digits_transformer"
    model = api.open_model(folder / "model_opset17.onnx")
    data = str(folder / "calib.npz")
    recipe = api.make_recipe("cpu-u8s8")
    return model, recipe, api.quantize(model, recipe, data=data), data


def test_side_reads_cover_every_only_quantized_suffix(transformer):
    model, _recipe, result, _data = transformer
    fp, qp = model.proto, result.proto
    units = sweepable_units(result.plan, fp)
    types = tensor_types(fp, True)
    ix = pair_index(fp, qp)
    reads = set()
    for u in units:
        reads |= set(only_quantized(fp, qp, u, result.tensor_map, types, build=False, index=ix).inputs)
    fragments, _ = with_fragments(fp, qp, units, result.tensor_map, types)
    side = side_reads(ix, units, result.tensor_map)
    graph_inputs = {i.name for i in fp.graph.input}
    assert reads <= set(fragments.inputs) | side | graph_inputs
    assert side <= reads and len(side) == 40  # attention shape tensors, residual branches


def test_the_float_model_runs_once_and_the_table_is_that_of_a_second_run(transformer, monkeypatch):
    model, _recipe, result, data = transformer
    tags: list[str] = []
    real = sensitivity.run_cache
    monkeypatch.setattr(sensitivity, "run_cache", lambda task: tags.append(task.tag) or real(task))
    threads = sensitivity_sweep(model, result, data, samples=8, executor=ThreadExecutor(2))  # 2 batches, 2 workers
    assert tags == ["q", "q"]  # no float cache task: its values come from the own-error pass
    tags.clear()
    inline = sensitivity_sweep(model, result, data, samples=8, executor=InlineExecutor())  # 2 batches, 1 worker
    assert tags == ["q"]
    tags.clear()
    monkeypatch.setattr(sensitivity, "keeps_float_run", lambda *a: False)  # the float model runs again for the cache
    again = sensitivity_sweep(model, result, data, samples=8, executor=ThreadExecutor(2))
    assert tags == ["q", "q", "f", "f"]
    monkeypatch.setattr(sensitivity, "run_cache", real)  # sent to worker processes
    with ProcessExecutor(2) as pool:
        procs = sensitivity_sweep(model, result, data, samples=8, executor=pool)
    assert threads.to_json() == inline.to_json() == again.to_json() == procs.to_json()


def test_only_quantized_figure_equals_the_whole_variant_model(transformer):
    """/enc/layers.0/Add_2 alone quantized: the whole variant model (every other unit excluded, the same
    calibration, run as written) against the float model gives 41.540 dB over the 8 samples; the sweep gave
    41.592 when its cache came from a float session with other outputs than the pass that fed the
    fragments (a few of the Add's inputs rounded to the neighbouring step)."""
    model, recipe, result, data = transformer
    node = "/enc/layers.0/Add_2"
    others = [u.node for u in result.plan.units.values() if not u.excluded and u.node != node]
    only = api.quantize(model, recipe.model_copy(update={"overrides": {n: NodeSettings(exclude=True) for n in others}}),
                        calibration=result.calibration, guard=False)
    ref, got = make_session(model.proto), make_session(only.proto, optimize=False)
    sig = err = 0.0
    for feed in open_data_source(data, model).batches(4, limit=8):
        for r, q in zip(ref.run(None, feed), got.run(None, feed), strict=True):
            r, q = r.astype(np.float64), q.astype(np.float64)
            sig, err = sig + float((r * r).sum()), err + float(((r - q) ** 2).sum())
    whole = 10 * math.log10(sig / err)
    sweep = sensitivity_sweep(model, result, data, samples=8, top=None, executor=ThreadExecutor(2))
    row = next(r for r in sweep.rows if r.node == node)
    assert whole == pytest.approx(41.540, abs=0.005)
    assert row.only_quant_db == pytest.approx(whole, abs=0.005)


def test_a_task_keeps_its_first_batch_and_more_within_keep_bytes(transformer, monkeypatch):
    model, _recipe, result, data = transformer
    tags: list[str] = []
    real = sensitivity.run_cache
    monkeypatch.setattr(sensitivity, "run_cache", lambda task: tags.append(task.tag) or real(task))
    monkeypatch.setattr(sensitivity, "KEEP_BYTES", 0)
    one = sensitivity_sweep(model, result, data, samples=8, executor=ThreadExecutor(2))  # a batch per task: kept
    assert tags == ["q", "q"]
    tags.clear()
    two = sensitivity_sweep(model, result, data, samples=16, executor=ThreadExecutor(2))  # a second batch: over
    assert tags == ["q", "q", "f", "f"]
    tags.clear()
    monkeypatch.setattr(sensitivity, "KEEP_BYTES", 1 << 30)
    kept = sensitivity_sweep(model, result, data, samples=16, executor=ThreadExecutor(2))
    assert tags == ["q", "q"] and kept.to_json() == two.to_json() and one.samples == 8
