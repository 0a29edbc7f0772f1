"""The quantization grid each unit's weight was written with, read back from the written QDQ model.

A unit's weight reaches its node through a DequantizeLinear of constants (``x``, ``scale``,
optional ``zero_point``); its grid is ``(q - zero_point) * scale`` with ``q`` of ``x``'s type,
per tensor (scalar scale), per axis (1-D scale along ``axis``, default 1) or per block
(``block_size``). Read from the model as written, so MSE weight ranges and a grid widened for an
int32 bias are the ones drawn, not recomputed. A ``Gemm(transB=1)`` written as a ``MatMul`` of the
transposed weight has its axis given in the float weight's layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from workbench.core.formats.qparams import QParams
from workbench.core.formats.qtypes import qtype_of_onnx
from workbench.core.io.external import tensor_array


@dataclass
class WrittenWeights:
    """The weights a written QDQ model dequantizes from constants, per quantized unit.

    Attributes
    ----------
    units : list of (str, onnx.NodeProto, onnx.NodeProto, str)
        (unit's main node name, its float node, the DequantizeLinear of its weight in the written model,
        the float weight's initializer name), in plan order.
    f_inits, q_nodes, q_consts : dict
        The float model's initializers, the written model's nodes and initializers, by name.
    """

    units: list[tuple[str, onnx.NodeProto, onnx.NodeProto, str]]
    f_inits: dict
    q_nodes: dict
    q_consts: dict


def written_weights(plan, fp: onnx.ModelProto, qp: onnx.ModelProto) -> WrittenWeights:
    """Each quantized unit of ``plan`` whose weight ``qp`` dequantizes from constants (kept float, fused away,
    inside a subgraph: left out), found by the weight's input position in the float node ``fp`` names alike."""
    f_inits = {t.name: t for t in fp.graph.initializer}
    f_nodes = {n.name: n for n in fp.graph.node}
    q_nodes = {n.name: n for n in qp.graph.node}
    q_consts = {t.name: t for t in qp.graph.initializer}
    producer = {o: n for n in qp.graph.node for o in n.output if o}
    units = []
    for unit in plan.units.values():
        f, q = f_nodes.get(unit.node), q_nodes.get(unit.node)
        if unit.excluded or unit.graph or not unit.weight or f is None or q is None or unit.weight not in f_inits:
            continue
        pos = next((i for i, x in enumerate(f.input) if x == unit.weight), None)
        dq = producer.get(q.input[pos]) if pos is not None and pos < len(q.input) else None
        if dq is None or dq.op_type != "DequantizeLinear" or any(x and x not in q_consts for x in dq.input):
            continue
        units.append((unit.node, f, dq, unit.weight))
    return WrittenWeights(units, f_inits, q_nodes, q_consts)


def written_weight_qparams(plan, fp: onnx.ModelProto, qp: onnx.ModelProto) -> dict[str, QParams]:
    """Unit (main node name) -> the QParams its weight was written with, in the float weight's layout.

    ``plan``: the QuantPlan ``qp`` was written from; ``fp``: the float model (its node names are ``qp``'s).
    Units without a weight dequantized from constants (kept float, fused away, inside a subgraph) are left out,
    as are weights of a type no QType names. Reads only the small ``scale`` / ``zero_point`` constants and the
    shapes of the weights.
    """
    written = written_weights(plan, fp, qp)
    out: dict[str, QParams] = {}
    for node, f, dq, weight in written.units:
        params = _dq_params(dq, written.q_consts, tuple(written.f_inits[weight].dims),
                            transposed=gemm_as_matmul(f, written.q_nodes[node]))
        if params is not None:
            out[node] = params
    return out


def gemm_as_matmul(f: onnx.NodeProto, q: onnx.NodeProto) -> bool:
    """True when the float node ``f`` is a ``Gemm(transB=1)`` written as the MatMul ``q`` (its weight stored
    transposed, ``[K, N]``: the weight-only writer)."""
    return f.op_type == "Gemm" and q.op_type == "MatMul" and any(a.name == "transB" and a.i for a in f.attribute)


def _dq_params(dq: onnx.NodeProto, consts: dict, float_shape: tuple[int, ...], *,
               transposed: bool = False) -> QParams | None:
    """The QParams of DequantizeLinear ``dq`` of constants, its axis in the float weight's layout (None
    when the written weight has neither that layout nor its transpose, or an unknown type). ``transposed``:
    the weight is written as the transpose of the float one (:func:`gemm_as_matmul`), which a square weight's
    shape cannot tell."""
    x = consts[dq.input[0]]
    qt = qtype_of_onnx(x.data_type)
    if qt is None:
        return None
    scale = np.asarray(tensor_array(consts[dq.input[1]]), dtype=np.float32)
    if len(dq.input) > 2 and dq.input[2]:
        zp = np.asarray(tensor_array(consts[dq.input[2]])).astype(qt.storage)
    else:
        zp = np.zeros(scale.shape, dtype=qt.storage)
    attrs = {a.name: a.i for a in dq.attribute}
    block = attrs.get("block_size") or None
    axis = None
    if scale.ndim:
        written = tuple(x.dims)
        axis = attrs.get("axis", 1)
        axis = axis + len(written) if axis < 0 else axis
        if transposed or written != float_shape:
            if len(written) != 2 or written[::-1] != float_shape:
                return None
            axis = 1 - axis  # a Gemm(transB=1) weight written as a MatMul's [K, N]
            if block is not None:
                scale, zp = scale.T, zp.T
    return QParams(scale, zp.reshape(scale.shape), qt.name, axis, block)
