"""``inspect``'s "quantized:" line and its summary line name the format of a quantized file the same way: both
read :attr:`QuantSummary.kinds` (the formats as onnxruntime runs the nodes). The "quantized:" line counted the
file's op types instead, so a MatMulNBits at accuracy_level 4 read 'weight_only 1' above 'summary: dynamic: ...',
and the QuantizeLinear / DequantizeLinear around QOperator kernels read 'QDQ 2' above 'summary: QOperator: ...'."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import matmul_nbits_model

from workbench.cli import main
from workbench.core.inspection.quant_summary import summarize_quantization
from workbench.core.inspection.report import inspect_model
from workbench.core.model.load import load_model


def _qoperator_matmul() -> onnx.ModelProto:
    """x -> QuantizeLinear -> QLinearMatMul (uint8 weight) -> DequantizeLinear -> y."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"), numpy_helper.from_array(np.uint8(128), "xz"),
             numpy_helper.from_array(rng.integers(0, 256, (16, 4), dtype=np.uint8), "w"),
             numpy_helper.from_array(np.array(0.01, np.float32), "ws"), numpy_helper.from_array(np.uint8(128), "wz"),
             numpy_helper.from_array(np.array(0.05, np.float32), "ys"), numpy_helper.from_array(np.uint8(128), "yz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q"),
             helper.make_node("QLinearMatMul", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["yq"], name="mm"),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _lines(tmp_path, capsys, m: onnx.ModelProto) -> tuple[str, str]:
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    assert main(["inspect", str(path)]) in (0, None)
    out = capsys.readouterr().out.splitlines()
    return (next(ln for ln in out if ln.startswith("quantized:")), next(ln for ln in out if ln.startswith("summary:")))


@pytest.mark.parametrize(("level", "kind", "summary"), [
    (4, "dynamic", "dynamic: 1 MatMul int8/uint4"),
    (0, "weight_only", "weight-only: 1 MatMul float/uint4"),
    (None, "weight_only", "weight-only: 1 MatMul float/uint4"),
])
def test_matmul_nbits_kind_is_the_summary_s(tmp_path, capsys, level, kind, summary):
    m, _, _ = matmul_nbits_model(level)
    quantized, summary_line = _lines(tmp_path, capsys, m)
    assert quantized == f"quantized:   1 node ({kind} 1): MatMulNBits 1"  # was 'weight_only 1' at level 4
    assert summary_line == f"summary:     {summary}"
    assert summarize_quantization(m).kinds == {kind: 1}


def test_qdq_around_qoperator_kernels_is_counted_qoperator(tmp_path, capsys):
    m = _qoperator_matmul()
    ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])  # a model onnxruntime runs
    quantized, summary_line = _lines(tmp_path, capsys, m)
    assert quantized == "quantized:   3 nodes (QOperator 3): QuantizeLinear 1, QLinearMatMul 1, DequantizeLinear 1"
    assert summary_line == "summary:     QOperator: 1 MatMul uint8/uint8"  # the line read 'QDQ 2, QOperator 1'
    path = tmp_path / "m.onnx"
    report = inspect_model(load_model(path))
    assert report["quantized"]["kinds"] == summarize_quantization(m).kinds == {"QOperator": 3}
    assert sum(report["quantized"]["kinds"].values()) == report["quantized"]["nodes"] == 3
