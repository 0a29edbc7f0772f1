"""Latency placement beyond depthwise Convs: a Conv that reads one input channel (a grayscale stem) and an
AveragePool are probed, and kept float when their integer kernel measured slower (probes replaced by fixed
ratios: no timing in the test); a dense Conv is never probed. The written model's kernels are counted after
onnxruntime's optimizations, and the pool probe computes the AveragePool it stands for."""

from __future__ import annotations

import os
import tempfile
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.issues import IssueCode
from workbench.core.pipeline import latency_check, latency_placement
from workbench.core.runtime.latency import LatencyComparison
from workbench.core.runtime.unit_latency import pool_probe_models

POOL = {"kernel_shape": [2, 2], "strides": [2, 2]}


def _model(tmp_path):
    """stem (Conv 1->4, 3x3) -> Relu -> conv (Conv 4->8, 3x3) -> Relu -> pool (AveragePool 2x2) -> Flatten -> fc
    (Gemm 32->10), input [N, 1, 4, 4], with calibration data."""
    rng = np.random.default_rng(0)
    w = lambda n, s: numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)  # noqa: E731
    nodes = [helper.make_node("Conv", ["X", "W1", "B1"], ["a"], name="stem", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ar"], name="relu1"),
             helper.make_node("Conv", ["ar", "W2", "B2"], ["b"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["b"], ["br"], name="relu2"),
             helper.make_node("AveragePool", ["br"], ["p"], name="pool", **POOL),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "W3", "B3"], ["Y"], name="fc", transB=1)]
    inits = [w("W1", [4, 1, 3, 3]), w("B1", [4]), w("W2", [8, 4, 3, 3]), w("B2", [8]), w("W3", [10, 32]), w("B3", [10])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 1, 4, 4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 10])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "m.onnx")
    np.savez(tmp_path / "calib.npz", X=rng.uniform(0, 1, (6, 1, 4, 4)).astype(np.float32))
    return api.open_model(str(tmp_path / "m.onnx")), str(tmp_path / "calib.npz")


def _optimized_ops(proto: onnx.ModelProto) -> Counter:
    with tempfile.TemporaryDirectory() as d:
        so = ort.SessionOptions()
        so.optimized_model_filepath = os.path.join(d, "opt.onnx")
        ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return Counter(n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node)


def _fixed(ratio: float) -> LatencyComparison:
    return LatencyComparison(float_s=1e-4, quant_s=1e-4 * ratio, runs=9, float_median_s=1e-4,
                             quant_median_s=1e-4 * ratio)


@pytest.mark.parametrize("ratio", [1.2, 0.8])
def test_single_channel_conv_and_average_pool_are_probed_and_kept_float_when_slower(tmp_path, monkeypatch, ratio):
    model, data = _model(tmp_path)
    probed = []

    def conv_probe(node, w_shape, x_shape, opset):
        probed.append((node.name, w_shape, x_shape))
        return _fixed(ratio)

    def pool_probe(node, x_shape, opset):
        probed.append((node.name, None, x_shape))
        return _fixed(ratio)

    monkeypatch.setattr(latency_placement, "conv_unit_latency", conv_probe)
    monkeypatch.setattr(latency_placement, "pool_unit_latency", pool_probe)
    monkeypatch.setattr(latency_check, "compare", lambda f, q, feed, **k: _fixed(0.5))  # no fallback
    # the int8 share off: of 3 Conv/Gemm units it keeps none float (tests/test_latency_placement_share.py)
    monkeypatch.setattr(latency_placement, "MIN_INT8_SHARE", 0.0)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    # the stem (one input channel) and the pool at their shapes on the first calibration sample; the dense
    # Conv (4 input channels) is not probed
    assert sorted(probed) == [("pool", None, [1, 8, 4, 4]), ("stem", [4, 1, 3, 3], [1, 1, 4, 4])]
    slow = ratio > latency_placement.KEEP_FLOAT_ABOVE
    notes = {i.node: i.message for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT}
    assert sorted(notes) == (["pool", "stem"] if slow else [])
    if slow:
        assert "as QLinearAveragePool it measured 1.20x" in notes["pool"] and "[1, 8, 4, 4]" in notes["pool"]
        assert "as QLinearConv it measured 1.20x" in notes["stem"] and "[1, 1, 4, 4]" in notes["stem"]
    assert [n for n in ("stem", "conv", "pool", "fc") if res.plan.units[n].excluded] == (["stem", "pool"] if slow
                                                                                          else [])
    ops = _optimized_ops(res.proto)
    # kept float: the stem runs as a float Conv, the pool as a float AveragePool between a DQ and a Q
    assert ops["QLinearConv"] == (1 if slow else 2) and ops["QLinearAveragePool"] == (0 if slow else 1)
    assert ops["Conv"] == (1 if slow else 0) and ops["AveragePool"] == (1 if slow else 0) and ops["QGemm"] == 1
    # the measured decision is in the result's recipe: replayed without probing, the same model
    replay = api.quantize(model, res.recipe, data=data)
    assert replay.proto.SerializeToString() == res.proto.SerializeToString()


def test_pool_probe_computes_the_average_pool_and_fuses_as_described():
    shape = [1, 8, 4, 6]
    f, q = pool_probe_models(POOL, shape)
    assert f == q  # one model: the float side is its session without QDQ fusion
    x = np.random.default_rng(3).integers(0, 256, size=shape, dtype=np.uint8)
    xf = (x.astype(np.float32) - 128) * 0.02
    want = xf.reshape(1, 8, 2, 2, 3, 2).mean(axis=(3, 5))
    want = np.clip(np.rint(want / 0.02) + 128, 0, 255).astype(np.uint8)
    with tempfile.TemporaryDirectory() as d:
        for config, kernel in ((None, "QLinearAveragePool"), ("1", "AveragePool")):
            so = ort.SessionOptions()
            if config:
                so.add_session_config_entry("session.disable_quant_qdq", config)
            so.optimized_model_filepath = os.path.join(d, "o.onnx")
            got = ort.InferenceSession(f, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
            ops = [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]
            assert kernel in ops and ("QLinearAveragePool" in ops) == (kernel == "QLinearAveragePool")
            assert got.dtype == np.uint8 and got.shape == (1, 8, 2, 3)
            assert np.max(np.abs(got.astype(int) - want.astype(int))) <= 1  # rounding of the mean
