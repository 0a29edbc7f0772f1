"""Sizes and copies of models without touching (or duplicating) multi-GiB tensor data.

With the upb protobuf backend, reading ``tensor.raw_data`` returns a fresh ``bytes`` copy and
``ByteSize()`` serialises the message, so ``len(t.raw_data)`` or ``t.ByteSize()`` on a 1 GiB
weight allocates 1 GiB and takes seconds. :func:`tensor_nbytes` computes the size from dims and
data type instead, and :func:`lean_copy` copies a model except its large main-graph
initializers, which stay (read-only) in the source model until a writer needs them.
:func:`raw_bytes_kept` lets one job read each large weight's ``raw_data`` out of the model once
(:func:`raw_bytes`) instead of once per reader; :func:`restore_held` lets the copy a writer puts into
its model hand out those same bytes (the saver reads them instead of copying the copy's).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import onnx
from onnx import TensorProto, helper

from workbench.core.graph.walk import iter_graphs

_PACKED_4BIT = {getattr(TensorProto, n) for n in ("INT4", "UINT4", "FLOAT4E2M1") if hasattr(TensorProto, n)}

#: Main-graph initializers above this many bytes are not copied by :func:`lean_copy`.
LEAN_BYTES = 1 << 20

#: id(tensor) -> (tensor, its raw bytes once read, the keys the scope that registered it drops at its end) for
#: the models of the open :func:`raw_bytes_kept` scopes and the copies :func:`restore_held` made of their tensors
_KEPT: dict[int, tuple[TensorProto, bytes | None, list[int]]] = {}
#: held while a copy joins a scope's keys or a scope drops them (a writer thread may outlive its scope)
_KEPT_LOCK = threading.Lock()


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


def append_copies(field, messages) -> None:
    """Append a copy of each of ``messages`` to the repeated message ``field`` (``add().CopyFrom``).

    upb's ``append``, ``extend`` and ``MergeFrom`` copy a message by serialising and parsing it,
    touching about three times its bytes; ``CopyFrom`` copies it once (minilm_l6_v2's 47 MB word
    embedding: 0.08 -> 0.02 s of CPU, 34k -> 11k page faults). The copies are the same messages.
    """
    for m in messages:
        field.add().CopyFrom(m)


def copy_field(dst, fd, value) -> None:
    """Set field ``fd`` (a FieldDescriptor of ``dst``'s type) of the protobuf message ``dst`` to ``value`` as
    ``ListFields`` gives it: a repeated field extended, a message copied, a scalar set."""
    if hasattr(value, "extend"):  # repeated field
        getattr(dst, fd.name).extend(value)
    elif fd.message_type is not None:
        getattr(dst, fd.name).CopyFrom(value)
    else:
        setattr(dst, fd.name, value)


def copy_fields(src, dst, skip: tuple[str, ...]) -> None:
    """Copy every set field of the protobuf message ``src`` into ``dst`` (same type) but those named in ``skip``."""
    for fd, value in src.ListFields():
        if fd.name not in skip:
            copy_field(dst, fd, value)


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
    copy_fields(proto, out, ("graph",))
    copy_fields(proto.graph, out.graph, ("initializer",))
    held = {}
    for t in proto.graph.initializer:
        if tensor_nbytes(t) > limit:
            held[t.name] = t
        else:
            out.graph.initializer.add().CopyFrom(t)  # see append_copies
    return out, held


def restore_held(proto: onnx.ModelProto, held: dict[str, TensorProto]) -> None:
    """Append to ``proto``'s main graph a copy (``CopyFrom``, see :func:`append_copies`) of each ``held``
    initializer that a node (any graph), a graph output or a graph input still names, in ``held``'s order.
    A copy of a tensor whose bytes an open :func:`raw_bytes_kept` scope has read shares them: :func:`raw_bytes`
    of the copy returns them until that scope ends, so saving the written model does not copy its large float
    weights out of it once more (minilm_l6_v2's 47 MB word embedding)."""
    used = {i.name for i in proto.graph.input}
    for _, g in iter_graphs(proto.graph):
        for node in g.node:
            used.update(node.input)
        used.update(o.name for o in g.output)
    have = {t.name for t in proto.graph.initializer}
    for name, t in held.items():
        if name in used and name not in have:
            copy = proto.graph.initializer.add()
            copy.CopyFrom(t)
            _share_kept(copy, t)


def _share_kept(copy: TensorProto, source: TensorProto) -> None:
    """Register ``copy`` (equal to ``source``) with ``source``'s bytes, in the scope that read them; nothing
    when ``source`` is not registered or not read yet."""
    with _KEPT_LOCK:
        hit = _KEPT.get(id(source))
        if hit is None or hit[0] is not source or hit[1] is None or id(copy) in _KEPT:
            return
        _KEPT[id(copy)] = (copy, hit[1], hit[2])
        hit[2].append(id(copy))


@contextmanager
def raw_bytes_kept(proto: onnx.ModelProto, limit: int = LEAN_BYTES) -> Iterator[None]:
    """Within this scope :func:`raw_bytes` reads the ``raw_data`` of each main-graph initializer of
    ``proto`` above ``limit`` bytes out of the proto once and hands the same ``bytes`` to every later
    reader. With upb each read of ``raw_data`` is a new copy: one quantize of minilm_l6_v2 read its
    90 MB of weights three times (the plan's range checks, the calibration session, the writer).

    ``proto``'s initializers must not be changed inside the scope (a quantize job only reads the
    float model), nor the copies :func:`restore_held` put into a written model while the scope is open
    (they hand out the bytes read from ``proto``). Scopes nest; the bytes are dropped when the scope
    that registered them ends, with the copies that share them. A tensor read outside any scope, or
    not registered, is copied as before.
    """
    added: list[int] = []
    for t in proto.graph.initializer:  # the entry holds t, so its id stays its own
        if id(t) not in _KEPT and t.HasField("raw_data") and tensor_nbytes(t) > limit:
            _KEPT[id(t)] = (t, None, added)
            added.append(id(t))
    try:
        yield
    finally:
        with _KEPT_LOCK:
            for key in added:  # this scope's own entries (jobs on other threads end in any order)
                _KEPT.pop(key, None)
            added.clear()


def raw_bytes(t: TensorProto) -> bytes:
    """``t.raw_data``: kept from an earlier read when ``t`` is registered by an open
    :func:`raw_bytes_kept` scope, else a fresh copy."""
    hit = _KEPT.get(id(t))
    if hit is None or hit[0] is not t:
        return t.raw_data
    if hit[1] is None:
        hit = (t, t.raw_data, hit[2])
        if id(t) in _KEPT:  # still in scope (a worker thread may finish after it)
            _KEPT[id(t)] = hit
    return hit[1]


def _varint(buf, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(buf, start: int, stop: int) -> Iterator[tuple[int, int, int, int]]:
    """``(field number, wire type, start, stop)`` of each field of the message in ``buf[start:stop]``;
    for a length-delimited field start / stop bound its payload. Raises ValueError on groups, unknown
    wire types or a field running past ``stop``."""
    pos = start
    while pos < stop:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        begin = pos
        if wire == 0:
            _, pos = _varint(buf, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, begin = _varint(buf, pos)
            pos = begin + length
        else:
            raise ValueError(f"wire type {wire}")
        if pos > stop:
            raise ValueError("field past the end of its message")
        yield number, wire, begin, pos


#: field numbers (onnx.proto): ModelProto.graph, GraphProto.initializer, TensorProto.raw_data
_GRAPH, _INITIALIZER, _RAW_DATA = 7, 5, 9


def raw_data_lengths(data) -> list[int | None] | None:
    """Length of the ``raw_data`` of each main-graph initializer of the serialised ModelProto
    ``data`` (bytes or a memoryview), in ``graph.initializer`` order (None: no raw_data), read from
    the protobuf wire format without parsing or copying the tensors; None when the bytes are not a
    plain serialisation this reader follows. Protobuf's merge rules hold: repeated ``graph`` fields
    merge (their initializers follow each other), the last ``raw_data`` of a tensor counts."""
    buf = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    out: list[int | None] = []
    try:
        for number, wire, start, stop in _fields(buf, 0, len(buf)):
            if number != _GRAPH or wire != 2:
                continue
            for g_number, g_wire, g_start, g_stop in _fields(buf, start, stop):
                if g_number != _INITIALIZER or g_wire != 2:
                    continue
                length = None
                for t_number, t_wire, t_start, t_stop in _fields(buf, g_start, g_stop):
                    if t_number == _RAW_DATA and t_wire == 2:
                        length = t_stop - t_start
                out.append(length)
    except (ValueError, IndexError):
        return None
    return out
