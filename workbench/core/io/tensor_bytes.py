"""Sizes and copies of models without touching (or duplicating) multi-GiB tensor data.

With the upb protobuf backend, reading ``tensor.raw_data`` returns a fresh ``bytes`` copy and
``ByteSize()`` serialises the message, so ``len(t.raw_data)`` or ``t.ByteSize()`` on a 1 GiB
weight allocates 1 GiB and takes seconds. :func:`tensor_nbytes` computes the size from dims and
data type instead, and :func:`lean_copy` copies a model except its large main-graph
initializers, which stay (read-only) in the source model until a writer needs them.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper

from workbench.core.graph.walk import iter_graphs

_PACKED_4BIT = {getattr(TensorProto, n) for n in ("INT4", "UINT4", "FLOAT4E2M1") if hasattr(TensorProto, n)}

#: Main-graph initializers above this many bytes are not copied by :func:`lean_copy`.
LEAN_BYTES = 1 << 20


def tensor_nbytes(t: TensorProto) -> int:
    """Bytes of the tensor's data from ``dims`` and ``data_type`` (ONNX IR spec: 4-bit types
    packed two per byte); strings and unknown types fall back to ``ByteSize()``."""
    count = math.prod(t.dims)
    if t.data_type in _PACKED_4BIT:
        return (count + 1) // 2
    if t.data_type == TensorProto.STRING:
        return t.ByteSize()
    try:
        return count * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        return t.ByteSize()


def model_tensor_bytes(proto: onnx.ModelProto) -> int:
    """Sum of :func:`tensor_nbytes` over the initializers of every graph."""
    return sum(tensor_nbytes(t) for _, g in iter_graphs(proto.graph) for t in g.initializer)


def _copy_fields(src, dst, skip: str) -> None:
    for fd, value in src.ListFields():
        if fd.name == skip:
            continue
        if hasattr(value, "extend"):  # repeated field
            getattr(dst, fd.name).extend(value)
        elif fd.message_type is not None:
            getattr(dst, fd.name).CopyFrom(value)
        else:
            setattr(dst, fd.name, value)


def lean_copy(proto: onnx.ModelProto, limit: int = LEAN_BYTES) -> tuple[onnx.ModelProto, dict[str, TensorProto]]:
    """Copy of ``proto`` without its main-graph initializers larger than ``limit`` bytes.

    Returns
    -------
    copy : onnx.ModelProto
        Every field of ``proto`` (nodes, subgraphs, inputs, small initializers, metadata).
    held : dict of str to onnx.TensorProto
        The left-out initializers: references into ``proto`` (not copies); put back the ones
        still used with :func:`restore_held`.
    """
    out = onnx.ModelProto()
    _copy_fields(proto, out, "graph")
    _copy_fields(proto.graph, out.graph, "initializer")
    held = {}
    for t in proto.graph.initializer:
        if tensor_nbytes(t) > limit:
            held[t.name] = t
        else:
            out.graph.initializer.append(t)
    return out, held


def restore_held(proto: onnx.ModelProto, held: dict[str, TensorProto]) -> None:
    """Append to ``proto``'s main graph the ``held`` initializers that a node (any graph), a
    graph output or a graph input still names."""
    used = {i.name for i in proto.graph.input}
    for _, g in iter_graphs(proto.graph):
        for node in g.node:
            used.update(node.input)
        used.update(o.name for o in g.output)
    have = {t.name for t in proto.graph.initializer}
    proto.graph.initializer.extend(t for name, t in held.items() if name in used and name not in have)
