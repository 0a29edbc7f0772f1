"""Latency placement: depthwise Conv units whose QLinearConv measured slower than a float Conv
between the same Q/DQ pairs are kept float (the decision read from a seeded cache, so the test
is deterministic), and the probe models compute what the unit computes."""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.issues import IssueCode
from workbench.core.pipeline import latency_check, latency_placement
from workbench.core.runtime import latency
from workbench.core.runtime.unit_latency import conv_probe_models, matmul_probe_models


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency, monkeypatch):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings. The placement's int8 share is
    off: these models have 3 and 6 Conv/MatMul units, of which it would keep none float
    (tests/test_latency_placement_share.py tests the share)."""
    fake_latency.quantized_at(0.5)
    monkeypatch.setattr(latency_placement, "MIN_INT8_SHARE", 0.0)


X_SHAPE = [1, 4, 8, 8]
DW = {"group": 4, "kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}


def _model(tmp_path):
    """conv1 (dense 4->4) -> dw (depthwise 3x3, group 4) -> conv2 (dense 4->4), with calibration data."""
    rng = np.random.default_rng(0)
    w = lambda n, s: numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)  # noqa: E731
    nodes = [helper.make_node("Conv", ["X", "W1", "B1"], ["a"], name="conv1", kernel_shape=[1, 1]),
             helper.make_node("Conv", ["a", "Wd", "Bd"], ["b"], name="dw", **DW),
             helper.make_node("Conv", ["b", "W2", "B2"], ["Y"], name="conv2", kernel_shape=[1, 1])]
    inits = [w("W1", [4, 4, 1, 1]), w("B1", [4]), w("Wd", [4, 1, 3, 3]), w("Bd", [4]), w("W2", [4, 4, 1, 1]),
             w("B2", [4])]
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 4, 8, 8])  # noqa: E731
    m = helper.make_model(helper.make_graph(nodes, "g", [vi("X")], [vi("Y")], inits),
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "m.onnx")
    np.savez(tmp_path / "calib.npz", X=rng.standard_normal((4, 4, 8, 8)).astype(np.float32))
    return api.open_model(str(tmp_path / "m.onnx")), str(tmp_path / "calib.npz")


def _seed_probe(ratio: float) -> None:
    f, q = conv_probe_models(DW, [4, 1, 3, 3], X_SHAPE, True, 17)
    feed = {"x": np.random.default_rng(1).integers(0, 256, size=X_SHAPE, dtype=np.uint8)}
    key = latency.cache_key(f, q, feed, {"session.disable_quant_qdq": "1"})
    root = latency.default_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{key}.json").write_text(json.dumps({"float_s": 1e-4, "quant_s": 1e-4 * ratio, "runs": 9,
                                                  "float_median_s": 1e-4, "quant_median_s": 1e-4 * ratio}))


@pytest.mark.parametrize("ratio,kept_float", [(1.4, True), (0.7, False)])
def test_depthwise_conv_kept_float_only_when_its_int8_kernel_measured_slower(tmp_path, ratio, kept_float):
    model, data = _model(tmp_path)
    _seed_probe(ratio)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    notes = [i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT]
    assert [i.node for i in notes] == (["dw"] if kept_float else [])
    if kept_float:
        assert f"{ratio:.2f}x" in notes[0].message and str(X_SHAPE) in notes[0].message
        # the unit and its ratio as fields, which a saved project's latency_kept reads (not the message)
        assert notes[0].units == ("dw",) and notes[0].ratio == pytest.approx(ratio)
    assert res.plan.units["dw"].excluded == kept_float
    # the measured decision is part of the result's recipe: replayed without measuring, same bytes
    assert ("dw" in res.recipe.overrides) == kept_float
    replay = api.quantize(model, res.recipe, data=data)
    assert replay.proto.SerializeToString() == res.proto.SerializeToString()
    assert not res.plan.units["conv1"].excluded and not res.plan.units["conv2"].excluded
    # without the latency check the plan is the recipe's, whatever the cache holds
    plain = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    assert not plain.plan.units["dw"].excluded
    # the written model really runs dw as a float Conv when kept float; its output stays float (the
    # planner's rule for excluded Convs), so conv2 reads a float input too and only conv1 stays QLinearConv
    with tempfile.TemporaryDirectory() as d:
        so = ort.SessionOptions()
        so.optimized_model_filepath = os.path.join(d, "opt.onnx")
        ort.InferenceSession(res.proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
        ops = [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]
    assert ops.count("QLinearConv") == (1 if kept_float else 3)


def test_probe_models_compute_the_conv_and_fuse_as_described():
    f, q = conv_probe_models(DW, [4, 1, 3, 3], X_SHAPE, True, 17)
    x = np.random.default_rng(3).integers(0, 256, size=X_SHAPE, dtype=np.uint8)
    opts = ort.SessionOptions()
    opts.add_session_config_entry("session.disable_quant_qdq", "1")
    ref = ort.InferenceSession(f, opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ort.InferenceSession(q, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert ref.dtype == got.dtype == np.uint8 and ref.shape == got.shape == tuple(X_SHAPE)
    # int8 weights (127 levels per channel) move an output by at most a few steps of its grid
    assert np.max(np.abs(ref.astype(int) - got.astype(int))) <= 3 and np.mean(ref != got) < 0.5
    with tempfile.TemporaryDirectory() as d:
        for model, config, want in ((q, None, "QLinearConv"), (f, "1", "Conv")):
            so = ort.SessionOptions()
            if config:
                so.add_session_config_entry("session.disable_quant_qdq", config)
            so.optimized_model_filepath = os.path.join(d, "o.onnx")
            ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
            ops = [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]
            assert want in ops and ({"QLinearConv"} & set(ops)) == ({"QLinearConv"} if want == "QLinearConv" else set())


def _attention(tmp_path):
    from qdq_helpers import attention_model

    onnx.save(attention_model(None), tmp_path / "attn.onnx")
    np.savez(tmp_path / "calib.npz", X=np.random.default_rng(2).standard_normal((4, 8, 16)).astype(np.float32))
    return api.open_model(str(tmp_path / "attn.onnx")), str(tmp_path / "calib.npz")


def _seed_matmul(a_shape, b_shape, quantized_output: bool, ratio: float) -> None:
    f, q = matmul_probe_models(a_shape, b_shape, quantized_output, 17)
    rng = np.random.default_rng(1)
    feed = {"a": rng.standard_normal(a_shape).astype(np.float32), "b": rng.standard_normal(b_shape).astype(np.float32)}
    root = latency.default_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{latency.cache_key(f, q, feed)}.json").write_text(json.dumps(
        {"float_s": 1e-4, "quant_s": 1e-4 * ratio, "runs": 9, "float_median_s": 1e-4, "quant_median_s": 1e-4 * ratio}))


def test_activation_matmul_kept_float_only_when_its_quantized_form_measured_slower(tmp_path):
    """Q Kᵀ measured slower quantized (1.3x) is kept float; P V (0.8x) stays quantized; the MatMuls
    with weights are never probed. Shapes from the first calibration sample (batch 1)."""
    model, data = _attention(tmp_path)
    recipe = api.make_recipe("cpu-u8s8")
    plan = api.plan(model, recipe)
    _seed_matmul([1, 8, 16], [1, 16, 8], bool(plan.units["qk"].outputs), 1.3)
    _seed_matmul([1, 8, 8], [1, 8, 16], bool(plan.units["pv"].outputs), 0.8)
    res = api.quantize(model, recipe, data=data, latency_check=True)
    notes = [i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT]
    assert [i.node for i in notes] == ["qk"]
    assert "1.30x" in notes[0].message and "[1, 8, 16] x [1, 16, 8]" in notes[0].message
    assert res.plan.units["qk"].excluded and not res.plan.units["pv"].excluded
    assert not any(res.plan.units[n].excluded for n in ("q_proj", "k_proj", "v_proj", "o_proj"))
    # Q and Kt, read only by the float qk, lose their pairs (q_proj writes float)
    assert {"Q", "Kt", "K"}.isdisjoint(res.plan.activations) and res.plan.units["q_proj"].float_outputs == ["Q"]
    assert ("qk" in res.recipe.overrides) and api.quantize(model, res.recipe, data=data).proto == res.proto


@pytest.mark.parametrize("quantized_output,kernel", [(False, "MatMulIntegerToFloat"), (True, "QLinearMatMul")])
def test_matmul_probe_models_compute_the_matmul_and_fuse_as_described(quantized_output, kernel):
    a_shape, b_shape = [1, 4, 8, 16], [1, 4, 16, 8]
    f, q = matmul_probe_models(a_shape, b_shape, quantized_output, 17)
    rng = np.random.default_rng(5)
    feed = {"a": rng.uniform(-2, 2, a_shape).astype(np.float32), "b": rng.uniform(-2, 2, b_shape).astype(np.float32)}
    ref = ort.InferenceSession(f, providers=["CPUExecutionProvider"]).run(None, feed)[0]
    got = ort.InferenceSession(q, providers=["CPUExecutionProvider"]).run(None, feed)[0]
    np.testing.assert_allclose(ref, feed["a"] @ feed["b"], rtol=1e-5, atol=1e-4)
    # inputs on a 0.02 grid: each product term moves by at most 0.01 * (|a| + |b|) <= 0.04, 16 terms;
    # a quantized output (same 0.02 step, clipped at 2.54) is clipped, so only the error inside the grid is bounded
    inside = np.abs(ref) < 2.5
    assert np.max(np.abs(got - ref)[inside]) <= 16 * 0.04 + 0.01 and got.shape == ref.shape == (1, 4, 8, 8)
    with tempfile.TemporaryDirectory() as d:
        so = ort.SessionOptions()
        so.optimized_model_filepath = os.path.join(d, "o.onnx")
        ort.InferenceSession(q, so, providers=["CPUExecutionProvider"])
        ops = [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]
    assert kernel in ops and "MatMul" not in ops


def test_a_placement_that_costs_output_sqnr_is_undone(tmp_path, monkeypatch):
    """The probe keeps dw float; the guard then measures both models (here: the placed one 10 dB, the one
    without the placement 20 dB) and keeps the recipe's placement, reported, with no exclusion recorded."""
    from workbench.core.pipeline import placement_guard

    model, data = _model(tmp_path)
    _seed_probe(1.4)
    measured = []

    def sqnr(float_model, quant_model, feeds, **_):
        dw = next(n for n in quant_model.graph.node if n.name == "dw")
        placed = dw.input[1] == "Wd"  # the float weight: dw kept float
        measured.append((placed, len(feeds)))
        return 10.0 if placed else 20.0

    monkeypatch.setattr(placement_guard, "output_sqnr", sqnr)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    assert sorted(measured) == [(False, 4), (True, 4)]  # the 4 calibration samples, both models
    undone = [i for i in res.issues if i.code == IssueCode.PLACEMENT_UNDONE]
    assert [i.node for i in undone] == ["dw"] and "from 20.0 to 10.0 dB" in undone[0].message
    assert not [i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT]
    assert not res.plan.units["dw"].excluded and "dw" not in res.recipe.overrides
    plain = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    assert res.proto.SerializeToString() == plain.proto.SerializeToString()
    assert ("placement-guard", True) in res.passes


def test_the_placement_note_survives_a_latency_fallback(tmp_path, monkeypatch):
    """A new user saw ppocr_mobile_v2_cls's depthwise Convs kept float without a word: the fallback
    replaced the first run's issues by its trial's, whose recipe already kept them float."""
    model, data = _model(tmp_path)
    _seed_probe(1.4)  # dw measured slower as int8: the placement keeps it float

    def compare(float_model, quant_model, feed, **_):
        dq = {o for n in quant_model.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
        quantized = [n.name for n in quant_model.graph.node if n.op_type == "Conv" and n.input[1] in dq]
        ratio = 1.5 if len(quantized) == 2 else 0.9  # as planned: slower; with an island float: faster
        return latency.LatencyComparison(1e-3, 1e-3 * ratio, 9, 1e-3, 1e-3 * ratio)

    monkeypatch.setattr(latency_check, "compare", compare)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    kept = [i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT]
    assert ("latency-fallback", True) in res.passes
    assert [i.node for i in kept if "as QLinearConv it measured 1.40x" in i.message] == ["dw"]
    assert [i.node for i in kept if i.severity == "warning"] == ["conv1"]  # the fallback's own island
    assert res.plan.units["dw"].excluded
