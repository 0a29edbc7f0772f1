"""``cost`` of an already-quantized file counts it as written: the bits of its integer tensors, and the bits
onnxruntime computes each node at (8 x 8 where it runs an integer kernel, 32 x 32 where it runs
DequantizeLinear and a float kernel). It refused such a file before ("already quantized")."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from qdq_helpers import cli_quantized

from workbench.cli import main


def _cost_json(capsys, argv: list[str]) -> dict:
    assert main(["cost", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _optimized_ops(path, tmp_path) -> list[str]:
    """Op types of the graph onnxruntime (CPU, default optimizations) runs for ``path``."""
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]


def test_cost_of_a_qdq_file_counts_its_int8_kernels(corpus, tmp_path, capsys):
    q = cli_quantized(corpus, "digits_cnn", tmp_path / "q.onnx", "--no-auto", "--no-latency-check", capsys=capsys)
    doc = _cost_json(capsys, [str(q)])
    float_doc = _cost_json(capsys, [str(corpus / "digits_cnn" / "model_opset17.onnx"), "--preset", "cpu-u8s8"])
    proto = onnx.load(q)
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    dq_of = {n.output[0]: inits[n.input[0]] for n in proto.graph.node
             if n.op_type == "DequantizeLinear" and n.input[0] in inits}
    compute = [n for n in proto.graph.node if n.op_type in ("Conv", "Gemm")]
    assert [r["node"] for r in doc["rows"]] == [n.name for n in compute]
    # every row as the file holds it: uint8 activations, int8 weights, int32 bias
    for r, n in zip(doc["rows"], compute, strict=True):
        w, b = dq_of[n.input[1]], dq_of[n.input[2]]
        assert (w.dtype, b.dtype) == (np.int8, np.int32)
        assert (r["weight_bits"], r["activation_bits"], r["kernel_bits"]) == (8, 8, [8, 8])
        assert (r["weight_params"], r["bias_params"]) == (w.size, b.size)
        assert r["memory_bits"] == w.size * 8 + b.size * 32
    # onnxruntime runs each of them on an integer kernel
    ops = _optimized_ops(q, tmp_path)
    assert ops.count("QLinearConv") + ops.count("QGemm") == len(compute) and "Conv" not in ops
    # the same MACs as the float model, and the figures of the recipe that wrote it
    assert doc["totals"] == float_doc["totals"]
    assert doc["totals"]["bops_kernel"] == doc["totals"]["macs"] * 64 == 38_502_400
    assert doc["recipe"] is None and doc["as_written"].startswith("q.onnx is already quantized (QDQ: 3 Conv uint8/int8, "
                                                                  "1 Gemm uint8/int8)")


def test_cost_of_a_16_bit_file_runs_float_kernels(corpus, tmp_path, capsys):
    q = cli_quantized(corpus, "digits_mlp", tmp_path / "q16.onnx", "--preset", "a16w8", "--no-auto",
                      "--no-latency-check", capsys=capsys)
    assert main(["cost", str(q)]) == 0
    out = capsys.readouterr().out
    doc = _cost_json(capsys, [str(q)])
    assert [(r["weight_bits"], r["activation_bits"], r["kernel_bits"]) for r in doc["rows"]] == [(8, 16, [32, 32])] * 3
    assert not any(op.startswith("QLinear") or op == "QGemm" for op in _optimized_ops(q, tmp_path))
    t = doc["totals"]
    assert t["bops"] * 8 == t["bops_float"] == t["bops_kernel"] == t["macs"] * 1024
    lines = [line for line in out.splitlines() if line.startswith("as written:")]
    assert lines == [f"as written: BOPs / 8.0 (as onnxruntime runs them: / 1.0), weight memory "
                     f"{t['memory_float_bits'] / 8e6:.3f} MB -> {t['memory_bits'] / 8e6:.3f} MB (batch 1)"]


def test_cost_of_a_dynamic_integer_file_counts_its_integer_kernels(corpus, capsys):
    path = corpus / "ddddocr_common_old_int8" / "model.onnx"
    proto = onnx.load(path, load_external_data=False)
    convs = [n for n in proto.graph.node if n.op_type == "ConvInteger"]
    inits = {i.name: i for i in proto.graph.initializer}
    doc = _cost_json(capsys, [str(path), "--data", str(path.parent / "calib.npz")])
    rows = {r["node"]: r for r in doc["rows"]}
    assert len(convs) == 21 and all(n.name in rows for n in convs)
    # MACs from the output shapes onnxruntime gives at the data's first sample: numel(Y) * C_in / group * k_h * k_w
    x = np.load(path.parent / "calib.npz")["input1"][0]  # stacked: row 0 is one feed
    probe = onnx.load(path)
    del probe.graph.output[:]
    probe.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n.output[0]) for n in convs)
    shapes = [y.shape for y in ort.InferenceSession(probe.SerializeToString()).run(None, {"input1": x})]
    for n, y in zip(convs, shapes, strict=True):
        r = rows[n.name]
        w = list(inits[n.input[1]].dims)
        assert (r["weight_bits"], r["activation_bits"], r["kernel_bits"]) == (8, 8, [8, 8])
        assert r["weight_params"] == math.prod(w)
        assert r["macs"] == math.prod(y) * math.prod(w[1:])
