"""Sharded calibration: row ranges calibrated as separate tasks (inline, local processes, Ray) and
merged give MinMax qparams bit-identical to one pass, histogram ranges within a few bins, and the
same written model."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.analysis.executors import InlineExecutor, RayExecutor
from workbench.core.data.loader import open_data
from workbench.core.data.rows import RowRange, split_rows
from workbench.core.io.save import save_model
from workbench.core.pipeline.sharded import calibrate_sharded


def test_split_rows_covers_every_row_once():
    assert split_rows(10, 4) == [(0, 2), (2, 5), (5, 7), (7, 10)]
    assert split_rows(3, 8) == [(0, 1), (1, 2), (2, 3)]
    assert split_rows(5, 1) == [(0, 5)]


def _model_and_data(tmp_path):
    rng = np.random.default_rng(0)
    w = (rng.normal(size=(16, 8)) * 0.3).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Sigmoid", ["m"], ["s"], name="sig"),
             helper.make_node("Mul", ["m", "s"], ["y"], name="silu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])],
                              [numpy_helper.from_array(w, "w")])
    path = tmp_path / "m.onnx"
    save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    x = rng.normal(size=(40, 16)).astype(np.float32) * np.linspace(0.5, 3.0, 40, dtype=np.float32)[:, None]
    x[13, 2] = np.nan  # a non-finite value keeps its row number in the whole data
    np.savez(tmp_path / "calib.npz", x=x)
    return path, tmp_path / "calib.npz"


def test_row_range_yields_exactly_its_rows(tmp_path):
    path, calib = _model_and_data(tmp_path)
    model = api.open_model(path)
    rows = RowRange(open_data(str(calib), model), 10, 17)
    got = np.concatenate([f["x"] for f in rows.batches(4)])
    np.testing.assert_array_equal(got, np.load(calib)["x"][10:17])
    assert rows.num_samples() == 7


def test_inline_shards_equal_one_pass_for_minmax(tmp_path):
    path, calib = _model_and_data(tmp_path)
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8", reduce_range=True)
    one = api.calibrate(model, api.plan(model, recipe, guard=True), str(calib))
    sharded = calibrate_sharded(model, recipe, str(calib), shards=3, executor=InlineExecutor())
    a, b = one.qparams(), sharded.qparams()
    assert set(a) == set(b) and len(a) >= 3
    for t in a:
        assert np.array_equal(a[t].scale, b[t].scale) and np.array_equal(a[t].zero_point, b[t].zero_point), t
    assert sharded.nonfinite and {s for _, s, _ in sharded.nonfinite} == {13}
    assert sorted(sharded.nonfinite) == sorted(one.nonfinite)
    q1 = api.quantize(model, recipe, data=str(calib), calibration=one)
    q2 = api.quantize(model, recipe, data=str(calib), calibration=sharded)
    assert q1.proto.graph.SerializeToString() == q2.proto.graph.SerializeToString()


@pytest.mark.slow
def test_minilm_four_shards_on_ray(corpus):
    folder = corpus / "minilm_l6_v2"
    model = api.open_model(folder / "model.onnx")
    calib = str(folder / "calib.npz")
    minmax = api.make_recipe("cpu-u8s8")
    single = api.calibrate(model, api.plan(model, minmax, guard=True), calib)
    sharded = calibrate_sharded(model, minmax, calib, shards=4, executor=RayExecutor(workers=2))
    a, b = single.qparams(), sharded.qparams()
    assert set(a) == set(b) and len(a) > 100
    assert all(np.array_equal(a[t].scale, b[t].scale) and np.array_equal(a[t].zero_point, b[t].zero_point)
               for t in a)
    # percentile: the merged histogram re-bins onto the widest shard's grid; documented bound 8 bins
    pct = api.make_recipe("cpu-u8s8", rules=[{"name": "*", "activation": {"observer": "percentile"}}])
    one = api.calibrate(model, api.plan(model, pct, guard=True), calib)
    merged = calibrate_sharded(model, pct, calib, shards=4, executor=InlineExecutor())
    for t, obs in merged.observers.items():
        hists = obs.hists
        if not hists or hists[0].lo is None:
            continue
        diff = abs(float(one.observers[t].qparams().scale) - float(obs.qparams().scale)) * 255
        assert diff <= 8 * hists[0].width, t


def test_cli_quantize_with_calibration_shards_writes_the_same_bytes(corpus, tmp_path):
    from workbench.cli import main

    folder = corpus / "digits_cnn"
    model, calib = str(folder / "model_opset17.onnx"), str(folder / "calib.npz")
    # --no-search: MinMax ranges merge exactly; a searched histogram observer merges within one bin
    # --no-latency-check: the latency placement's probes of digits_cnn's first Conv and AveragePool are measured,
    # and two runs on a loaded machine could keep different units float
    assert main(["quantize", model, "--data", calib, "-o", str(tmp_path / "one.onnx"), "--no-search",
                 "--no-latency-check"]) == 0
    assert main(["quantize", model, "--data", calib, "-o", str(tmp_path / "shards.onnx"), "--no-search",
                 "--executor", "processes:2", "--shards", "3", "--no-latency-check"]) == 0
    assert (tmp_path / "one.onnx").read_bytes() == (tmp_path / "shards.onnx").read_bytes()
    assert main(["quantize", model, "--data", calib, "-o", str(tmp_path / "x.onnx"), "--executor", "threads"]) == 2
    assert not (tmp_path / "x.onnx").exists()
    # --shards without an executor calibrated in one pass without a word
    assert main(["quantize", model, "--data", calib, "-o", str(tmp_path / "x.onnx"), "--shards", "3"]) == 2
    assert not (tmp_path / "x.onnx").exists()
