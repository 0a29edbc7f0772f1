"""onnxruntime sessions for in-memory models, and exposing internal tensors as outputs."""

from __future__ import annotations

import onnx
import onnxruntime as ort
from onnx import helper

from workbench.core.errors import ModelError
from workbench.core.io.ort_session import BUFFER_TENSOR_BYTES, QUIET_LOG, proto_session
from workbench.core.runtime.mx_simulation import simulation_proto

#: session config for an optimised session that still runs every QuantizeLinear / DequantizeLinear
#: pair as written (onnxruntime's ``session.disable_quant_qdq``: no QDQ fusion into integer kernels,
#: no pair removed or moved; float nodes are fused and laid out as in any optimised session)
QDQ_AS_WRITTEN = {"session.disable_quant_qdq": "1"}


def add_outputs(proto: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """A copy of ``proto`` whose graph also outputs the tensors ``names`` (existing outputs kept).

    The element type comes from value_info, graph inputs or node outputs after shape inference;
    unknown types are left unset (onnxruntime accepts outputs without a type).
    """
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    have = {o.name for o in copy.graph.output}
    types = {vi.name: vi.type.tensor_type.elem_type for vi in
             list(copy.graph.value_info) + list(copy.graph.input) + list(copy.graph.output)}
    for name in names:
        if name in have:
            continue
        elem = types.get(name, 0)
        vi = helper.make_tensor_value_info(name, elem, None) if elem else helper.make_empty_tensor_value_info(name)
        copy.graph.output.append(vi)
        have.add(name)
    return copy


def describe_runtime(optimize: bool = True, provider: str = "CPUExecutionProvider") -> str:
    """What a figure was measured with: onnxruntime version, execution provider and graph
    optimisation level (``optimize=True`` is onnxruntime's default, ``ORT_ENABLE_ALL``: QDQ pairs
    fused into integer kernels, int4 DQ + MatMul into MatMulNBits; False is ``ORT_DISABLE_ALL``:
    the graph runs as written, every DequantizeLinear output readable)."""
    level = "ORT_ENABLE_ALL (onnxruntime's default)" if optimize else "ORT_DISABLE_ALL (graph as written)"
    return f"onnxruntime {ort.__version__}, {provider}, graph optimisation level {level}"


def session_runtime(sess: ort.InferenceSession) -> str:
    """:func:`describe_runtime` of an existing session, read from its own options and providers."""
    level = sess.get_session_options().graph_optimization_level
    return describe_runtime(level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL, sess.get_providers()[0]) \
        if level in (ort.GraphOptimizationLevel.ORT_ENABLE_ALL, ort.GraphOptimizationLevel.ORT_DISABLE_ALL) \
        else f"onnxruntime {ort.__version__}, {sess.get_providers()[0]}, graph optimisation level {level.name}"


def make_session(proto: onnx.ModelProto, *, optimize: bool = True, threads: int = 0,
                 arena: bool = True, spinning: bool = True,
                 buffer_bytes: int = BUFFER_TENSOR_BYTES,
                 config: dict[str, str] | None = None) -> ort.InferenceSession:
    """A CPU InferenceSession from an in-memory model.

    ``optimize=False`` disables graph optimizations so QDQ pairs are executed as written
    (fake-quantized values exactly as the ONNX operators define them). ``spinning=False`` sets
    ``session.intra_op.allow_spinning`` to 0 (onnxruntime threading docs): the intra-op threads sleep
    instead of busy-waiting after each parallel section and run, for callers that run many short runs
    or do numpy work between them (the recipe choice; calibration does the same, ``instrument.SPIN``).
    With spinning, ppocrv4_rec's float model took 0.69-0.80 s of CPU for 16 rows at 2 threads, without
    0.39-0.48 s. Scheduling only: the kernels, and so the values, are the same. ``buffer_bytes``:
    initializers of at least this many bytes reach onnxruntime as buffers used in place, not
    serialised (:func:`~workbench.core.io.ort_session.proto_session`); the same values. ``config``:
    session config entries (e.g. :data:`QDQ_AS_WRITTEN`).

    Raises
    ------
    ModelError
        If onnxruntime refuses the model (message includes its reason).
    """

    proto = simulation_proto(proto)  # MX weights: onnxruntime's CPU provider lacks float8e8m0 DQ
    so = ort.SessionOptions()
    so.log_severity_level = QUIET_LOG
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if threads:
        so.intra_op_num_threads = threads
    if not arena:  # each run's buffers go back to the heap instead of an arena kept at its peak
        so.enable_cpu_mem_arena = False
    if not spinning:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    for key, value in (config or {}).items():
        so.add_session_config_entry(key, value)
    try:
        return proto_session(proto, so, min_bytes=buffer_bytes)  # large weights handed over in place
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise ModelError(f"onnxruntime cannot load the model: {exc}",
                         hint="Check the model with `workbench-cli inspect`.") from None
