"""A ModelProto serialised in pieces, its large weights' bytes kept apart instead of joined into one buffer.

``SerializeToString`` of minilm_l6_v2's quantized model (58 MB, 47 MB of it the float word embedding)
builds the whole message in upb's encoder buffer, then copies it into a ``bytes`` object: about
117 MB touched once each (28.7k page faults), and ``onnx.checker`` parsed those 58 MB again (11.4k).
:func:`split_model` gives the same bytes as a list of pieces, each large ``raw_data`` a piece of its
own, and the bytes of a copy for the checker in which each large initializer is a stand-in of one
element: its fields, each positive dimension 1, and the ``raw_data`` one element needs. The checker
then checks that initializer as it checks the whole one (its name unique and, before IR 4, a graph
input; one value field only; no ``raw_data`` when stored externally; no negative dimension; a known
data type) except that its ``raw_data`` is not shorter than its dims and data type need (onnx 1.23),
which :attr:`ModelPieces.short` reports instead. (A typed graph input in its place let a duplicated
initializer name, ``raw_data`` beside ``float_data``, or ``raw_data`` in a tensor marked external pass.)
:func:`stand_in` is the one definition, shared with :func:`workbench.core.io.external.checkable` for the
weights left in the user's data file.

Protobuf writes a message's known fields in field-number order (upb, the C++ and the pure Python
encoders alike), so a model's bytes are its fields below ``graph`` (7), the graph's tag and
length, the graph's fields below ``initializer`` (5), each initializer as tag, length and bytes,
the graph's fields above 5, then the model's fields above 7; a large initializer's bytes are its
fields below ``raw_data`` (9), ``raw_data``'s tag, length and bytes, then its fields above 9.
A message holding fields this onnx does not know (kept from a newer file) is not split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from google.protobuf.unknown_fields import UnknownFieldSet
from onnx import GraphProto, ModelProto, TensorProto, helper

from workbench.core.io.tensor_bytes import copy_field, copy_fields, raw_bytes

#: Main-graph initializers whose ``raw_data`` holds at least this many bytes become pieces of their own.
PIECE_BYTES = 1 << 16

_GRAPH, _INITIALIZER, _RAW_DATA = 7, 5, 9  # field numbers in onnx.proto (Model-, Graph-, TensorProto)

#: bits per value of the packed data types (ONNX IR spec: packed in raw_data, lowest bits first)
_PACKED_BITS = {getattr(TensorProto, n): b for n, b in (("INT4", 4), ("UINT4", 4), ("FLOAT4E2M1", 4),
                                                         ("INT2", 2), ("UINT2", 2)) if hasattr(TensorProto, n)}


@dataclass
class ModelPieces:
    """``parts``: the bytes of the model in order (``b"".join(parts) == proto.SerializeToString()``);
    ``checkable``: the bytes of the model for ``onnx.checker``, its large initializers stand-ins without
    their bytes (module docstring); ``short``: ``(name, bytes held, bytes needed)`` of each large initializer whose ``raw_data``
    is shorter than its dims and data type need (what the checker refuses in an initializer)."""

    parts: list[bytes]
    checkable: bytes
    short: list[tuple[str, int, int]] = field(default_factory=list)


def _key(number: int) -> bytes:
    """The tag of a length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _split(msg, cls, number: int) -> tuple[bytes, bytes]:
    """The bytes of ``msg``'s fields below ``number`` and above it (field ``number`` left out, and not read:
    ``ListFields`` returns each set bytes field as a new copy, a large initializer's ``raw_data`` too)."""
    head, tail = cls(), cls()
    for fd in msg.DESCRIPTOR.fields:
        if fd.number != number and _holds(msg, fd):
            copy_field(head if fd.number < number else tail, fd, getattr(msg, fd.name))
    return head.SerializeToString(), tail.SerializeToString()


def _holds(msg, fd) -> bool:
    """Whether ``msg`` holds field ``fd`` (a field ``ListFields`` would list)."""
    repeated = fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == fd.LABEL_REPEATED
    if repeated:
        return len(getattr(msg, fd.name)) > 0
    if fd.has_presence:
        return msg.HasField(fd.name)
    return getattr(msg, fd.name) != fd.default_value


def needed_bytes(t: TensorProto) -> int | None:
    """Bytes of ``raw_data`` that ``t``'s dims and data type need (packed types rounded up to a byte),
    None for strings and data types numpy does not size."""
    bits = _PACKED_BITS.get(t.data_type)
    count = math.prod(t.dims)
    if bits:
        return (count * bits + 7) // 8
    if t.data_type in (TensorProto.STRING, TensorProto.UNDEFINED):
        return None
    try:
        return count * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        return None


def stand_in(t: TensorProto, *, on_disk: bool = False) -> TensorProto:
    """The initializer ``t`` as ``onnx.checker`` is given it in place of its bytes: a new TensorProto of its
    fields but ``raw_data``, each positive dimension 1 (negative ones kept), and a ``raw_data`` of the bytes
    one element needs (zeros). The checker then checks it as it checks ``t`` (module docstring) but the length
    of its ``raw_data``. ``on_disk``: ``t`` is a weight left in the user's data file
    (:func:`workbench.core.io.external.checkable`); its ``data_location`` and ``external_data`` (an absolute
    location the checker refuses, checked by the reader) are left out too."""
    out = TensorProto()
    copy_fields(t, out, ("raw_data", "data_location", "external_data") if on_disk else ("raw_data",))
    out.dims[:] = [1 if d > 0 else d for d in out.dims]
    out.raw_data = bytes(max(needed_bytes(out) or 1, 1))
    return out


def _stand_in(head: bytes, tail: bytes) -> bytes:
    """The bytes of :func:`stand_in` of a large initializer, from its fields below and above ``raw_data``."""
    return stand_in(TensorProto.FromString(head + tail)).SerializeToString()


def _large(t: TensorProto, limit: int) -> bool:
    need = needed_bytes(t) if t.HasField("raw_data") and not t.external_data else None
    return need is not None and need >= limit


def _field(number: int, parts: list[bytes]) -> list[bytes]:
    """A length-delimited field holding ``parts``: its tag and length, then the parts."""
    return [_key(number) + _varint(sum(map(len, parts))), *parts]


def split_model(proto: ModelProto, limit: int = PIECE_BYTES) -> ModelPieces | None:
    """``proto`` (no lazy tensors: :func:`workbench.core.io.external.inline_copy`) in pieces, or None
    when no main-graph initializer holds ``limit`` bytes of ``raw_data`` (or the model, its graph or
    such an initializer holds fields unknown to this onnx): then ``SerializeToString`` costs no more.
    Reads each large ``raw_data`` once (one copy, as ``SerializeToString`` makes; none for a weight whose bytes
    an open :func:`~workbench.core.io.tensor_bytes.raw_bytes_kept` scope holds); ``proto`` is not changed."""
    g = proto.graph
    large = [t for t in g.initializer if _large(t, limit)]
    if not large or any(len(UnknownFieldSet(m)) for m in (proto, g, *large)):
        return None
    ids = {id(t) for t in large}
    whole: list[bytes] = []
    lean: list[bytes] = []
    short = []
    for t in g.initializer:
        if id(t) not in ids:
            entry = _field(_INITIALIZER, [t.SerializeToString()])
            whole += entry
            lean += entry
            continue
        head, tail = _split(t, TensorProto, _RAW_DATA)
        raw = raw_bytes(t)  # a written copy of a float weight hands out the bytes its job read (restore_held)
        whole += _field(_INITIALIZER, [head, *_field(_RAW_DATA, [raw]), tail])
        lean += _field(_INITIALIZER, [_stand_in(head, tail)])
        if len(raw) < needed_bytes(t):
            short.append((t.name, len(raw), needed_bytes(t)))
    graph_head, graph_tail = _split(g, GraphProto, _INITIALIZER)
    model_head, model_tail = _split(proto, ModelProto, _GRAPH)
    parts = [model_head, *_field(_GRAPH, [graph_head, *whole, graph_tail]), model_tail]
    checkable = b"".join([model_head, *_field(_GRAPH, [graph_head, *lean, graph_tail]), model_tail])
    return ModelPieces([p for p in parts if p], checkable, short)
