"""Element types of a model's tensors for the sensitivity sweep's suffix models (their graph inputs
are typed), read from the model where it declares them, from an onnxruntime session otherwise.

A session (no run) gives every tensor's type but costs as much CPU as its build (ppocrv4_rec, 208
units: 0.08 s for the float model, 0.08 s for the QDQ one, before any worker has work). The float
model :func:`workbench.core.api.open_model` gives has every tensor in ``value_info`` after shape
inference; the QDQ model declares few, but its tensors are the float model's (same producer, same
name) plus QuantizeLinear outputs (the zero point's type) and DequantizeLinear outputs (the
scale's), so :func:`tensor_types` of the QDQ model given the float model's types needs no session
either. Any tensor left unknown (a model without ``value_info``, an op these rules do not cover)
falls back to the session, for the whole model.
"""

from __future__ import annotations

import onnx
from onnx import helper

from workbench.core.runtime.session import add_outputs, make_session

#: onnxruntime type strings -> ONNX elem types (tensors the sweep may cache).
ORT_TYPES = {f"tensor({k})": v for k, v in {
    "float": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7, "string": 8, "bool": 9,
    "float16": 10, "double": 11, "uint32": 12, "uint64": 13, "bfloat16": 16}.items()}
_KNOWN = frozenset(ORT_TYPES.values())


def tensor_types(proto: onnx.ModelProto, optimize: bool, base: dict[str, int] | None = None) -> dict[str, int]:
    """Elem type (ONNX ``TensorProto`` enum) of every main-graph input and node output of ``proto``
    whose type is one of :data:`ORT_TYPES` (others are left out), as an onnxruntime session of
    ``proto`` (graph optimisations on when ``optimize``) reports them.

    ``base``: the types of another model whose tensors of the same name are the same tensors (the
    float model's, for the QDQ model the writer made from it). Raises ``ModelError`` (from the
    session) when onnxruntime refuses the model and its types are not all declared.
    """
    inits = {t.name for t in proto.graph.initializer}
    wanted = [i.name for i in proto.graph.input if i.name not in inits]
    wanted += list(dict.fromkeys(o for n in proto.graph.node for o in n.output if o))
    got = declared_types(proto, base or {})
    if any(name not in got for name in wanted):
        return session_types(proto, optimize)
    return {name: got[name] for name in wanted if got[name] in _KNOWN}


def declared_types(proto: onnx.ModelProto, base: dict[str, int]) -> dict[str, int]:
    """Types ``proto`` states (inputs, outputs, ``value_info``, initializers), those of ``base`` for
    the other tensors of the same name, and QuantizeLinear / DequantizeLinear outputs from their
    zero point / scale. Tensors none of these give are missing."""
    g = proto.graph
    types = {t.name: t.data_type for t in g.initializer}
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type:
            types[v.name] = v.type.tensor_type.elem_type
    for n in g.node:
        for o in n.output:
            if o and o not in types and o in base:
                types[o] = base[o]
        if n.op_type in ("QuantizeLinear", "DequantizeLinear") and n.domain in ("", "ai.onnx") and n.output[0] not in types:
            elem = _qdq_type(n, types)
            if elem:
                types[n.output[0]] = elem
    return types


def _qdq_type(node: onnx.NodeProto, types: dict[str, int]) -> int:
    """Output type of a QuantizeLinear (``output_dtype``, else its zero point's, else uint8) or a
    DequantizeLinear (``output_dtype``, else its scale's); 0 when the input it depends on is unknown."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if attrs.get("output_dtype"):
        return int(attrs["output_dtype"])
    if node.op_type == "DequantizeLinear":
        return types.get(node.input[1], 0) if len(node.input) > 1 else 0
    zero_point = node.input[2] if len(node.input) > 2 else ""
    return types.get(zero_point, 0) if zero_point else onnx.TensorProto.UINT8


def session_types(proto: onnx.ModelProto, optimize: bool) -> dict[str, int]:
    """:func:`tensor_types` from an onnxruntime session with every node output added (no run)."""
    names = list(dict.fromkeys(o for n in proto.graph.node for o in n.output if o))
    sess = make_session(add_outputs(proto, names), optimize=optimize, threads=1)
    out = {o.name: ORT_TYPES.get(o.type, 0) for o in list(sess.get_inputs()) + list(sess.get_outputs())}
    return {k: v for k, v in out.items() if v}
