"""``analyze``'s local SQNR column: the noise a unit adds itself, from the noise-to-signal ratios of its
output and of the unit upstream, followed through MaxPool / Flatten (digits_cnn, real data)."""

from __future__ import annotations

import json
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


def test_local_column_follows_the_chain_through_maxpool_and_flatten(corpus, tmp_path, capsys):
    folder = corpus / "digits_cnn"
    out = tmp_path / "rows.json"
    assert main(["analyze", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"),
                 "--no-auto", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "SQNR dB local dB" in text and "local: the noise the unit adds itself" in text
    rows = {r["node"]: r for r in json.loads(out.read_text())}
    sqnr = {n: r["sqnr_db"] for n, r in rows.items()}
    got = {n: (math.inf if r["local_sqnr_db"] == "inf" else r["local_sqnr_db"]) for n, r in rows.items()}
    # Conv -> Relu -> Conv -> Relu -> MaxPool -> Conv -> Relu -> AveragePool -> Flatten -> Gemm
    upstream = {"/f/f.3/Conv": "/f/f.0/Conv", "/f/f.7/Conv": "/f/f.3/Conv",  # through the MaxPool
                "/f/f.9/AveragePool": "/f/f.7/Conv", "/head/head.2/Gemm": "/f/f.9/AveragePool"}  # and Flatten
    assert got["/f/f.0/Conv"] == sqnr["/f/f.0/Conv"]  # reads the graph input: all its noise is its own
    for node, up in upstream.items():
        want = _local(sqnr[node], sqnr[up])
        assert got[node] == want or math.isclose(got[node], want, rel_tol=1e-12), node
    assert math.isfinite(got["/f/f.3/Conv"]) and got["/f/f.3/Conv"] > sqnr["/f/f.3/Conv"]


def test_an_input_from_float_nodes_has_no_local_figure(tmp_path, capsys):
    """Two MatMuls -> Add (float: only MatMul is quantized) of both -> MatMul: the Add mixes two noisy
    tensors, whose noise the pass does not measure, so the last MatMul's local figure is NaN ("nan" in
    the JSON) instead of charging it with the noise upstream. A bias Add with one noisy input is followed
    through to the MatMul before it."""
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
    recipe = tmp_path / "r.json"
    recipe.write_text('{"preset": "cpu-u8s8", "op_types": ["MatMul"]}')
    out = tmp_path / "rows.json"
    assert main(["analyze", str(path), "--recipe", str(recipe), "--data", str(tmp_path / "d.npz"),
                 "--no-latency-check", "--json", str(out)]) == 0
    rows = {r["node"]: r for r in json.loads(out.read_text())}
    assert rows["mm2"]["local_sqnr_db"] == "nan"
    assert rows["mm0"]["local_sqnr_db"] == rows["mm0"]["sqnr_db"]  # reads the graph input
    sqnr = {n: r["sqnr_db"] for n, r in rows.items()}
    want = _local(sqnr["mm3"], sqnr["mm2"])  # through the bias Add
    got = rows["mm3"]["local_sqnr_db"]
    assert got == "inf" if want == math.inf else math.isclose(got, want, rel_tol=1e-12)
    assert "nan: an input comes from a float node that mixes noisy tensors" in capsys.readouterr().out


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
    out = tmp_path / "rows.json"
    assert main(["analyze", str(path), "--data", str(tmp_path / "d.npz"), "--no-auto", "--no-latency-check",
                 "--json", str(out)]) == 0
    rows = {r["node"]: r for r in json.loads(out.read_text())}
    model = api.open_model(path)
    assert api.plan(model, api.make_recipe("cpu-u8s8")).aliases.get("a") == "c"  # the grid sharing traced
    sqnr = {n: r["sqnr_db"] for n, r in rows.items()}
    got = {n: (math.inf if r["local_sqnr_db"] == "inf" else r["local_sqnr_db"]) for n, r in rows.items()}
    want_cat = _local(sqnr["cat"], min(sqnr["mm0"], sqnr["mm1"]))
    assert got["cat"] == want_cat or math.isclose(got["cat"], want_cat, rel_tol=1e-12)
    up = "add" if "add" in rows else "cat"  # the bias Add is a unit, or float and followed through
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
