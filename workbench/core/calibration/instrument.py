"""An onnxruntime session of the model that also outputs the tensors calibration observes.

The user's ``ModelProto`` is never modified nor copied in Python: the extra graph outputs are
serialised as a small ``ModelProto`` holding only ``graph.output`` entries and appended to the
model's bytes. Protobuf parses concatenated messages as one merged message (embedded messages
merge, repeated fields append; Protocol Buffers encoding guide, "Last One Wins" / merging), so
onnxruntime sees the original graph with the extra outputs. Models whose serialised size
exceeds protobuf's 2 GiB limit are copied once, saved with external data into a temporary
folder (removed by :meth:`InstrumentedSession.close`) and loaded from there. Weights that
preparation left in the user's data file (:mod:`workbench.core.io.external`) are handed to
onnxruntime memory-mapped instead.

Tensors produced inside If / Loop / Scan bodies cannot be graph outputs (onnxruntime only
exposes main-graph values); :func:`main_graph_tensors` tells which names can be observed.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from workbench.core.errors import CalibrationError
from workbench.core.graph.index import elem_types
from workbench.core.io.atomic import write_pieces
from workbench.core.io.external import has_lazy
from workbench.core.io.ort_session import QUIET_LOG, proto_session
from workbench.core.io.tensor_bytes import lean_copy, model_tensor_bytes

log = logging.getLogger(__name__)

#: Serialised size above which the model goes through a temporary file with external data
#: (protobuf refuses messages of 2 GiB or more). A module variable so tests can lower it.
MAX_PROTO_BYTES = (1 << 31) - (1 << 20)

#: In-memory initializers of at least this many bytes reach the calibration session as buffers used in
#: place (:func:`~workbench.core.io.ort_session.proto_session`), not serialised into the model onnxruntime
#: parses: minilm_l6_v2's 24 attention weights of 576 KiB each (14 MB) were serialised and parsed again at the
#: 1 MiB of other sessions; its session creation took 30-33k page faults, 14.8k so (the same outputs).
INSTRUMENT_BUFFER_BYTES = 1 << 16


def main_graph_tensors(proto: onnx.ModelProto) -> tuple[set[str], set[str], set[str]]:
    """Names in the main graph: ``(data inputs, initializers, node outputs)``.

    Graph inputs that are also initializers count as initializers (constants, not data).
    """
    g = proto.graph
    inits = {t.name for t in g.initializer}
    inputs = {vi.name for vi in g.input} - inits
    produced = {o for n in g.node for o in n.output if o}
    return inputs, inits, produced


def output_infos(proto: onnx.ModelProto, names: list[str]) -> list[onnx.ValueInfoProto]:
    """ValueInfos for the names that are not yet graph outputs.

    The element type comes from the model's ``value_info`` / inputs / outputs (filled by shape
    inference when the model was prepared). An unknown type is left unset rather than guessed:
    onnxruntime infers the type of an untyped graph output, whereas a wrong guess (float for an
    int64 tensor) makes it refuse the model. No shape is declared, so dynamic dims never clash.
    """
    have = {o.name for o in proto.graph.output}
    types = elem_types(proto.graph)
    infos = []
    for name in names:
        if name in have:
            continue
        have.add(name)
        elem = types.get(name, 0)
        infos.append(helper.make_tensor_value_info(name, elem, None) if elem
                     else helper.make_empty_tensor_value_info(name))
    return infos


#: Let onnxruntime's intra-op threads busy-wait for work after a run (its default). Calibration
#: turns it off: between runs the process digests outputs in numpy, and spinning threads would
#: only burn CPU meanwhile. Scheduling only: kernels, graph optimisations and values are unchanged.
SPIN = False


def session_options(*, spinning: bool = True) -> ort.SessionOptions:
    """The options of plain float inference in the workbench (CPU, default graph optimisations).

    ``spinning=False`` sets ``session.intra_op.allow_spinning`` to 0 (onnxruntime threading docs).
    """
    so = ort.SessionOptions()
    so.log_severity_level = QUIET_LOG
    if not spinning:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return so


@dataclass
class InstrumentedSession:
    """An onnxruntime session whose outputs include the observed tensors.

    Attributes
    ----------
    session : onnxruntime.InferenceSession
    fetch : list of str
        Output names to request in ``session.run`` (the observed, non-input tensors).
    """

    session: ort.InferenceSession
    fetch: list[str]
    _tmpdir: Path | None = field(default=None, repr=False)

    def run(self, feed: dict[str, np.ndarray], run_options: ort.RunOptions | None = None) -> list[np.ndarray]:
        """Run one batch; returns one array per name in :attr:`fetch`."""
        return self.session.run(self.fetch, feed, run_options)

    def close(self) -> None:
        """Release the session and remove the temporary model folder (large models)."""
        self.session = None  # type: ignore[assignment]
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> InstrumentedSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def instrument(proto: onnx.ModelProto, tensors: list[str], *,
               options: ort.SessionOptions | None = None) -> InstrumentedSession:
    """One CPU session of ``proto`` that also outputs ``tensors`` (main-graph node outputs).

    Parameters
    ----------
    proto : onnx.ModelProto
        The prepared float model; not modified.
    tensors : list of str
        Tensors to expose; existing graph outputs are fetched as they are.
    options : onnxruntime.SessionOptions, optional
        Defaults to :func:`session_options` (the same as plain inference).

    Raises
    ------
    CalibrationError
        onnxruntime refuses the instrumented model (its reason is in the message).
    """
    extra = onnx.ModelProto()
    extra.graph.output.extend(output_infos(proto, tensors))
    opts = options or session_options(spinning=SPIN)
    tmpdir = None
    try:
        # weights in the user's data file (lazy) or large in memory: handed over in place, not serialised
        if has_lazy(proto) or _fits(proto, MAX_PROTO_BYTES - extra.ByteSize()):
            session = proto_session(proto, opts, extra.SerializeToString(), min_bytes=INSTRUMENT_BUFFER_BYTES)
        else:
            tmpdir = Path(tempfile.mkdtemp(prefix="workbench-calib-"))
            session = ort.InferenceSession(_save_external(proto, extra, tmpdir), opts,
                                           providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
        raise CalibrationError(f"onnxruntime cannot load the model instrumented for calibration "
                               f"({len(tensors)} observed tensors): {str(exc).strip()[:400]}",
                               hint="Check that the float model runs in onnxruntime "
                                    "(`workbench-cli inspect MODEL`).") from None
    return InstrumentedSession(session, list(tensors), tmpdir)


def _fits(proto: onnx.ModelProto, limit: int) -> bool:
    """True when ``proto`` serialises to fewer than ``limit`` bytes.

    ``ByteSize()`` walks the whole message (~0.15 s for a 90 MB model), so it is only asked
    when the main-graph initializers' raw bytes alone come near the limit.
    """
    raw = model_tensor_bytes(proto)  # from dims: len(t.raw_data) would copy every tensor
    if raw < limit // 2:
        return True
    if raw >= limit:
        return False
    try:
        return proto.ByteSize() < limit
    except Exception:  # noqa: BLE001 - upb fails to size messages over 2 GiB
        return False


def _save_external(proto: onnx.ModelProto, extra: onnx.ModelProto, folder: Path) -> str:
    """Save a copy of ``proto`` plus the extra outputs with its weights in one external file."""
    log.info("Model exceeds 2 GiB; instrumenting it through %s with external data.", folder)
    copy, held = lean_copy(proto, limit=1024)  # not a second copy of the weights in memory
    copy.graph.output.extend(extra.graph.output)
    path = folder / "instrumented.onnx"
    data = "instrumented.onnx.data"
    offset = 0
    with open(folder / data, "wb") as f:
        for t in held.values():  # one tensor's bytes at a time (ONNX external data: little-endian raw)
            raw = t.raw_data if t.HasField("raw_data") else numpy_helper.to_array(t).astype(
                numpy_helper.to_array(t).dtype.newbyteorder("<")).tobytes()
            write_pieces(f, raw)
            ref = copy.graph.initializer.add(name=t.name, data_type=t.data_type, dims=t.dims)
            ref.data_location = onnx.TensorProto.EXTERNAL
            for k, v in (("location", data), ("offset", str(offset)), ("length", str(len(raw)))):
                ref.external_data.add(key=k, value=v)
            offset += len(raw)
            del raw
    path.write_bytes(copy.SerializeToString())  # small: the weights are in the data file
    return str(path)
