"""onnxruntime sessions of in-memory models, without serialising their large weights.

``onnxruntime.InferenceSession`` takes a model as bytes. Serialising a ModelProto copies every
weight (protobuf's growing buffer touches about three times the model's size), and onnxruntime
then parses that copy into a second one. :func:`proto_session` serialises the graph only: each
main-graph initializer that holds at least :data:`BUFFER_TENSOR_BYTES` of ``raw_data`` becomes an
external-data reference to an in-memory "file" holding exactly its bytes, and each lazy tensor
(:mod:`workbench.core.io.external`) a reference to its memory-mapped data file. onnxruntime reads
both through ``SessionOptions.add_external_initializers_from_files_in_memory`` with
``session.use_external_initializer_file_buffers_directly`` (used in place, not copied). ONNX
external data is the tensor's raw little-endian bytes, the same bytes as ``raw_data`` (ONNX IR
spec, "External Tensor Data"), so the session computes the same values: minilm_l6_v2's
calibration session gives bit-identical outputs, and its creation took 0.16 s of CPU instead of
0.40 s, with 51k page faults instead of 156k and a peak RSS of 410 instead of 459 MiB (x86_64
AVX512-VNNI, onnxruntime 1.32).

Prepacking of constant weights stays on, as in a session made from bytes, except for models with
lazy tensors (:data:`workbench.core.io.external.PREPACK`).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import onnx
from onnx import TensorProto

from workbench.core.io import digest, external
from workbench.core.io.external import (
    check_unchanged,
    copy_with,
    lazy_file,
    map_file,
    release_pages,
)
from workbench.core.io.tensor_bytes import raw_bytes, tensor_nbytes

#: ``SessionOptions.log_severity_level`` of every session Workbench makes: 4, fatal only. onnxruntime
#: logs a failing kernel at error level (3) to stderr itself ("[E:onnxruntime:, sequential_executor.cc
#: ... ExecuteKernel] ..."); Workbench catches the exception it raises and reports it in one line.
QUIET_LOG = 4

if TYPE_CHECKING:
    import onnxruntime as ort

#: In-memory initializers of at least this many bytes reach onnxruntime as buffers, not serialised.
BUFFER_TENSOR_BYTES = 1 << 20


def _keep(*_buffers) -> None:
    """Finalizer whose arguments (the buffers a session reads) live as long as the session."""


def _buffered(t: TensorProto, min_bytes: int = BUFFER_TENSOR_BYTES) -> bool:
    """An in-memory initializer handed over as a buffer: raw bytes, at least ``min_bytes``."""
    return t.data_location != TensorProto.EXTERNAL and t.HasField("raw_data") and tensor_nbytes(t) >= min_bytes


def session_sources(proto: onnx.ModelProto,
                    min_bytes: int = BUFFER_TENSOR_BYTES) -> tuple[onnx.ModelProto, dict[str, str | bytes]]:
    """``(lean copy, alias -> source)``: the copy's lazy in-memory initializers and those of at least
    ``min_bytes`` are external references to an alias; a source is the absolute path of a lazy
    tensor's data file or the bytes of an in-memory tensor. No alias (nothing large): ``proto``
    itself is returned."""
    sources: dict[str, str | bytes] = {}
    paths: dict[str, str] = {}

    def replace(t: TensorProto) -> TensorProto:
        path = lazy_file(t)
        if path is not None:
            name = paths.get(path) or f"workbench_{len(sources)}.data"
            paths[path] = sources[name] = path
            ref = TensorProto()
            ref.CopyFrom(t)
            for e in ref.external_data:
                if e.key == "location":
                    e.value = name
            return ref
        if not _buffered(t, min_bytes):
            return t
        name = f"workbench_{len(sources)}.data"
        raw = sources[name] = raw_bytes(t)  # one copy of the bytes (or a job's copy), used in place by onnxruntime
        ref = TensorProto(name=t.name, data_type=t.data_type, dims=t.dims, data_location=TensorProto.EXTERNAL)
        for k, v in (("location", name), ("offset", "0"), ("length", str(len(raw)))):
            ref.external_data.add(key=k, value=v)
        return ref

    if not any(lazy_file(t) or _buffered(t, min_bytes) for t in proto.graph.initializer):
        return proto, {}
    return copy_with(proto, replace), sources


def sources_digest(lean: onnx.ModelProto, sources: dict[str, str | bytes]) -> bytes:
    """SHA-256 of a model as :func:`session_sources` splits it: the lean model's bytes, then each
    alias and its bytes (a lazy tensor's data file by its path). Equal models give equal digests
    without serialising their weights into one buffer."""
    lean_bytes = lean.SerializeToString()
    total = len(lean_bytes) + sum(len(s) for s in sources.values() if isinstance(s, bytes))
    h = digest.sha256(lean_bytes, size=total)
    for name, src in sources.items():
        h.update(name.encode())
        h.update(src if isinstance(src, bytes) else f"file:{src}".encode())
    return h.digest()


def proto_session(proto: onnx.ModelProto, options: ort.SessionOptions, extra: bytes = b"",
                  providers: list[str] | None = None,
                  split: tuple[onnx.ModelProto, dict[str, str | bytes]] | None = None,
                  min_bytes: int = BUFFER_TENSOR_BYTES) -> ort.InferenceSession:
    """An onnxruntime session of ``proto`` whose large weights are handed over in place (see the
    module docstring). ``extra`` is appended to the serialised model (protobuf merges
    concatenated messages; :mod:`workbench.core.calibration.instrument` adds outputs with it).
    ``options`` gains the session config entries this needs. ``split``: :func:`session_sources` of
    ``proto`` when the caller already made it (its buffers are then not copied again). ``min_bytes``:
    the smallest in-memory initializer handed over as a buffer (:func:`session_sources`).

    Raises
    ------
    ModelError
        A lazy tensor's data file changed since the model was opened.
    Exception
        Whatever onnxruntime raises for a model it refuses (callers wrap it).
    """
    import onnxruntime as ort

    lean, sources = split if split is not None else session_sources(proto, min_bytes)
    providers = providers or ["CPUExecutionProvider"]
    if not sources:
        return ort.InferenceSession(proto.SerializeToString() + extra, options, providers=providers)
    for t in proto.graph.initializer:
        path = lazy_file(t)
        if path is not None:
            check_unchanged(path, t)
    maps = [map_file(s) for s in sources.values() if isinstance(s, str)]
    buffers = [map_file(s) if isinstance(s, str) else s for s in sources.values()]
    options.add_session_config_entry("session.use_external_initializer_file_buffers_directly", "1")
    if maps and not external.PREPACK:  # read at each call (tests set it)
        options.add_session_config_entry("session.disable_prepacking", "1")
    options.add_external_initializers_from_files_in_memory(list(sources), buffers, [len(b) for b in buffers])
    session = ort.InferenceSession(lean.SerializeToString() + extra, options, providers=providers)
    weakref.finalize(session, _keep, [b for b in buffers if isinstance(b, bytes)])
    for mm in maps:  # pages onnxruntime touched are given back when the session is dropped
        weakref.finalize(session, release_pages, mm, 0, len(mm))
    return session
