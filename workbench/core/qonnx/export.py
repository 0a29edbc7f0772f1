"""QONNX export of a quantization plan: written as QDQ, then converted node by node to ``Quant`` /
``BipolarQuant`` / ``FloatQuant``, with the float weights restored where they reproduce the integers.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import onnx
from onnx import numpy_helper

from workbench.core.errors import ExportError
from workbench.core.qonnx.convert import qdq_to_qonnx
from workbench.core.qonnx.reader import (
    DOMAIN,
    bipolar_grid,
    constants,
    float_grid,
    int_quant_grid,
    parse_node,
)
from workbench.core.qonnx.shapes import resolve_input_shapes
from workbench.core.qonnx.writer import with_static_shapes
from workbench.core.writers.registry import write_model

log = logging.getLogger(__name__)


def _weight_dq_outputs(proto: onnx.ModelProto, plan) -> dict[str, tuple[str, object]]:
    """DQ output tensor -> (original float tensor, UnitInput) for every constant a unit quantizes."""
    nodes = {n.name: n for n in proto.graph.node}
    out = {}
    for unit in plan.units.values():
        node = nodes.get(unit.node)
        if unit.excluded or node is None:
            continue
        for ui in unit.quant_inputs:
            if ui.role in ("weight", "bias", "const") and ui.index < len(node.input):
                out[node.input[ui.index]] = (ui.tensor, ui)
    return out


def dtype_hints(proto: onnx.ModelProto, plan, tensor_map: dict[str, str]) -> dict[str, str]:
    """DequantizeLinear output -> the plan's dtype, for dtypes carried in wider QDQ storage."""
    hints: dict[str, str] = {}
    for t in plan.qdq_tensors():
        root = t
        while root in plan.aliases:
            root = plan.aliases[root]
        spec = plan.activations.get(root)
        if spec is not None and t in tensor_map:
            hints[tensor_map[t]] = spec.dtype
    for dq_out, (_, ui) in _weight_dq_outputs(proto, plan).items():
        if ui.role != "bias":
            hints[dq_out] = ui.spec.dtype
    return hints


def _bipolar_weights(proto: onnx.ModelProto, plan, model) -> None:
    """Carrier QDQ -> sign(w) with scale mean(|w|) per channel / tensor (XNOR-Net, Rastegari 2016)."""
    inits = {i.name: i for i in proto.graph.initializer}
    producers = {o: n for n in proto.graph.node for o in n.output}
    for dq_out, (w_name, ui) in _weight_dq_outputs(proto, plan).items():
        dq = producers.get(dq_out)
        if ui.role == "bias" or ui.spec.dtype != "bipolar" or dq is None or dq.op_type != "DequantizeLinear":
            continue
        w = np.asarray(model.initializer(w_name), np.float32)
        s_init = inits[dq.input[1]]
        if numpy_helper.to_array(s_init).ndim == 0:
            scale = np.mean(np.abs(w)).astype(np.float32)
        else:
            axis = ui.spec.axis or 0
            scale = np.mean(np.abs(w), axis=tuple(i for i in range(w.ndim) if i != axis)).astype(np.float32)
        scale = np.where(scale > 0, scale, np.float32(1)).astype(np.float32)
        s_init.CopyFrom(numpy_helper.from_array(scale, s_init.name))
        q_init = inits[dq.input[0]]
        q_init.CopyFrom(numpy_helper.from_array(bipolar_grid(w).astype(np.int8), q_init.name))


def _grid_of(node: onnx.NodeProto, x: np.ndarray, consts: dict[str, np.ndarray]) -> np.ndarray | None:
    p = parse_node(node, consts)
    if p.kind == "int" and p.bits is not None and p.scale is not None and p.zero_point is not None:
        return int_quant_grid(x, p.scale, p.zero_point, int(p.bits), p.signed, p.narrow, p.rounding_mode)
    if p.kind == "bipolar":
        return bipolar_grid(x)
    if p.kind == "float" and p.scale is not None and None not in p.float_params.values():
        f = p.float_params
        return float_grid(np.asarray(x, np.float32) / p.scale, int(f["exponent_bits"]), int(f["mantissa_bits"]),
                          int(f["exponent_bias"]), f["max_val"], p.rounding_mode)
    return None


def _restore_float_weights(proto: onnx.ModelProto, plan, model) -> int:
    """Put the original float weights under each weight Quant where they give the same grid."""
    consts = constants(proto.graph)
    inits = {i.name: i for i in proto.graph.initializer}
    producers = {o: n for n in proto.graph.node for o in n.output}
    readers: dict[str, int] = {}
    for n in proto.graph.node:
        for i in n.input:
            readers[i] = readers.get(i, 0) + 1
    restored = 0
    for q_out, (w_name, _) in _weight_dq_outputs(proto, plan).items():
        qn = producers.get(q_out)
        if qn is None or qn.domain != DOMAIN or qn.input[0] not in inits or readers.get(qn.input[0]) != 1:
            continue
        w = np.asarray(model.initializer(w_name), np.float32)
        cur = consts[qn.input[0]]
        if w.shape != cur.shape:
            continue
        a, b = _grid_of(qn, w, consts), _grid_of(qn, cur, consts)
        if a is not None and b is not None and np.array_equal(a, b):
            inits[qn.input[0]].CopyFrom(numpy_helper.from_array(w, qn.input[0]))
            restored += 1
    return restored


def write_qonnx(model, plan, act_qparams: dict) -> object:
    """Write ``plan`` as a QONNX model.

    Parameters
    ----------
    model : PreparedModel
        The float model (not modified); its weights are kept where they reproduce the integers.
    plan : QuantPlan
        Static, dynamic or weight-only plan; QONNX-only dtypes (int2..int7, bipolar) allowed.
    act_qparams : dict of str to QParams
        Per-tensor qparams of the plan's activation tensors (static plans).

    Returns
    -------
    QdqResult
        ``proto`` (QONNX), ``tensor_map`` (float tensor -> its Quant output), ``issues``.

    Raises
    ------
    ExportError
        The plan produces something QONNX cannot express (dynamic quantization); the message
        lists the nodes and reasons.
    """
    res = write_model(model, plan, act_qparams)
    _bipolar_weights(res.proto, plan, model)
    proto = qdq_to_qonnx(res.proto, dtype_hints=dtype_hints(res.proto, plan, res.tensor_map))
    n = _restore_float_weights(proto, plan, model)
    log.info("QONNX export: %d weight tensors kept as the original floats", n)
    proto.metadata_props.add(key="workbench.format", value="qonnx")
    return dataclasses.replace(res, proto=proto)


def export_qonnx_shaped(result, model=None, input_shapes: dict[str, list[int]] | None = None,
                        static_shapes: bool = False, *, given: onnx.ModelProto | None = None) -> onnx.ModelProto:
    """:func:`export_qonnx`, with static input shapes and every tensor's shape in ``value_info`` when
    ``static_shapes`` or ``input_shapes`` ask for them (:func:`workbench.core.pipeline.export.export`
    says which shapes; :func:`workbench.core.qonnx.shapes.resolve_input_shapes` picks them).

    ``given``: for a result that quantizes nothing, the input file as given
    (:func:`workbench.core.pipeline.export.float_as_given`), used instead of :func:`export_qonnx`'s rewrite of the
    prepared graph: a QONNX file with no Quant node is that float model, as the QDQ export writes it (opset, names,
    BatchNormalization and Constant nodes as given). The shape step above still applies to it, the one rewrite
    QONNX needs: qonnx's executor refuses tensors without a static shape, and the shapes computed by shape
    arithmetic (Shape -> Slice -> Concat -> Reshape) can be recorded only once it is folded (digits_transformer,
    batch set to 1: 333 -> 92 nodes, outputs bit-exact under onnxruntime without graph optimizations; unfolded,
    ``value_info`` read (8, 4, 0) for an (8, 4, 8) tensor and qonnx's executor warned of 46 shape disagreements). Without
    shapes to set (static inputs already, or symbolic dimensions besides the batch and no ``input_shapes``) it is
    returned as it is: the QDQ export's bytes.

    Raises
    ------
    ExportError
        As :func:`export_qonnx`, and for ``input_shapes`` naming no input or not fitting it.
    """
    proto = given if given is not None else export_qonnx(result, model)
    choice = resolve_input_shapes(proto, input_shapes, source=getattr(model, "name", None) or "the model")
    if choice.shapes is not None and (static_shapes or input_shapes):
        proto = with_static_shapes(proto, choice.shapes)
    return proto


def export_qonnx(result, model=None) -> onnx.ModelProto:
    """QONNX model of an :class:`workbench.core.api.QuantizeResult`.

    With ``model`` (the float PreparedModel) the plan is written again (float weights kept), from
    ``result.written_from`` where the result has it: the model ``result.proto`` was written from, so the
    QONNX file holds what the quantize's model passes and bias corrections changed (SmoothQuant's weights,
    corrected Conv biases), which ``model`` as given does not. Without ``model``, ``result.proto`` is
    converted, which cannot recover bipolar weights.

    Raises
    ------
    ExportError
        Bipolar weights without ``model``, or parts QONNX cannot express.
    """
    if model is not None:
        source = getattr(result, "written_from", None) or model
        return write_qonnx(source, result.plan, result.qparams).proto
    bip = [u.node for u in result.plan.units.values() if not u.excluded and u.config.weight is not None
           and u.config.weight.dtype == "bipolar"]
    if bip:
        raise ExportError(f"Nodes {', '.join(bip[:5])} have bipolar weights, which need the float model.",
                          hint="Pass model= to api.export (the CLI does).")
    return qdq_to_qonnx(result.proto, dtype_hints=dtype_hints(result.proto, result.plan, result.tensor_map))


