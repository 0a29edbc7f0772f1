"""The grid a weight was written with, read back in the float weight's layout
(workbench.core.analysis.weight_grid.written_weight_qparams): a Gemm(transB=1) that the weight-only writer
wrote as MatMul(x, DQ(W^T)) has its grid transposed back also when the weight is square (its transpose has the
same shape: the grid came back in the written [K, N] layout, blocks along the wrong axis)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from workbench.core import api
from workbench.core.formats.numerics import dequantize, quantize


def _gemm(tmp_path, n: int, k: int) -> tuple[str, np.ndarray]:
    """``y = x @ W^T`` (Gemm transB=1, ``W``: float32 ``(n, k)``) saved under ``tmp_path``."""
    w = np.random.default_rng(n * k).normal(size=(n, k)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], name="fc", transB=1)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])],
                              [numpy_helper.from_array(w, "w")])
    path = str(tmp_path / f"gemm_{n}x{k}.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), path)
    return path, w


def _written_weight(proto: onnx.ModelProto) -> np.ndarray:
    """The output of the written model's weight DequantizeLinear, by onnx.reference."""
    (dq,) = [n for n in proto.graph.node if n.op_type == "DequantizeLinear"]
    graph = helper.make_graph([dq], "dq", [], [helper.make_tensor_value_info(dq.output[0], TensorProto.FLOAT, None)],
                              list(proto.graph.initializer))
    return ReferenceEvaluator(helper.make_model(graph, opset_imports=list(proto.opset_import))).run(None, {})[0]


@pytest.mark.parametrize(("n", "k"), [(48, 64), (64, 64)])
def test_a_transposed_gemm_weight_reads_back_in_the_float_layout(tmp_path, n, k):
    path, w = _gemm(tmp_path, n, k)
    model = api.open_model(path)
    result = api.quantize(model, api.make_recipe("w4-block"))
    assert [x.op_type for x in result.proto.graph.node] == ["DequantizeLinear", "MatMul"]
    qp = api.written_weight_qparams(result.plan, model.proto, result.proto)["fc"]
    assert (qp.axis, qp.block_size, qp.scale.shape) == (1, 32, (n, k // 32))  # blocks along K of W (n, k)
    written = _written_weight(result.proto)  # (k, n): W^T dequantized
    assert written.shape == (k, n)
    np.testing.assert_array_equal(np.asarray(dequantize(quantize(w, qp), qp), np.float32), written.T)
