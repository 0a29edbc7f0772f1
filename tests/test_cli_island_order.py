"""The note on element-wise nodes kept in float lists them in graph order: ``quantize`` found some islands
before the latency placement and the rest after it (a Conv it kept float leaves its element-wise neighbour
reaching no integer kernel), and printed them in that order; the project's replay finds them all at once
and printed another order of the same nodes."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core.pipeline import latency_check, latency_placement
from workbench.core.runtime.latency import LatencyComparison

ISLAND = "element-wise nodes kept in float"


def _model(tmp_path):
    """X -> pre (Mul) -> stem (Conv 1->4, one input channel: probed) -> Relu -> conv (Conv 4->8) -> Relu ->
    Flatten -> fc (Gemm) -> Y, and a side branch S -> side_add (Add) -> side_mul (Mul) -> Z reaching no compute
    node; ``pre`` comes first in the graph."""
    rng = np.random.default_rng(0)
    w = lambda n, s: numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)  # noqa: E731
    nodes = [helper.make_node("Mul", ["X", "k"], ["xs"], name="pre"),
             helper.make_node("Conv", ["xs", "W1", "B1"], ["a"], name="stem", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ar"], name="relu1"),
             helper.make_node("Conv", ["ar", "W2", "B2"], ["b"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["b"], ["br"], name="relu2"),
             helper.make_node("Flatten", ["br"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "W3", "B3"], ["Y"], name="fc", transB=1),
             helper.make_node("Add", ["S", "c"], ["s1"], name="side_add"),
             helper.make_node("Mul", ["s1", "k2"], ["Z"], name="side_mul")]
    inits = [w("W1", [4, 1, 3, 3]), w("B1", [4]), w("W2", [8, 4, 3, 3]), w("B2", [8]), w("W3", [10, 128]),
             w("B3", [10]), numpy_helper.from_array(np.float32(1.5), "k"), numpy_helper.from_array(np.float32(0.5), "c"),
             numpy_helper.from_array(np.float32(2.0), "k2")]
    f = TensorProto.FLOAT
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", f, ["N", 1, 4, 4]),
                                           helper.make_tensor_value_info("S", f, ["N", 6])],
                              [helper.make_tensor_value_info("Y", f, ["N", 10]),
                               helper.make_tensor_value_info("Z", f, ["N", 6])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "m.onnx")
    np.savez(tmp_path / "calib.npz", X=rng.uniform(0, 1, (6, 1, 4, 4)).astype(np.float32),
             S=rng.uniform(-1, 1, (6, 6)).astype(np.float32))
    return tmp_path / "m.onnx", tmp_path / "calib.npz"


def _fixed(ratio: float) -> LatencyComparison:
    return LatencyComparison(float_s=1e-4, quant_s=1e-4 * ratio, runs=9, float_median_s=1e-4,
                             quant_median_s=1e-4 * ratio)


def _island_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if ISLAND in line]


def test_quantize_and_its_replay_list_the_islands_in_graph_order(tmp_path, monkeypatch, capsys):
    model, data = _model(tmp_path)
    monkeypatch.setattr(latency_placement, "conv_unit_latency", lambda node, w, x, opset: _fixed(1.2))
    monkeypatch.setattr(latency_placement, "MIN_INT8_SHARE", 0.0)  # of 3 Conv/Gemm units it would keep none float
    monkeypatch.setattr(latency_check, "compare", lambda f, q, feed, **k: _fixed(0.5))  # no fallback
    project = tmp_path / "p.wbproj"
    assert main(["quantize", str(model), "--data", str(data), "--no-auto", "-o", str(tmp_path / "q.onnx"),
                 "--save-project", str(project)]) == 0
    first = _island_lines(capsys.readouterr().err)
    assert main(["quantize", str(project), "-o", str(tmp_path / "r.onnx")]) == 0
    replay = _island_lines(capsys.readouterr().err)
    assert first == replay == ["note: 3 element-wise nodes kept in float (pre, side_add, side_mul): they reach no "
                               "quantized Conv/MatMul/Gemm, so onnxruntime gains no integer kernel and quantizing "
                               "them would only add rounding; name a node in an override to quantize it anyway"]
