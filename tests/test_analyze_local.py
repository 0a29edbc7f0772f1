"""``analyze``'s local SQNR column: the noise a unit adds itself, from the noise-to-signal ratios of its
output and of the unit upstream, followed through MaxPool / Flatten (digits_cnn, real data)."""

from __future__ import annotations

import json
import math

from workbench.cli import main


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
    """MatMul -> Add (float: only MatMul is quantized) -> MatMul: the second MatMul's input noise is not
    measured, so its local figure is NaN ("nan" in the JSON) instead of charging it with mm1's noise."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(9)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), n) for n in ("w1", "w2")]
    inits.append(numpy_helper.from_array(np.full((8,), 0.5, np.float32), "b"))
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["a"], name="mm1"),
             helper.make_node("Add", ["a", "b"], ["c"], name="add"),
             helper.make_node("MatMul", ["c", "w2"], ["y"], name="mm2")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])], inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    np.savez(tmp_path / "d.npz", x=rng.standard_normal((16, 8)).astype(np.float32))
    recipe = tmp_path / "r.json"
    recipe.write_text('{"preset": "cpu-u8s8", "op_types": ["MatMul"]}')
    out = tmp_path / "rows.json"
    assert main(["analyze", str(path), "--recipe", str(recipe), "--data", str(tmp_path / "d.npz"),
                 "--json", str(out)]) == 0
    rows = {r["node"]: r for r in json.loads(out.read_text())}
    assert rows["mm2"]["local_sqnr_db"] == "nan"
    assert rows["mm1"]["local_sqnr_db"] == rows["mm1"]["sqnr_db"]  # reads the graph input
    assert "nan: an input comes from float nodes" in capsys.readouterr().out
