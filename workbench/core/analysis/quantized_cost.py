"""The cost of an already-quantized file as onnxruntime runs it (``workbench-cli cost q.onnx``).

Every Conv / ConvTranspose / MatMul / Gemm of the file and every integer kernel in it (QLinearConv,
ConvInteger, QLinearMatMul, MatMulInteger, MatMulNBits, QGemm, ...: :data:`~workbench.core.analysis.cost.KERNEL_MAC_OPS`)
is counted as in :mod:`workbench.core.analysis.cost`, with

* its (weight, activation) bits those of the integer tensors it reads: the element type of a
  DequantizeLinear's input (QDQ), or of the kernel's own inputs
  (:func:`workbench.core.inspection.quant_summary.summarize_quantization`'s ``compute``); float inputs 32;
* the bits it is computed at ("BOPs as run"): 8 x 8 for an integer kernel in the file or one onnxruntime
  fuses its QDQ unit into (QLinearConv, QLinearMatMul, MatMulIntegerToFloat, QGemm), the weight's bits x 8
  for MatMulNBits (accuracy level 4 quantizes the activation to int8 per block), 32 x 32 where onnxruntime
  runs DequantizeLinear and a float kernel (ConvTranspose, 16-bit activations, float8, a signed pair
  it cannot turn uint8);
* its weight memory from the integer weight behind the DequantizeLinear (the float column: the same
  elements at 32 bits), the bias at 32 bits.

Nodes inside subgraphs (If / Loop bodies) are counted float (the summary reads the main graph).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import onnx

from workbench.core.analysis.cost import FLOAT_BITS, MAC_OPS, CostReport, cost_at
from workbench.core.formats.qtypes import qtype_of_onnx
from workbench.core.graph.layout import node_keys
from workbench.core.inspection.quant_summary import summarize_quantization


def _bits(dtype: str) -> int:
    """Bits of a dtype name of the summary ("uint8", "int4", "float8e4m3fn"); 32 for "float" or unknown."""
    try:
        return qtype_of_onnx(onnx.TensorProto.DataType.Value(dtype.upper())).bits
    except (ValueError, KeyError, AttributeError):
        return FLOAT_BITS


def file_bits(proto: onnx.ModelProto) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]], str]:
    """``({node: (weight bits, activation bits)}, {node: the bits onnxruntime computes it at}, summary text)``
    of the main graph's compute nodes that read quantized tensors (see the module docstring); nodes not
    listed are float (32, 32)."""
    summary = summarize_quantization(proto)
    bits, kernel = {}, {}
    for node, key in zip(proto.graph.node, node_keys(proto.graph.node), strict=True):
        dtypes = summary.compute.get(key)
        if dtypes is None or key != node.name:  # an empty or repeated name: rows are named by node name
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


def _dq_params(proto: onnx.ModelProto) -> dict[str, tuple[int | None, int | None]]:
    """Node name -> (weight elements, bias elements) of the main graph's Conv / ConvTranspose / MatMul / Gemm
    whose weight (input 1) or bias (input 2) is a DequantizeLinear of an initializer (None: not that way)."""
    inits = {i.name: math.prod(i.dims) for i in proto.graph.initializer}
    dq = {n.output[0]: inits.get(n.input[0]) for n in proto.graph.node
          if n.op_type == "DequantizeLinear" and n.output and n.input}
    out = {}
    for n in proto.graph.node:
        if n.op_type not in MAC_OPS or not n.name:
            continue
        w = dq.get(n.input[1]) if len(n.input) > 1 else None
        b = dq.get(n.input[2]) if len(n.input) > 2 and n.op_type != "MatMul" else None
        if w is not None or b is not None:
            out[n.name] = (w, b)
    return out


def quantized_cost(model, data: Any = None, *, batch: int = 1,
                   input_shapes: dict[str, list[int]] | None = None) -> tuple[CostReport, str]:
    """The cost of ``model`` (a quantized PreparedModel: QDQ, QOperator or dynamic) as the file is, and the one
    line :func:`~workbench.core.inspection.quant_summary.summarize_quantization` gives of it. Shapes as
    :func:`workbench.core.analysis.cost.plan_cost` (``data``'s first sample, ``input_shapes`` winning, else
    ``batch`` for symbolic dims).

    Raises
    ------
    DataError, ModelError
        As :func:`workbench.core.analysis.cost.plan_cost` (data that does not fit, an unknown input name,
        shape inference failing).
    """
    bits, kernel, text = file_bits(model.proto)
    rep = cost_at(model, bits, kernel, data, batch, input_shapes, as_written=True)
    params = _dq_params(model.proto)
    rows = []
    for r in rep.rows:
        w, b = params.get(r.node, (None, None))
        rows.append(replace(r, weight_params=r.weight_params if w is None else w,
                            bias_params=r.bias_params if b is None else b))
    rep.rows = rows
    return rep, text
