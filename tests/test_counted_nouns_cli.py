"""Counts of 1 in ``inspect``, ``evaluate``, ``analyze`` and ``sweep`` take the singular: they printed
"weights: 1 initializers", "units: 1 quantizable node units", "subgraph: branch/else_branch (1 nodes)"
(case 20), "1 samples in 0.01 s" (``evaluate --samples 1``), "end to end (1 samples, ..." and
"(1 samples; fake-quantized" (``analyze`` / ``sweep --eval-samples 1``), "1 nodes of graph" (``--node-data``)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """Quantized at half the float latency (conftest's fake clock): nothing here depends on this machine."""
    fake_latency.quantized_at(0.5)


def _one_conv(folder) -> tuple[str, str]:
    """x[N,3,8,8] -> Conv(W 4x3x3x3) -> y, and 8 rows of data for it: one initializer, one node unit."""
    w = numpy_helper.from_array(RNG.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 6, 6])], [w])
    model, data = folder / "m.onnx", folder / "calib.npz"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), model)
    np.savez(data, x=RNG.normal(0, 1, (8, 3, 8, 8)).astype(np.float32))
    return str(model), str(data)


def _if_of_one_node_branches(path) -> str:
    """An If whose branches hold one node each (Relu / Neg of the outer x)."""
    def branch(op: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node(op, ["x"], ["b"], name=op.lower())], op.lower(), [],
                                 [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 4])])
    node = helper.make_node("If", ["c"], ["y"], name="branch", then_branch=branch("Relu"), else_branch=branch("Neg"))
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def test_inspect_counts_one_in_the_singular(tmp_path, capsys):
    model, _ = _one_conv(tmp_path)
    assert main(["inspect", model, "--units"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "weights:     1 initializer, 108 values, 0.00 MB in initializers" in lines
    assert "units:       1 quantizable node unit with cpu-u8s8: Conv 1" in lines
    assert main(["inspect", _if_of_one_node_branches(tmp_path / "if.onnx")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "nodes:       3 (1 in the main graph, 2 subgraphs)" in lines
    assert "subgraph:    branch/then_branch (1 node)" in lines and "subgraph:    branch/else_branch (1 node)" in lines


def test_one_sample_in_evaluate_analyze_and_sweep(tmp_path, capsys):
    model, data = _one_conv(tmp_path)
    quant = str(tmp_path / "m.int8.onnx")
    assert main(["quantize", model, "--data", data, "--no-auto", "-o", quant]) == 0
    capsys.readouterr()
    assert main(["evaluate", model, quant, "--data", data, "--samples", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("1 sample in ")
    assert main(["analyze", model, "--data", data, "--no-auto", "--eval-samples", "1",
                 "--node-data", str(tmp_path / "nd.json")]) == 0
    out, err = capsys.readouterr()
    assert "end to end (1 sample, as `evaluate` measures it): measured with onnxruntime" in out
    assert f"Model Explorer node data (sqnr, 1 node of graph 'g'): {tmp_path / 'nd.sqnr.json'}" in err
    assert main(["sweep", model, "--data", data, "--no-auto", "--eval-samples", "1"]) == 0
    out = capsys.readouterr().out
    assert "the quantized model (1 unit quantized): " in out and " dB output SQNR (1 sample; fake-quantized" in out
