"""The weights vs activations line of ``compare`` / ``analyze`` / ``report``: a weight-only file is
said to be weight-only (it was called "QOperator or dynamic"), the split's sample cap is named and
``--split-samples N`` moves it (0 turns the split off)."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from workbench.cli import main


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


def _sqnr_db(float_path, quant_path, rows: np.ndarray) -> float:
    """Output SQNR (dB) of ``quant_path`` against ``float_path`` on ``rows``, both unfused (ORT_DISABLE_ALL)."""
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref, out = (ort.InferenceSession(str(p), opts, providers=["CPUExecutionProvider"]).run(None, {"input": rows})[0]
                for p in (float_path, quant_path))
    ref, out = ref.astype(np.float64), out.astype(np.float64)
    return 10 * math.log10(np.sum(ref ** 2) / np.sum((ref - out) ** 2))


def test_compare_w4_block_file_is_not_split_as_weight_only(corpus, tmp_path, capsys):
    """Our w4-block file (int4 DequantizeLinear weights + MatMul) is fused by onnxruntime into MatMulNBits at its
    default accuracy_level 4, which quantizes the activations to int8 as it runs (read off its optimized graph
    here): no fixed activation quantization to take out, so no weights-vs-activations split (410f34bd)."""
    mlp = corpus / "digits_mlp"
    model, data = mlp / "model_opset17.onnx", mlp / "calib.npz"
    w4 = tmp_path / "w4.onnx"
    assert main(["quantize", str(model), "--preset", "w4-block", "-o", str(w4)]) == 0
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    ort.InferenceSession(str(w4), so, providers=["CPUExecutionProvider"])
    fused = [n for n in onnx.load(so.optimized_model_filepath).graph.node if n.op_type == "MatMulNBits"]
    assert fused and all(a.i == 4 for n in fused for a in n.attribute if a.name == "accuracy_level")
    capsys.readouterr()
    doc = tmp_path / "diff.json"
    assert main(["compare", str(model), str(w4), "--data", str(data), "--samples", "40", "--split-samples", "12",
                 "--json", str(doc)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("weights vs activations"))
    assert json.loads(doc.read_text())["split"] is None
    assert line.startswith("weights vs activations: not measured (onnxruntime fuses the quantized file's "
                           "DequantizeLinear weights and MatMuls into MatMulNBits at accuracy_level 4")


def test_compare_dynamic_file_says_why_no_split(corpus, tmp_path, capsys):
    mlp = corpus / "digits_mlp"
    model, dyn = mlp / "model_opset17.onnx", tmp_path / "dyn.onnx"
    assert main(["quantize", str(model), "--preset", "dynamic-u8", "-o", str(dyn)]) == 0
    capsys.readouterr()
    assert main(["compare", str(model), str(dyn), "--data", str(mlp / "calib.npz"), "--samples", "8"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "weights vs activations: not measured (the quantized file is dynamic: its activation scales are computed "
        "at run time by DynamicQuantizeLinear, so there is no fixed activation quantization to take out)")


def _split_line(capsys) -> str | None:
    return next((ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("weights vs activations")), None)


def test_analyze_split_samples(corpus, capsys):
    mlp = corpus / "digits_mlp"
    common = ["analyze", str(mlp / "model_opset17.onnx"), "--data", str(mlp / "calib.npz"), "--no-auto",
              "--no-latency-check", "--top", "0"]
    assert main(common) == 0  # the defaults: 32 eval samples, the split's cap of 16
    assert _split_line(capsys).startswith("weights vs activations (on 16 of 32 samples, --split-samples N for "
                                          "more; output SQNR, graph as written): only the weights quantized ")
    assert main([*common, "--eval-samples", "8", "--split-samples", "5"]) == 0
    assert _split_line(capsys).startswith("weights vs activations (on 5 of 8 samples, --split-samples N for more; ")
    assert main([*common, "--eval-samples", "8", "--split-samples", "64"]) == 0
    assert _split_line(capsys).startswith("weights vs activations (on 8 samples; output SQNR")
    assert main([*common, "--eval-samples", "8", "--split-samples", "0"]) == 0
    assert _split_line(capsys) is None


def test_report_split_samples(corpus, tmp_path, capsys):
    mlp = corpus / "digits_mlp"
    out = tmp_path / "r.html"
    assert main(["report", str(mlp / "model_opset17.onnx"), "--data", str(mlp / "calib.npz"), "--no-auto",
                 "--no-latency-check", "--eval-samples", "8", "--split-samples", "3", "-o", str(out)]) == 0
    page = out.read_text()
    assert "Measured on 3 of the 8 samples (the split's cap; report --split-samples N measures more)" in page
    assert main(["report", str(mlp / "model_opset17.onnx"), "--data", str(mlp / "calib.npz"), "--no-auto",
                 "--no-latency-check", "--eval-samples", "8", "--split-samples", "0", "-o", str(out)]) == 0
    assert "Weights or activations?" not in out.read_text()


def test_analyze_weight_only_recipe_says_the_noise_is_the_weights(corpus, capsys):
    mlp = corpus / "digits_mlp"
    assert main(["analyze", str(mlp / "model_opset17.onnx"), "--preset", "w4-block", "--data", str(mlp / "calib.npz"),
                 "--eval-samples", "8", "--top", "0"]) == 0
    assert _split_line(capsys) == ("weights vs activations: the recipe is weight-only (float activations), so all of "
                                   "the output noise comes from the weights (the end-to-end figures above)")


def test_split_line_of_a_model_with_integer_outputs_only(tmp_path, capsys):
    """No float output (an ArgMax label): the split reads no sample, and its line said "(on 0 samples; output
    SQNR, graph as written)" before saying it was not measured."""
    from onnx import TensorProto, helper, numpy_helper

    from workbench.core import api

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(8, 16)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.normal(size=(16, 4)).astype(np.float32), "w2")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w2"], ["logits"], name="mm2"),
             helper.make_node("ArgMax", ["logits"], ["label"], name="argmax", axis=1, keepdims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path, data, quant = tmp_path / "argmax.onnx", tmp_path / "x.npz", tmp_path / "argmax.q.onnx"
    onnx.save(model, str(path))
    np.savez(data, x=rng.normal(size=(20, 8)).astype(np.float32))
    assert main(["quantize", str(path), "--data", str(data), "--no-auto", "-o", str(quant)]) == 0
    capsys.readouterr()
    assert main(["compare", str(path), str(quant), "--data", str(data)]) == 0
    split = api.noise_split(api.open_model(path), api.open_model(quant).proto, str(data))
    assert split.samples == 0
    assert _split_line(capsys) == f"weights vs activations: {split.describe()}"
