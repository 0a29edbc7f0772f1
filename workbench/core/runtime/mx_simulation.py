"""MX weights made runnable: onnxruntime's CPU provider lacks float8e8m0 DequantizeLinear, so for
error analysis each MX DequantizeLinear becomes an Identity of the exact dequantized float32 values."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from workbench.core.formats.numerics import dequantize
from workbench.core.formats.qparams import QParams
from workbench.core.graph.prune import drop_unused_initializers


def has_mx(proto: onnx.ModelProto) -> bool:
    """True when a DequantizeLinear reads a float8e8m0 scale initializer."""
    e8m0 = {i.name for i in proto.graph.initializer if i.data_type == onnx.TensorProto.FLOAT8E8M0}
    return any(n.op_type == "DequantizeLinear" and len(n.input) > 1 and n.input[1] in e8m0
               for n in proto.graph.node)


def simulation_proto(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``proto`` that onnxruntime can run: each MX DequantizeLinear (float8e8m0 scale)
    becomes ``Identity(<float32 initializer>)`` holding exactly the values DequantizeLinear-24
    computes (``element * 2**e``, numpy), under the same output name. For error analysis only; the
    exported model keeps its MX weights. Non-MX models are returned unchanged (same object)."""
    if not has_mx(proto):
        return proto
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    inits = {i.name: i for i in out.graph.initializer}
    for k, node in enumerate(out.graph.node):
        s = inits.get(node.input[1]) if node.op_type == "DequantizeLinear" and len(node.input) > 1 else None
        if s is None or s.data_type != onnx.TensorProto.FLOAT8E8M0 or node.input[0] not in inits:
            continue
        x = numpy_helper.to_array(inits[node.input[0]]).astype(np.float32)
        scale = numpy_helper.to_array(s).astype(np.float32)
        a = {at.name: at.i for at in node.attribute}
        # the float-element path of dequantize is exactly element * scale (no zero point)
        qp = QParams(scale, np.zeros(scale.shape, np.float32), "float8e4m3fn", a.get("axis", 1) % max(x.ndim, 1),
                     a.get("block_size") or None)
        name = f"{node.output[0]}_mx_simulated"
        out.graph.initializer.append(numpy_helper.from_array(dequantize(x, qp), name))
        out.graph.node[k].CopyFrom(onnx.helper.make_node("Identity", [name], [node.output[0]], name=node.name))
    drop_unused_initializers(out)  # the element / E8M0 tensors (onnxruntime may not know their types)
    return out


