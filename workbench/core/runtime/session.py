"""onnxruntime sessions for in-memory models, and exposing internal tensors as outputs."""

from __future__ import annotations

import onnx
import onnxruntime as ort
from onnx import helper

from workbench.core.errors import ModelError
from workbench.core.io.external import has_lazy, lazy_session
from workbench.core.runtime.mx_simulation import simulation_proto


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


def make_session(proto: onnx.ModelProto, *, optimize: bool = True, threads: int = 0) -> ort.InferenceSession:
    """A CPU InferenceSession from an in-memory model.

    ``optimize=False`` disables graph optimizations so QDQ pairs are executed as written
    (fake-quantized values exactly as the ONNX operators define them).

    Raises
    ------
    ModelError
        If onnxruntime refuses the model (message includes its reason).
    """

    proto = simulation_proto(proto)  # MX weights: onnxruntime's CPU provider lacks float8e8m0 DQ
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if threads:
        so.intra_op_num_threads = threads
    try:
        if has_lazy(proto):  # weights kept in the user's data file (workbench.core.io.external)
            return lazy_session(proto, so)
        return ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise ModelError(f"onnxruntime cannot load the model: {exc}",
                         hint="Check the model with `workbench-cli inspect`.") from None
