"""The bits each compute node of an already-quantized file reads and the bits onnxruntime computes it at.

For every Conv / ConvTranspose / MatMul / Gemm of the main graph that reads quantized tensors, and every
integer kernel in it (:func:`workbench.core.inspection.quant_summary.summarize_quantization`'s ``compute``
and ``kernels``):

* (weight, activation) bits: those of its integer tensors (a DequantizeLinear's input in QDQ, the kernel's
  own inputs in QOperator / dynamic files); float inputs 32;
* as run: 8 x 8 for an integer kernel in the file or one onnxruntime fuses its QDQ unit into (QLinearConv,
  QLinearMatMul, MatMulIntegerToFloat, QGemm), the weight's bits x 8 for MatMulNBits (accuracy level 4
  quantizes the activation to int8 per block), 32 x 32 where onnxruntime runs DequantizeLinear and a float
  kernel (ConvTranspose, 16-bit activations, float8, a signed pair it cannot turn uint8) and for a file's
  MatMulNBits below accuracy level 4 (float32 math on the dequantized weight,
  :func:`~workbench.core.graph.quantized_ops.nbits_runs_int8`).
"""

from __future__ import annotations

import onnx

from workbench.core.formats.qtypes import qtype_of_onnx
from workbench.core.graph.layout import node_keys
from workbench.core.inspection.quant_summary import summarize_quantization
from workbench.core.planning.kernels import FLOAT_BITS


def _bits(dtype: str) -> int:
    """Bits of a dtype name of the summary ("uint8", "int4", "float8e4m3fn"); 32 for "float" or unknown."""
    try:
        return qtype_of_onnx(onnx.TensorProto.DataType.Value(dtype.upper())).bits
    except (ValueError, KeyError, AttributeError):
        return FLOAT_BITS


def file_bits(proto: onnx.ModelProto) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]], str]:
    """``({node: (weight bits, activation bits)}, {node: the bits onnxruntime computes it at}, summary text)``
    of the main graph's compute nodes that read quantized tensors (see the module docstring), keyed by node
    name (nodes of an empty or repeated name are left out); nodes not listed are float (32, 32)."""
    summary = summarize_quantization(proto)
    bits, kernel = {}, {}
    for node, key in zip(proto.graph.node, node_keys(proto.graph.node), strict=True):
        dtypes = summary.compute.get(key)
        if dtypes is None or key != node.name:
            continue
        act, weight = (_bits(d) for d in dtypes.split("/"))
        bits[key] = (weight, act)
        fused = summary.kernels.get(key, "").removeprefix("QDQ -> ")
        if fused == "MatMulNBits":
            kernel[key] = (weight, 8)
        elif fused:
            kernel[key] = (8, 8)
        else:
            kernel[key] = (FLOAT_BITS, FLOAT_BITS)
    return bits, kernel, summary.text()
