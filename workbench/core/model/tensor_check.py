"""Checking that every stored tensor of a model is self-consistent before anything uses it.

A corrupted or hand-edited file can declare dims and a data type that its bytes do not match
(``raw_data`` shorter than ``prod(dims) * itemsize``, negative dims, an unknown ``data_type``);
numpy then fails deep inside the planner or a writer with a bare ``ValueError``. This check turns
that into a :class:`ModelError` naming the file and the tensor, once, at load time. Sizes are
computed from the ONNX ``TensorProto`` spec: raw_data holds ``prod(dims)`` little-endian
elements, 4-bit types packed two per byte (ONNX IR spec, "Tensor element types").
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core.errors import ModelError

_PACKED_4BIT = {getattr(TensorProto, n) for n in ("INT4", "UINT4", "FLOAT4E2M1") if hasattr(TensorProto, n)}
_HINT = "The file is corrupted or was edited by hand; re-export the model."


def _tensors(graph: onnx.GraphProto):
    yield from graph.initializer
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                yield a.t
            elif a.type == onnx.AttributeProto.TENSORS:
                yield from a.tensors
            elif a.type == onnx.AttributeProto.GRAPH:
                yield from _tensors(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from _tensors(g)


#: The fields a TensorProto may hold its values in (onnx.proto): one of them, or external data.
_VALUE_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def _one_value_field(t: TensorProto, where: str) -> None:
    """Refuse a tensor holding its values in more than one place (``raw_data`` beside ``float_data``, or either
    in a tensor marked external), as onnx.checker does: which one a reader uses differs (numpy_helper takes
    ``raw_data``). The reader's checker sees large weights only as typed inputs, so it let them pass. Lengths
    are read without copying ``raw_data``."""
    held = ["raw_data"] if t.HasField("raw_data") else []
    held += [name for name in _VALUE_FIELDS if len(getattr(t, name))]
    if t.data_location == TensorProto.EXTERNAL:
        held.append("external data")
    if len(held) > 1:
        raise ModelError(f"{where} holds its values twice ({' and '.join(held)}); a tensor holds them in one place "
                         "only, so which counts cannot be told.", hint=_HINT)


def _raw_bytes(t: TensorProto, count: int) -> int | None:
    """Expected ``len(raw_data)`` for ``count`` elements, or None for strings (no raw form)."""
    if t.data_type == TensorProto.STRING:
        return None
    if t.data_type in _PACKED_4BIT:
        return (count + 1) // 2
    return count * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize


def check_tensors(proto: onnx.ModelProto, path: Path | str, *, loaded: bool = False,
                  raw_lengths: list[int | None] | None = None) -> list[TensorProto]:
    """Raise ModelError when a stored tensor's data type, dims or data size is inconsistent.

    Called before the external data is loaded: external tensors are checked through their
    declared ``length`` (no data is read); those without a ``length`` are returned so they can
    be checked again with ``loaded=True`` once their bytes are in memory. ``raw_lengths``: the
    ``raw_data`` length of each main-graph initializer as the file stores it
    (:func:`workbench.core.io.tensor_bytes.raw_data_lengths`), so their bytes are not copied to be
    measured.

    Raises
    ------
    ModelError
        Names the file and the tensor: unknown data type, a negative dim, values held in two fields, or
        data whose size does not match ``prod(dims)`` elements of the declared type.
    """
    later = []
    stored = raw_lengths if raw_lengths is not None and len(raw_lengths) == len(proto.graph.initializer) else []
    for i, t in enumerate(_tensors(proto.graph)):
        where = f"{path}: tensor '{t.name}'"
        try:
            helper.tensor_dtype_to_np_dtype(t.data_type)
        except (KeyError, ValueError, TypeError):
            raise ModelError(f"{where} has an unknown data type ({t.data_type}).", hint=_HINT) from None
        if any(d < 0 for d in t.dims):
            raise ModelError(f"{where} has a negative dimension {list(t.dims)}.", hint=_HINT)
        _one_value_field(t, where)
        want = _raw_bytes(t, math.prod(t.dims))
        if t.data_location == TensorProto.EXTERNAL and not loaded:
            length = {e.key: e.value for e in t.external_data}.get("length")
            if length is None:
                later.append(t)
            elif want is not None and length.isdigit() and int(length) != want:
                raise ModelError(f"{where} declares {list(t.dims)} elements of "
                                 f"{TensorProto.DataType.Name(t.data_type)} ({want} bytes) but its external "
                                 f"data entry has length {length}.", hint=_HINT)
            continue
        if t.HasField("raw_data"):
            have = stored[i] if i < len(stored) and stored[i] is not None else len(t.raw_data)  # len: a copy with upb
            if want is not None and have != want:
                raise ModelError(f"{where} declares {list(t.dims)} elements of {TensorProto.DataType.Name(t.data_type)} "
                                 f"({want} bytes) but stores {have} bytes.", hint=_HINT)
            continue
        try:
            numpy_helper.to_array(t)
        except Exception as exc:  # noqa: BLE001 - onnx/numpy raise ValueError, TypeError, ...
            raise ModelError(f"{where}: its data does not match dims {list(t.dims)} and type "
                             f"{TensorProto.DataType.Name(t.data_type)} ({exc.__class__.__name__}).",
                             hint=_HINT) from None
    return later


def check_loaded(tensors: list[TensorProto], path: Path | str) -> None:
    """Second pass of :func:`check_tensors` for external tensors that declared no length."""
    if tensors:
        holder = onnx.GraphProto()
        holder.initializer.extend(tensors)
        check_tensors(onnx.ModelProto(graph=holder), path, loaded=True)
