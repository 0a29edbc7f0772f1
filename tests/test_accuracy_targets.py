"""Accuracy targets on real corpus models (issue "Find and fix the error").

ppocrv4_rec: CTC exact line match >= 0.93 (float 0.95) with >= 85% of its Conv/MatMul/Gemm nodes
running on int8 weights, using the cpu-u8s8 preset with element-wise ops (Mul/Add: HardSwish,
LayerNorm, residuals) left float, and bias correction.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest

from workbench.core import api

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import corpus_metrics as cm  # noqa: E402

WEIGHT_OPS = ("Conv", "MatMul", "Gemm")
PPOCR_OPS = ["Conv", "MatMul", "Gemm", "MaxPool", "AveragePool", "GlobalAveragePool", "Concat"]


def int8_weight_fraction(proto: onnx.ModelProto) -> tuple[int, int]:
    """(Conv/MatMul/Gemm nodes whose two first inputs both come from 8-bit DequantizeLinear nodes, all such
    nodes). The bit width is read from the DequantizeLinear's quantized input or zero-point type."""
    eight = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
    types = {i.name: i.data_type for i in proto.graph.initializer}
    dq8 = {n.output[0] for n in proto.graph.node if n.op_type == "DequantizeLinear"
           and any(types.get(t) in eight for t in n.input[::2])}
    nodes = [n for n in proto.graph.node if n.op_type in WEIGHT_OPS]
    return sum(1 for n in nodes if n.input[0] in dq8 and n.input[1] in dq8), len(nodes)


@pytest.mark.slow
def test_ppocrv4_rec_exact_line_match_with_int8(corpus):
    folder = corpus / "ppocrv4_rec"
    model = api.open_model(folder / "model.onnx")
    recipe = api.make_recipe("cpu-u8s8", op_types=PPOCR_OPS)
    result = api.quantize(model, recipe, data=str(folder / "calib.npz"), samples=32, bias_correction=True)
    quantized, total = int8_weight_fraction(result.proto)
    assert total == 51 and total - quantized <= 7, (quantized, total)
    exact = cm.ctc_line_metrics(cm.session_runner(result.proto), folder)["exact"]
    assert exact >= 0.93, exact
