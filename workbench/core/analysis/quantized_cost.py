"""The cost of an already-quantized file as written (``workbench-cli cost q.onnx``).

Every Conv / ConvTranspose / MatMul / Gemm of the file and every integer kernel in it (QLinearConv,
ConvInteger, QLinearMatMul, MatMulInteger, MatMulNBits, QGemm, ...: :data:`~workbench.core.analysis.cost.KERNEL_MAC_OPS`)
is counted as in :mod:`workbench.core.analysis.cost`, at the (weight, activation) bits and the bits onnxruntime
computes it at that the caller gives (:func:`workbench.core.inspection.kernel_bits.file_bits` reads them from the
file), with its weight memory from the integer weight behind a DequantizeLinear (the float column: the same
elements at 32 bits), the bias at 32 bits. Nodes inside subgraphs (If / Loop bodies) count float.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import onnx

from workbench.core.analysis.cost import MAC_OPS, CostReport, cost_at


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
