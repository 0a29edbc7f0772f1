"""The local SQNR derived from the accumulated noise (the noise a unit adds itself, from the noise-to-signal
ratios of its output and of the unit upstream, followed through MaxPool / Flatten; digits_cnn, real data): what
``analyze`` reports for a unit whose own noise is not measured on float inputs (``own_noise=False``, autotune's
ranking; tests/test_own_noise.py checks the measured figures)."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api


def _model_and_data(tmp_path, nodes, inits, rng, out_width: int):
    """``nodes`` over input x [N, 8] with output y [N, out_width] saved as m.onnx, 16 rows of x as d.npz."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", out_width])], inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    np.savez(tmp_path / "d.npz", x=rng.standard_normal((16, 8)).astype(np.float32))
    return path


def _local(out_db: float, in_db: float) -> float:
    inv = 10 ** (-out_db / 10) - 10 ** (-in_db / 10)
    return math.inf if inv <= 0 else -10 * math.log10(inv)


def _derived(path, data, recipe) -> tuple:
    """``(result, rows, {node: derived local SQNR})`` of ``path`` quantized with ``recipe`` on ``data`` (no latency
    check), the own noise derived, not measured."""
    model = api.open_model(path)
    result = api.quantize(model, recipe, data=str(data), latency_check=False)
    rows = api.analyze(model, result, str(data), own_noise=False)
    graph = (result.float_model or model).proto.graph
    return result, rows, {s.node: s.local_sqnr_db for s in api.local_sensitivity(result.plan, rows, graph=graph)}


def test_local_column_follows_the_chain_through_maxpool_and_flatten(corpus):
    folder = corpus / "digits_cnn"
    _result, rows, got = _derived(folder / "model_opset17.onnx", folder / "calib.npz", api.make_recipe("cpu-u8s8"))
    sqnr = {r.node: r.sqnr_db for r in rows}
    # Conv -> Relu -> Conv -> Relu -> MaxPool -> Conv -> Relu -> AveragePool -> Flatten -> Gemm
    upstream = {"/f/f.3/Conv": "/f/f.0/Conv", "/f/f.7/Conv": "/f/f.3/Conv",  # through the MaxPool
                "/f/f.9/AveragePool": "/f/f.7/Conv", "/head/head.2/Gemm": "/f/f.9/AveragePool"}  # and Flatten
    assert got["/f/f.0/Conv"] == sqnr["/f/f.0/Conv"]  # reads the graph input: all its noise is its own
    for node, up in upstream.items():
        want = _local(sqnr[node], sqnr[up])
        assert got[node] == want or math.isclose(got[node], want, rel_tol=1e-12), node
    assert math.isfinite(got["/f/f.3/Conv"]) and got["/f/f.3/Conv"] > sqnr["/f/f.3/Conv"]


def _sqnr(ref: np.ndarray, got: np.ndarray) -> float:
    ref, got = ref.astype(np.float64), got.astype(np.float64)
    return 10 * math.log10(float(np.sum(ref ** 2)) / float(np.sum((ref - got) ** 2)))


def _tensor(path, name: str, feed: dict, *, written: bool) -> np.ndarray:
    """``name`` of the model at ``path`` on ``feed`` (onnxruntime; ``written``: graph as written, as the
    analysis runs the quantized model)."""
    import onnxruntime as ort

    proto = onnx.load(path)
    proto.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    if written:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run([name], feed)[0]


def test_a_float_add_of_two_noisy_tensors_is_probed_for_the_local_figure(tmp_path, capsys):
    """Two MatMuls -> Add (float: only MatMul is quantized) of both -> MatMul: the Add mixes two noisy
    tensors, so the analysis measures its output too (no row of its own): the last MatMul's local figure
    is against that SQNR, checked against both models run in onnxruntime (it was NaN, "not measured").
    A bias Add with one noisy input is followed through to the MatMul before it."""
    rng = np.random.default_rng(9)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), n) for n in ("w0", "w1", "w2", "w3")]
    inits.append(numpy_helper.from_array(np.full((8,), 0.5, np.float32), "b"))
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["a0"], name="mm0"),
             helper.make_node("MatMul", ["x", "w1"], ["a1"], name="mm1"),
             helper.make_node("Add", ["a0", "a1"], ["c"], name="add"),
             helper.make_node("MatMul", ["c", "w2"], ["d"], name="mm2"),
             helper.make_node("Add", ["d", "b"], ["e"], name="bias"),
             helper.make_node("MatMul", ["e", "w3"], ["y"], name="mm3")]
    path = _model_and_data(tmp_path, nodes, inits, rng, 8)
    result, rows, local = _derived(path, tmp_path / "d.npz", api.make_recipe("cpu-u8s8", op_types=["MatMul"]))
    written = tmp_path / "q.onnx"
    onnx.save(result.proto, written)
    sqnr = {r.node: r.sqnr_db for r in rows}
    assert set(sqnr) == {"mm0", "mm1", "mm2", "mm3"} and set(rows.probed) == {"c"}  # the probed Add has no row
    feed = {"x": np.load(tmp_path / "d.npz")["x"]}
    c_db = _sqnr(_tensor(path, "c", feed, written=False), _tensor(written, "c", feed, written=True))
    want = _local(sqnr["mm2"], c_db)
    assert local["mm2"] == want or math.isclose(local["mm2"], want, rel_tol=1e-4)
    assert local["mm0"] == sqnr["mm0"]  # reads the graph input
    want = _local(sqnr["mm3"], sqnr["mm2"])  # through the bias Add
    assert local["mm3"] == want or math.isclose(local["mm3"], want, rel_tol=1e-12)


def test_a_scale_read_from_a_shape_is_noiseless(tmp_path):
    """MatMul -> Mul by Sqrt(Cast(Shape(its output))) (float) -> MatMul: the Shape is exact in both
    models, so the Mul has one noisy input and the trace passes it to the first MatMul (nothing to probe)."""
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), n) for n in ("w0", "w1")]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["a"], name="mm0"),
             helper.make_node("Shape", ["a"], ["s"], name="shape", start=1),
             helper.make_node("Cast", ["s"], ["sf"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Sqrt", ["sf"], ["k"], name="sqrt"),
             helper.make_node("Mul", ["a", "k"], ["m"], name="mul"),
             helper.make_node("MatMul", ["m", "w1"], ["y"], name="mm1")]
    path = _model_and_data(tmp_path, nodes, inits, rng, 8)
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8", op_types=["MatMul"])
    result = api.quantize(model, recipe, calibration=api.calibrate(model, api.plan(model, recipe),
                                                                   str(tmp_path / "d.npz")))
    rows = api.analyze(model, result, str(tmp_path / "d.npz"), own_noise=False)
    assert rows.probed == {}
    local = {s.node: s.local_sqnr_db for s in api.local_sensitivity(result.plan, rows, graph=model.proto.graph)}
    sqnr = {r.node: r.sqnr_db for r in rows}
    want = _local(sqnr["mm1"], sqnr["mm0"])
    assert local["mm1"] == want or math.isclose(local["mm1"], want, rel_tol=1e-12)


def test_a_concat_is_measured_against_its_inputs_and_a_constant_input_is_noiseless(tmp_path):
    """MatMul a, MatMul b -> Concat -> + Reshape(initializer) -> MatMul. The Concat's inputs share its
    grid (the plan aliases them to its output): its local figure is against the worst of a and b, not
    against its own output (which read inf). The Add's second input is a constant computed from an
    initializer (the same in both models): noiseless, not "nan"."""
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), n) for n in ("w0", "w1")]
    inits += [numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "w2"),
              numpy_helper.from_array(np.linspace(-1, 1, 16).astype(np.float32), "bias_flat"),
              numpy_helper.from_array(np.array([1, 16], np.int64), "shape")]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["a"], name="mm0"),
             helper.make_node("MatMul", ["x", "w1"], ["b"], name="mm1"),
             helper.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=1),
             helper.make_node("Reshape", ["bias_flat", "shape"], ["bias"], name="rs"),
             helper.make_node("Add", ["c", "bias"], ["d"], name="add"),
             helper.make_node("MatMul", ["d", "w2"], ["y"], name="mm2")]
    path = _model_and_data(tmp_path, nodes, inits, rng, 4)
    _result, rows, got = _derived(path, tmp_path / "d.npz", api.make_recipe("cpu-u8s8"))
    model = api.open_model(path)
    assert api.plan(model, api.make_recipe("cpu-u8s8")).aliases.get("a") == "c"  # the grid sharing traced
    sqnr = {r.node: r.sqnr_db for r in rows}
    want_cat = _local(sqnr["cat"], min(sqnr["mm0"], sqnr["mm1"]))
    assert got["cat"] == want_cat or math.isclose(got["cat"], want_cat, rel_tol=1e-12)
    up = "add" if "add" in sqnr else "cat"  # the bias Add is a unit, or float and followed through
    assert got["mm2"] != "nan" and (got["mm2"] == _local(sqnr["mm2"], sqnr[up])
                                    or math.isclose(got["mm2"], _local(sqnr["mm2"], sqnr[up]), rel_tol=1e-12))


def test_analyze_with_every_unit_excluded_says_so(corpus, capsys):
    folder = corpus / "digits_cnn"
    assert main(["analyze", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"),
                 "--exclude", "*", "--no-latency-check"]) == 0
    err = capsys.readouterr().err
    assert "note: no unit to measure: every unit is float" in err and "If/Loop" not in err


def test_local_db_limits():
    from workbench.core.analysis.sensitivity import _local_db

    assert _local_db(20.0, []) == pytest.approx(20.0)  # graph input: all the output's noise is its own
    assert _local_db(20.0, [20.0]) == math.inf  # no noisier than its input
    assert _local_db(-math.inf, [30.0]) == -math.inf  # all noise (was: math domain error)
    assert math.isnan(_local_db(math.nan, [30.0]))
    # 1/local = 1/100 - 1/1000 -> 10 log10(1000/9)
    assert _local_db(20.0, [30.0]) == pytest.approx(10 * math.log10(1000 / 9))
