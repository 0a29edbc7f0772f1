"""Weights that stay in the user's external data file instead of inside the ModelProto.

A model whose external data is large (:data:`LAZY_MODEL_BYTES` or more) is prepared with its big
main-graph initializers left on disk: each such ``TensorProto`` keeps ``data_location=EXTERNAL``
with its ``offset`` / ``length`` and a ``location`` rewritten to the *absolute real path* of the
data file, which :mod:`workbench.core.model.reader` checked (inside the model's folder, long
enough) and recorded here as trusted. Such a tensor is called *lazy*:

- :func:`tensor_array` returns it as a read-only view of the data file, memory-mapped once per
  file (pages are read on use and given back with ``madvise(MADV_DONTNEED)`` when the array is
  dropped, so reading the weights one by one never holds more than the ones in use), any other
  tensor through ``onnx.numpy_helper.to_array``;
- :func:`workbench.core.io.ort_session.proto_session` gives onnxruntime the data files as memory
  buffers (no copy of the weights, nothing written anywhere);
- :func:`tensor_chunks` streams a tensor's bytes for :mod:`workbench.core.io.save`.

An absolute location is refused by ``onnx.checker``, ``onnx.numpy_helper`` and onnxruntime, so
code that is not aware of lazy tensors fails loudly instead of reading another file; a location
that was not recorded by the reader is never read. The user's files are only ever opened
read-only. The trusted files are also recorded in the environment variable
``WORKBENCH_TRUSTED_DATA`` so that worker processes started from this one (spawned sensitivity
workers) can read a model proto they are sent.
"""

from __future__ import annotations

import json
import mmap
import os
import sys
import weakref
from collections.abc import Iterator

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core.errors import ModelError
from workbench.core.io.model_pieces import stand_in
from workbench.core.io.tensor_bytes import copy_fields, raw_bytes

#: A model keeps its weights on disk when its external data holds at least this many bytes.
LAZY_MODEL_BYTES = 512 << 20
#: ... and then only main-graph initializers of at least this many bytes (small ones are loaded).
LAZY_TENSOR_BYTES = 1 << 20
#: onnxruntime prepacks constant MatMul/Gemm/Conv weights into a second copy at session creation;
#: sessions of lazy models skip that (``session.disable_prepacking``) so the weights are in memory
#: once (2.06 GiB model, cpu-u8s8: peak RSS 1.08x the weights instead of 2.06x). Outputs then
#: differ from a prepacked session by float rounding only: on minilm_l6_v2 kept on disk, 86 of 151
#: calibrated scales differed, by at most 4.6e-7 relative.
PREPACK = False

_ENV = "WORKBENCH_TRUSTED_DATA"


def _inherited() -> dict[str, tuple[int, int]]:
    try:
        return {str(k): (int(v[0]), int(v[1])) for k, v in json.loads(os.environ.get(_ENV, "{}")).items()}
    except (ValueError, TypeError, IndexError, AttributeError):
        return {}


_TRUSTED: dict[str, tuple[int, int]] = _inherited()  # real path -> (size, mtime_ns) when the reader checked it
_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT8,
          TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32, TensorProto.UINT32,
          TensorProto.INT64, TensorProto.UINT64, TensorProto.BOOL}
_CHUNK = 64 << 20
_MAPS: dict[str, mmap.mmap] = {}  # one read-only map per trusted data file (one file descriptor each)


def _entries(t: TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in t.external_data}


def _np_dtype(t: TensorProto) -> np.dtype:
    return np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).newbyteorder("<")


def eligible(t: TensorProto) -> bool:
    """True when ``t`` is an external tensor that can stay on disk: a plain numeric type and a
    declared ``length`` of at least :data:`LAZY_TENSOR_BYTES` that matches its dims."""
    if t.data_location != TensorProto.EXTERNAL or t.data_type not in _TYPES or t.HasField("segment"):
        return False
    length = _entries(t).get("length", "")
    if not length.isdigit() or int(length) < LAZY_TENSOR_BYTES:
        return False
    return int(length) == int(np.prod(t.dims, dtype=np.int64)) * _np_dtype(t).itemsize


def keep_lazy(t: TensorProto, real_path: str) -> None:
    """Point ``t``'s location at ``real_path`` (checked by the caller) and trust that file."""
    real = os.path.realpath(real_path)
    st = os.stat(real)
    if _TRUSTED.get(real) != (st.st_size, st.st_mtime_ns):
        _MAPS.pop(real, None)  # a map of an earlier version of the file stays with the arrays using it
    _TRUSTED[real] = (st.st_size, st.st_mtime_ns)
    os.environ[_ENV] = json.dumps(_TRUSTED)  # for worker processes started later
    for e in t.external_data:
        if e.key == "location":
            e.value = real


def lazy_file(t: TensorProto) -> str | None:
    """Absolute path of the trusted data file of a lazy tensor, else None."""
    if t.data_location != TensorProto.EXTERNAL:
        return None
    loc = _entries(t).get("location", "")
    return loc if os.path.isabs(loc) and loc in _TRUSTED else None


def is_source(path: str | os.PathLike) -> bool:
    """True when ``path`` is a data file that open models read weights from (never overwrite it)."""
    return os.path.realpath(path) in _TRUSTED


def check_unchanged(path: str, t: TensorProto) -> None:
    """Raise ModelError when the data file at ``path`` changed size or time since the reader checked it."""
    try:
        st = os.stat(path)
        same = (st.st_size, st.st_mtime_ns) == _TRUSTED[path]
    except OSError:
        same = False
    if not same:
        raise ModelError(f"{path}: the external data file changed (or vanished) after the model was opened, so "
                         f"tensor '{t.name}' cannot be read from it.", hint="Open the model again.")


def map_file(path: str) -> mmap.mmap:
    """The read-only memory map of a trusted data file, opened once per process."""
    mm = _MAPS.get(path)
    if mm is None:
        with open(path, "rb") as f:
            mm = _MAPS[path] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return mm


def release_pages(mm: mmap.mmap, start: int, stop: int) -> None:
    """Give the resident pages of ``mm[start:stop]`` back to the OS (clean file pages: a later
    read faults them in again from the file, so this never changes a value)."""
    if mm.closed or not hasattr(mm, "madvise"):
        return
    lo = start - start % mmap.PAGESIZE
    hi = min(len(mm), -(-stop // mmap.PAGESIZE) * mmap.PAGESIZE)
    try:
        mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
    except (OSError, ValueError):
        pass


def lazy_tensors(proto: onnx.ModelProto) -> list[TensorProto]:
    """The lazy initializers of the main graph (only those are ever made lazy)."""
    return [t for t in proto.graph.initializer if lazy_file(t)]


def has_lazy(proto: onnx.ModelProto) -> bool:
    return any(lazy_file(t) for t in proto.graph.initializer)


def _offset(t: TensorProto) -> int:
    return int(_entries(t).get("offset", "0") or 0)


def tensor_array(t: TensorProto) -> np.ndarray:
    """Value of ``t`` as a numpy array: a read-only memory-mapped view for a lazy tensor (dtype and
    shape from the tensor; ONNX external data is little-endian raw bytes, ONNX IR spec), else
    ``numpy_helper.to_array``.

    Raises
    ------
    ModelError
        ``t`` is external but not lazy (its data was never checked), or its data file changed
        size since the model was loaded.
    """
    path = lazy_file(t)
    if path is None:
        if t.data_location == TensorProto.EXTERNAL:
            raise ModelError(f"tensor '{t.name}': its data is in an external file that was not loaded "
                             f"({_entries(t).get('location', '')!r}).",
                             hint="Open the model with workbench.core.model.load.load_model.")
        if t.data_type in _TYPES and t.HasField("raw_data") and not t.HasField("segment") and sys.byteorder == "little":
            # numpy_helper.to_array's own reading of raw_data, from bytes a job may have read already
            return np.frombuffer(raw_bytes(t), dtype=helper.tensor_dtype_to_np_dtype(t.data_type)).reshape(t.dims)
        return numpy_helper.to_array(t)
    check_unchanged(path, t)
    dtype, offset = _np_dtype(t), _offset(t)
    count = int(np.prod(t.dims, dtype=np.int64))
    try:
        mm = map_file(path)
        flat = np.frombuffer(mm, dtype=dtype, count=count, offset=offset)
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path}: cannot map the data of tensor '{t.name}' ({exc}); the file changed "
                         "after the model was opened.", hint="Open the model again.") from None
    weakref.finalize(flat, release_pages, mm, offset, offset + count * dtype.itemsize)  # when every view is gone
    return flat.reshape(tuple(t.dims))


def tensor_chunks(t: TensorProto, chunk: int = _CHUNK) -> Iterator[bytes]:
    """The raw little-endian bytes of ``t`` (ONNX ``raw_data`` layout), in pieces of at most
    ``chunk`` bytes for a lazy tensor (read from its file), in one piece otherwise."""
    path = lazy_file(t)
    if path is None:
        if t.HasField("raw_data"):
            yield t.raw_data  # one copy (upb), freed by the caller after writing
        else:
            yield onnx.numpy_helper.from_array(tensor_array(t)).raw_data
        return
    check_unchanged(path, t)
    left = int(_entries(t)["length"])
    with open(path, "rb") as f:
        f.seek(_offset(t))
        while left > 0:
            piece = f.read(min(chunk, left))
            if not piece:
                raise ModelError(f"{path}: ends inside tensor '{t.name}'; the file changed after the model "
                                 "was opened.", hint="Open the model again.")
            left -= len(piece)
            yield piece


def materialize(t: TensorProto) -> TensorProto:
    """A copy of ``t`` with its data inline (``raw_data``); ``t`` itself when it is not lazy."""
    if lazy_file(t) is None:
        return t
    out = TensorProto(name=t.name, data_type=t.data_type, dims=t.dims, doc_string=t.doc_string)
    out.raw_data = b"".join(tensor_chunks(t))
    return out


def copy_with(proto: onnx.ModelProto, replace) -> onnx.ModelProto:
    """Copy of ``proto`` whose main-graph initializers pass through ``replace(t) -> TensorProto``."""
    out = onnx.ModelProto()
    copy_fields(proto, out, ("graph",))
    copy_fields(proto.graph, out.graph, ("initializer",))
    for t in proto.graph.initializer:
        out.graph.initializer.add().CopyFrom(replace(t))  # one copy (tensor_bytes.append_copies)
    return out


def inline_copy(proto: onnx.ModelProto) -> onnx.ModelProto:
    """``proto`` itself when it has no lazy tensor, else a copy with their data read in."""
    return copy_with(proto, materialize) if has_lazy(proto) else proto


def checkable(proto: onnx.ModelProto) -> onnx.ModelProto:
    """What ``onnx.checker`` can check: ``proto`` itself, or for a model with lazy tensors a copy in which
    each is its one-element stand-in (:func:`workbench.core.io.model_pieces.stand_in`, as the saver checks
    large weights; the checker refuses absolute locations). The checker then refuses what it refuses in the
    whole model: a lazy tensor's name given twice, a value field (``float_data``, ...) beside its data, a
    negative dimension, an unknown data type. (Typed graph inputs in their place, as before, passed the
    first two.)"""
    if not has_lazy(proto):
        return proto
    return copy_with(proto, lambda t: stand_in(t, on_disk=True) if lazy_file(t) else t)
