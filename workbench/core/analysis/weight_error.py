"""How much each unit's weight loses in quantization: no data needed.

For every quantized unit whose weight reaches its node through a DequantizeLinear of constants in
the written QDQ model, the dequantized weight ``(q - zero_point) * scale`` (computed by onnxruntime,
so per-axis and per-block grids, int4 and float8 read as the model runs them) is compared with the
float weight:

    SQNR = 10 log10( sum(w^2) / sum((w - dq(w))^2) )   [dB]

over the whole tensor and per output channel (Conv: axis 0, ConvTranspose: axis 1, Gemm: axis 0
with ``transB`` else 1, MatMul: the last axis); the worst channel is reported, among the channels
holding at least :data:`DEAD_CHANNEL` of the largest channel's energy. A per-tensor grid
shared by channels of very different ranges shows up as a worst channel far below the tensor's
figure; per-channel grids keep them close.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import onnx
from onnx import helper

from workbench.core.io.external import tensor_array
from workbench.core.runtime.session import make_session

#: Channels whose energy is below this fraction of the largest channel's are not ranked as the worst
#: (dead channels: a grid raised so an int32 bias fits rounds their ~1e-9 weights to 0, 0 dB, harmless).
DEAD_CHANNEL = 1e-8
#: Float bytes of dequantized weights computed in one onnxruntime run (memory stays bounded).
CHUNK_BYTES = 64 << 20


@dataclass
class WeightError:
    """Quantization error of one unit's weight (see the module docstring)."""

    node: str
    weight: str
    sqnr_db: float
    worst_channel: int | None
    worst_channel_db: float
    channels: int

    def to_json(self) -> dict:
        """JSON-safe dict; non-finite figures (+inf: exact) become None."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


def channel_axis(node: onnx.NodeProto, rank: int) -> int | None:
    """Output-channel axis of ``node``'s weight (its input 1), None for other ops or ranks below 2."""
    if rank < 2:
        return None
    if node.op_type == "Conv":
        return 0
    if node.op_type == "ConvTranspose":
        return 1
    if node.op_type == "Gemm":
        trans = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return 0 if trans else 1
    if node.op_type == "MatMul":
        return rank - 1
    return None


def _sqnr(sig: float, err: float) -> float:
    if err == 0.0:
        return math.inf
    return -math.inf if sig == 0.0 else 10.0 * math.log10(sig / err)


def tensor_sqnr(w: np.ndarray, dq: np.ndarray) -> float:
    """SQNR (dB) of ``dq`` against ``w`` over the whole tensor, in float64 (+inf when equal)."""
    w64, d = w.astype(np.float64), w.astype(np.float64) - dq.astype(np.float64)
    return _sqnr(float(np.sum(w64 * w64)), float(np.sum(d * d)))


def _figures(w: np.ndarray, dq: np.ndarray, axis: int | None) -> tuple[float, int | None, float, int]:
    total = tensor_sqnr(w, dq)
    if axis is None or w.ndim < 2:
        return total, None, total, 1
    w64, d = w.astype(np.float64), w.astype(np.float64) - dq.astype(np.float64)
    red = tuple(i for i in range(w.ndim) if i != axis)
    sig, err = np.sum(w64 * w64, axis=red), np.sum(d * d, axis=red)
    per = np.array([_sqnr(float(s), float(e)) for s, e in zip(sig, err, strict=True)])
    live = sig >= DEAD_CHANNEL * float(sig.max()) if sig.size else sig
    if not live.any():
        return total, None, total, len(per)
    worst = int(np.flatnonzero(live)[np.argmin(per[live])])
    return total, worst, float(per[worst]), len(per)


def weight_errors(plan, fp: onnx.ModelProto, qp: onnx.ModelProto) -> list[WeightError]:
    """Per quantized unit with a weight: its :class:`WeightError`, worst tensor SQNR first.

    ``plan``: the QuantPlan ``qp`` was written from; ``fp``: the float model the plan was made on
    (its node names are ``qp``'s); units whose weight the written model does not dequantize from
    constants (kept float, or fused away) are left out.

    Raises
    ------
    ModelError
        onnxruntime refuses the DequantizeLinear nodes (``make_session``'s message).
    """
    f_inits = {t.name: t for t in fp.graph.initializer}
    f_nodes = {n.name: n for n in fp.graph.node}
    q_nodes = {n.name: n for n in qp.graph.node}
    q_consts = {t.name: t for t in qp.graph.initializer}
    producer = {o: n for n in qp.graph.node for o in n.output if o}
    todo: list[tuple[str, onnx.NodeProto, onnx.NodeProto, str]] = []  # unit, float node, DQ, float weight
    for unit in plan.units.values():
        f, q = f_nodes.get(unit.node), q_nodes.get(unit.node)
        if unit.excluded or unit.graph or not unit.weight or f is None or q is None or unit.weight not in f_inits:
            continue
        pos = next((i for i, x in enumerate(f.input) if x == unit.weight), None)
        dq = producer.get(q.input[pos]) if pos is not None and pos < len(q.input) else None
        if dq is None or dq.op_type != "DequantizeLinear" or any(x and x not in q_consts for x in dq.input):
            continue
        todo.append((unit.node, f, dq, unit.weight))
    out = []
    for chunk in _chunks(todo, f_inits, key=lambda item: item[3]):
        values = dequantize_constants([dq for _, _, dq, _ in chunk], q_consts, qp)
        for (node, f, _dq, weight), value in zip(chunk, values, strict=True):
            w = tensor_array(f_inits[weight])  # lazy (external) weights memory-mapped
            if value.shape != w.shape:
                continue
            total, worst, worst_db, channels = _figures(w, value, channel_axis(f, w.ndim))
            out.append(WeightError(node, weight, total, worst, worst_db, channels))
    return sorted(out, key=lambda e: (e.sqnr_db, e.node))


def _chunks(todo: list, f_inits: dict, key) -> list[list]:
    """``todo`` in runs whose float weights (``f_inits[key(item)]``) total at most :data:`CHUNK_BYTES`
    (one item at least)."""
    out, run, size = [], [], 0
    for item in todo:
        t = f_inits[key(item)]
        n = int(np.prod(t.dims, dtype=np.int64)) * 4
        if run and size + n > CHUNK_BYTES:
            out.append(run)
            run, size = [], 0
        run.append(item)
        size += n
    return out + ([run] if run else [])


def chunked(todo: list, f_inits: dict, key) -> list[list]:
    """:func:`_chunks` for other modules of the analysis: runs of at most :data:`CHUNK_BYTES` of float
    weights, so dequantizing them one run at a time keeps memory bounded."""
    return _chunks(todo, f_inits, key)


def dequantize_constants(dqs: list[onnx.NodeProto], consts: dict[str, onnx.TensorProto],
                         qp: onnx.ModelProto) -> list[np.ndarray]:
    """The outputs of the DequantizeLinear nodes ``dqs`` of ``qp`` (their inputs all in ``consts``),
    computed by onnxruntime in one run, in order.

    Raises
    ------
    ModelError
        onnxruntime refuses the nodes.
    """
    names = sorted({x for n in dqs for x in n.input if x})
    outputs = [helper.make_empty_tensor_value_info(n.output[0]) for n in dqs]
    graph = helper.make_graph(list(dqs), "dequantize", [], outputs, [consts[x] for x in names])
    model = helper.make_model(graph, opset_imports=qp.opset_import, ir_version=qp.ir_version)
    sess = make_session(model, optimize=False, threads=1)
    return sess.run([n.output[0] for n in dqs], {})
