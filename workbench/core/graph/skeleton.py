"""A model for shape inference without its large weights.

onnx shape inference copies and serialises the whole model; it needs an initializer's values only where a
node reads them as data (Reshape's shape, Slice's starts), which are small. :func:`shape_skeleton` keeps the
small initializers and turns each large one into a graph input of its dtype and dims.
"""

from __future__ import annotations

import math

import onnx
from onnx import helper

#: Initializers of up to this many elements keep their values (Reshape's shape, Slice's starts).
MAX_KEPT_ELEMENTS = 1024


def shape_skeleton(proto: onnx.ModelProto, max_elements: int = MAX_KEPT_ELEMENTS) -> onnx.ModelProto:
    """A copy of ``proto`` for shape inference: each main-graph initializer of more than ``max_elements``
    elements becomes a graph input of its type and shape (its bytes are not copied); nodes, inputs, outputs,
    value infos and local functions are copied; ``proto`` is not modified."""
    g = proto.graph
    out = onnx.ModelProto(ir_version=proto.ir_version, producer_name=proto.producer_name)
    out.opset_import.extend(proto.opset_import)
    out.functions.extend(proto.functions)
    graph = out.graph
    graph.name = g.name
    graph.node.extend(g.node)
    graph.output.extend(g.output)
    graph.value_info.extend(g.value_info)
    graph.input.extend(g.input)
    declared = {i.name for i in g.input}
    for init in g.initializer:
        if math.prod(init.dims) <= max_elements:
            graph.initializer.append(init)
        elif init.name not in declared:
            graph.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    return out
