"""The cost of an already-quantized file as written (``workbench-cli cost q.onnx``).

Every Conv / ConvTranspose / MatMul / Gemm of the file and every integer kernel in it (QLinearConv,
ConvInteger, QLinearMatMul, MatMulInteger, MatMulNBits, QGemm, ...: :data:`~workbench.core.analysis.cost.KERNEL_MAC_OPS`)
is counted as in :mod:`workbench.core.analysis.cost`, at the (weight, activation) bits and the bits onnxruntime
computes it at that the caller gives (:func:`workbench.core.inspection.kernel_bits.file_bits` reads them from the
file), with its weight memory from the integer weight behind a DequantizeLinear, or from the float weight a
QuantizeLinear or a QONNX Quant node of the file quantizes (the float column: the same elements at 32 bits), the bias at 32 bits. Nodes inside subgraphs (If / Loop bodies) count float.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import onnx

from workbench.core.analysis.cost import KERNEL_MAC_OPS, MAC_OPS, CostReport, cost_at

#: nodes whose first input is a weight's stored tensor: ONNX's DequantizeLinear / QuantizeLinear, and QONNX's
#: Quant / BipolarQuant / FloatQuant (a QONNX file keeps the float weight and quantizes it with one of those)
_QUANTIZERS = ("DequantizeLinear", "QuantizeLinear", "Quant", "BipolarQuant", "FloatQuant")


def _fixed_sizes(graph: onnx.GraphProto) -> dict[str, int]:
    """Element counts of ``graph``'s initializers and of the tensors its ``Constant`` nodes hold (``value``)."""
    sizes = {i.name: math.prod(i.dims) for i in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant" and n.output:
            value = next((a.t for a in n.attribute if a.name == "value"), None)
            if value is not None:
                sizes[n.output[0]] = math.prod(value.dims)
    return sizes


def _dq_params(proto: onnx.ModelProto) -> dict[str, tuple[int | None, int | None]]:
    """Node name -> (weight elements, bias elements) of the main graph's Conv / ConvTranspose / MatMul / Gemm and
    integer kernels (:data:`~workbench.core.analysis.cost.KERNEL_MAC_OPS`, their weight and bias positions) whose
    weight or bias is a DequantizeLinear, a QuantizeLinear (onnxruntime's QOperator format quantizes a weight
    held in a Constant node that way) or a QONNX Quant node, of an initializer or Constant (None: not that way)."""
    fixed = _fixed_sizes(proto.graph)
    dq = {n.output[0]: fixed.get(n.input[0]) for n in proto.graph.node
          if n.op_type in _QUANTIZERS and n.output and n.input}
    out = {}
    for n in proto.graph.node:
        if n.op_type in MAC_OPS:
            wi, bi = 1, (None if n.op_type == "MatMul" else 2)
        elif n.op_type in KERNEL_MAC_OPS:
            _, _, wi, bi = KERNEL_MAC_OPS[n.op_type]
        else:
            continue
        if not n.name:
            continue
        w = dq.get(n.input[wi]) if len(n.input) > wi else None
        b = dq.get(n.input[bi]) if bi is not None and len(n.input) > bi else None
        if w is not None or b is not None:
            out[n.name] = (w, b)
    return out


def quantized_cost(model, bits: dict[str, tuple[int, int]], kernel: dict[str, tuple[int, int]], data: Any = None, *,
                   batch: int = 1, input_shapes: dict[str, list[int]] | None = None) -> CostReport:
    """The cost of ``model`` (a quantized PreparedModel: QDQ, QOperator or dynamic) as the file is, its nodes
    at ``bits`` and computed at ``kernel`` (node name -> (weight bits, activation bits); others 32 x 32).
    Shapes as :func:`workbench.core.analysis.cost.plan_cost` (``data``'s first sample, ``input_shapes``
    winning, else ``batch`` for symbolic dims).

    Raises
    ------
    DataError, ModelError
        As :func:`workbench.core.analysis.cost.plan_cost` (data that does not fit, an unknown input name,
        shape inference failing).
    """
    rep = cost_at(model, bits, kernel, data, batch, input_shapes, as_written=True)
    params = _dq_params(model.proto)
    rows = []
    for r in rep.rows:
        w, b = params.get(r.node, (None, None))
        rows.append(replace(r, weight_params=r.weight_params if w is None else w,
                            bias_params=r.bias_params if b is None else b))
    rep.rows = rows
    return rep
