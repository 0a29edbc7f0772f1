"""analyze --node-data: Model Explorer node data whose ids are those of its ONNX adapter.

The model has the names that make ids differ from our own node names: unnamed nodes (we call
them ``<op>_<k>``, onnx_ir's NameFixPass ``node``, ``node_1``...), a name two nodes share, and a
node literally called ``node`` that the pass renames because an unnamed node took ``node`` first.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from model_explorer_onnx.main import ONNXAdapter
from onnx import helper, numpy_helper

from workbench import cli
from workbench.core import api


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


def _conv(name, x, y, w):
    return helper.make_node("Conv", [x, w], [y], name=name, pads=[1, 1, 1, 1])


def _model(path):
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array((rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32), f"w{i}")
             for i in range(4)]
    nodes = [_conv("", "x", "a", "w0"), helper.make_node("Relu", ["a"], ["b"], name="blk"),
             _conv("blk", "b", "c", "w1"), helper.make_node("Relu", ["c"], ["d"], name="node"),
             _conv("", "d", "e", "w2"), helper.make_node("Sigmoid", ["e"], ["f"]),
             _conv("last", "f", "y", "w3")]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "g", [vi("x", onnx.TensorProto.FLOAT, [1, 4, 8, 8])],
                          [vi("y", onnx.TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    np.savez(path.with_suffix(".npz"), x=rng.standard_normal((6, 4, 8, 8)).astype(np.float32))


def _adapter_op_nodes(path):
    """(graph id, ids of the op nodes in file order, id -> label) from the adapter itself."""
    graph = ONNXAdapter().convert(str(path), {})["graphs"][0]
    n_inputs = 1
    ops = graph.nodes[n_inputs: n_inputs + len(onnx.load(str(path)).graph.node)]
    return graph.id, [n.id for n in ops], {n.id: n.label for n in graph.nodes}


def test_ids_equal_the_onnx_adapter_ids(tmp_path):
    path = tmp_path / "m.onnx"
    _model(path)
    graph_id, ids, _ = _adapter_op_nodes(path)
    ours = api.explorer_ids(path)
    assert (ours.graph_id, ours.node_ids) == (graph_id, ids)
    assert "node" in ours.by_name and ours.by_name["node"] != "node"  # renamed by the adapter's pass
    assert "blk" not in ours.by_name  # shared: found by output tensor instead
    assert ours.find("blk", "c") == ids[2] and ours.find("", "a") == ids[0]


def test_cli_node_data_has_every_unit_under_its_adapter_id(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    _model(path)
    out, rows_json = tmp_path / "nd.json", tmp_path / "rows.json"
    # --no-auto: the preset as it is (the recipe choice may keep a unit float; this test is of the ids)
    assert cli.main(["analyze", str(path), "--data", str(path.with_suffix(".npz")), "--json", str(rows_json),
                     "--node-data", str(out), "--no-auto"]) == 0
    rows = json.loads(rows_json.read_text())
    graph_id, ids, labels = _adapter_op_nodes(path)
    sqnr = json.loads((tmp_path / "nd.sqnr.json").read_text())[graph_id]
    sens = json.loads((tmp_path / "nd.sensitivity.json").read_text())[graph_id]
    assert not out.exists()
    assert len(rows) == len(sqnr["results"]) == len(sens["results"]) == 4  # the four Conv units
    assert set(sqnr["results"]) == {ids[0], ids[2], ids[4], ids[6]}
    assert {labels[k] for k in sqnr["results"]} == {"Conv"}
    # values are the rows' SQNR; the first unit's local SQNR is its output SQNR (its input is the graph input)
    # (Conv and Relu form one unit, measured at the Relu's output, shown on the Conv)
    by_tensor = {r["tensor"]: r for r in rows}
    assert sqnr["results"][ids[0]]["value"] == pytest.approx(by_tensor["b"]["sqnr_db"], abs=1e-4)
    assert sqnr["results"][ids[2]]["value"] == pytest.approx(by_tensor["d"]["sqnr_db"], abs=1e-4)
    assert sqnr["results"][ids[6]]["value"] == pytest.approx(by_tensor["y"]["sqnr_db"], abs=1e-4)
    assert sens["results"][ids[0]]["value"] == pytest.approx(by_tensor["b"]["sqnr_db"], abs=1e-4)
    assert sqnr["gradient"][0]["stop"] == 0 and sqnr["gradient"][-1]["stop"] == 1
    assert "4 nodes of graph 'g'" in capsys.readouterr().err



def test_node_data_paths_onto_an_input_or_another_output_refused_before_work(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    _model(path)
    data = str(path.with_suffix(".npz"))
    recipe = tmp_path / "r.sqnr.json"
    recipe.write_text('{"preset": "cpu-u8s8"}')
    assert cli.main(["analyze", str(path), "--data", data, "--recipe", str(recipe),
                     "--node-data", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert "r.sqnr.json: this is an input file" in err and "Calibrating" not in err
    assert recipe.read_text() == '{"preset": "cpu-u8s8"}'
    assert cli.main(["analyze", str(path), "--data", data, "--json", str(tmp_path / "o.sensitivity.json"),
                     "--node-data", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert "o.sensitivity.json: written by --node-data and given as --json" in err
    assert not list(tmp_path.glob("o.*"))
