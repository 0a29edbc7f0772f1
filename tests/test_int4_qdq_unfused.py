"""A weight-only int4 QDQ MatMul that onnxruntime does not fuse into MatMulNBits reads as the file's QDQ float/int4.

onnxruntime fuses a DequantizeLinear weight into MatMulNBits only when that DequantizeLinear's output has one
reader, the MatMul, and is no graph output (its DQMatMul selector checks the DequantizeLinear's output edges).
One weight DequantizeLinear read by two MatMuls, or also given out as a graph output, stays DequantizeLinear +
float MatMul in its optimized graph; the summary still said 'dynamic: 2 MatMul int8/int4' and named the
MatMulNBits kernel. The expected kernels come from onnxruntime's optimized graph, not from the code under test.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import optimized_ops

from workbench.core.inspection.quant_summary import summarize_quantization

K, N, BLOCK = 64, 64, 32


def _model(shape: str) -> onnx.ModelProto:
    """One int4 weight ``w`` behind a blocked DequantizeLinear ``dq`` (axis 0, blocks of 32), opset 21.
    ``shape``: "alone" (read by MatMul ``mm`` only), "shared" (also by ``mm2``), "output" (its float weight is
    also a graph output), "constant" (alone, the weight a Constant node's value instead of an initializer)."""
    rng = np.random.default_rng(0)
    weight = helper.make_tensor("w", TensorProto.INT4, [K, N], rng.integers(-8, 8, size=(K, N)).ravel().tolist())
    inits = [numpy_helper.from_array(rng.uniform(0.01, 0.05, (K // BLOCK, N)).astype(np.float32), "s")]
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"], name="dq", axis=0, block_size=BLOCK),
             helper.make_node("MatMul", ["x", "wf"], ["y"], name="mm")]
    if shape == "constant":
        nodes.insert(0, helper.make_node("Constant", [], ["w"], name="wc", value=weight))
    else:
        inits.append(weight)
    outs = ["y"]
    if shape == "shared":
        nodes.append(helper.make_node("MatMul", ["x", "wf"], ["y2"], name="mm2"))
        outs.append("y2")
    if shape == "output":
        outs.append("wf")
    g = helper.make_graph(nodes, "int4_qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, K])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, [K, N] if o == "wf" else [4, N]) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    onnx.checker.check_model(m)
    return m


def test_a_weight_dequantizelinear_with_one_reader_fuses(tmp_path):
    m = _model("alone")
    assert sorted(optimized_ops(m, tmp_path)) == ["MatMulNBits"]
    s = summarize_quantization(m)
    assert s.kernels == {"mm": "QDQ -> MatMulNBits"}
    assert s.text() == "dynamic (int4 QDQ weights fused by onnxruntime into MatMulNBits): 1 MatMul int8/int4"


def test_a_shared_weight_dequantizelinear_is_not_read_as_matmulnbits(tmp_path):
    m = _model("shared")
    assert sorted(optimized_ops(m, tmp_path)) == ["DequantizeLinear", "DequantizeLinear", "MatMul", "MatMul"]  # not fused
    s = summarize_quantization(m)
    assert s.kernels == {}  # failed before: both 'QDQ -> MatMulNBits'
    assert s.text() == "QDQ: 2 MatMul float/int4"  # failed before: 'dynamic: 2 MatMul int8/int4'
    assert s.compute == {"mm": "float/int4", "mm2": "float/int4"}


def test_a_weight_dequantizelinear_given_out_is_not_read_as_matmulnbits(tmp_path):
    m = _model("output")
    assert sorted(optimized_ops(m, tmp_path)) == ["DequantizeLinear", "DequantizeLinear", "MatMul"]  # not fused
    s = summarize_quantization(m)
    assert s.kernels == {}  # failed before: 'QDQ -> MatMulNBits'
    assert s.text() == "QDQ: 1 MatMul float/int4"


def test_a_weight_from_a_constant_node_fuses(tmp_path):
    # onnxruntime folds the Constant into an initializer before its QDQ fusions
    m = _model("constant")
    assert sorted(optimized_ops(m, tmp_path)) == ["MatMulNBits"]
    s = summarize_quantization(m)
    assert s.kernels == {"mm": "QDQ -> MatMulNBits"}  # failed before: {}
    # failed before: 'QDQ: 1 MatMul float/int4'
    assert s.text() == "dynamic (int4 QDQ weights fused by onnxruntime into MatMulNBits): 1 MatMul int8/int4"
