"""How much each unit's weight loses in quantization: no data needed.

For every quantized unit whose weight reaches its node through a DequantizeLinear of constants in
the written QDQ model, the dequantized weight ``(q - zero_point) * scale`` (computed by onnxruntime,
so per-axis and per-block grids, int4 and float8 read as the model runs them) is compared with the
float weight:

    SQNR = 10 log10( sum(w^2) / sum((w - dq(w))^2) )   [dB]

over the whole tensor and per output channel (Conv: axis 0, Gemm: axis 0 with ``transB`` else 1,
MatMul: the last axis; ConvTranspose ``[C, M/group, k...]``: output channel ``g * M/group + j`` reads
rows ``g * C/group ...`` of column ``j``); the worst channel is reported, among the channels
holding at least :data:`DEAD_CHANNEL` of the largest channel's energy. A per-tensor grid
shared by channels of very different ranges shows up as a worst channel far below the tensor's
figure; per-channel grids keep them close. A ``Gemm(transB=1)`` the weight-only writer wrote as
``MatMul`` of the transposed weight ``[K, N]`` is compared with the float weight transposed back.

The sums run in float64 over slices of at most :data:`SLICE_ELEMENTS` elements, so no whole-tensor
float64 copy is made (memory stays near the weight's own size).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import onnx
from onnx import helper

from workbench.core.analysis.weight_grid import gemm_as_matmul, written_weights
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
    """Output-channel axis of ``node``'s weight (its input 1), None for other ops or ranks below 2
    (ConvTranspose: axis 1, whose index is the channel within its group, see :func:`channel_groups`)."""
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


def channel_groups(node: onnx.NodeProto, shape: tuple[int, ...]) -> int:
    """Groups of a ConvTranspose weight ``[C, M/group, k...]`` (its ``group`` attribute when it
    divides ``C``), else 1: output channel ``g * M/group + j`` is column ``j`` of group ``g``'s rows."""
    if node.op_type != "ConvTranspose" or not shape:
        return 1
    group = next((a.i for a in node.attribute if a.name == "group"), 1)
    return group if group > 1 and shape[0] % group == 0 else 1


#: Elements of one float64 slice of the error sums (2 MiB; a few such temporaries at a time).
SLICE_ELEMENTS = 1 << 18


def _sqnr(sig: float, err: float) -> float:
    if err == 0.0:
        return math.inf
    return -math.inf if sig == 0.0 else 10.0 * math.log10(sig / err)


def row_slices(w: np.ndarray):
    """``(start, stop)`` runs of axis 0 of ``w`` of at most :data:`SLICE_ELEMENTS` elements (one row at least)."""
    row = max(1, int(np.prod(w.shape[1:], dtype=np.int64)))
    step = max(1, SLICE_ELEMENTS // row)
    return ((i, min(i + step, w.shape[0])) for i in range(0, w.shape[0], step))


def channel_energy(w: np.ndarray, dq: np.ndarray, axis: int | None, groups: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per output channel, ``(sum w^2, sum (w - dq)^2)``: float64 arrays of ``groups * w.shape[axis]``
    channels (one entry for the whole tensor when ``axis`` is None).

    ``w``, ``dq``: same shape, any float dtype (``w`` may be memory-mapped); ``groups`` > 1 only with
    ``axis`` 1 (ConvTranspose: the rows of axis 0 split in ``groups`` runs, channel ``g * w.shape[1] + j``).
    Summed over slices of axis 0 in float64, :data:`SLICE_ELEMENTS` at a time.
    """
    if w.ndim == 0:
        w, dq = w.reshape(1), dq.reshape(1)
    width = 1 if axis is None else w.shape[axis]
    groups = groups if axis == 1 else 1
    sig = np.zeros(w.shape[0] if axis == 0 else (groups, width), np.float64)
    err = np.zeros_like(sig)
    for i, j in row_slices(w):
        wc = w[i:j].astype(np.float64)
        dc = wc - dq[i:j]
        wc *= wc
        dc *= dc
        if axis is None:
            sig += wc.sum()
            err += dc.sum()
            continue
        red = tuple(k for k in range(1, w.ndim) if k != axis)
        s, e = wc.sum(axis=red), dc.sum(axis=red)  # axis 0: (rows,); else (rows, width)
        if axis == 0:
            sig[i:j], err[i:j] = s, e
        elif groups == 1:
            sig[0] += s.sum(axis=0)
            err[0] += e.sum(axis=0)
        else:  # ConvTranspose: row r belongs to group r // (C / group)
            g = np.arange(i, j) // (w.shape[0] // groups)
            np.add.at(sig, g, s)
            np.add.at(err, g, e)
    return sig.reshape(-1), err.reshape(-1)


def tensor_sqnr(w: np.ndarray, dq: np.ndarray) -> float:
    """SQNR (dB) of ``dq`` against ``w`` (same shape) over the whole tensor, summed in float64 slices
    (+inf when equal, -inf when ``w`` is all zeros and ``dq`` is not)."""
    sig, err = channel_energy(w, dq, None)
    return _sqnr(float(sig.sum()), float(err.sum()))


def _figures(w: np.ndarray, dq: np.ndarray, axis: int | None, groups: int = 1) -> tuple[float, int | None, float, int]:
    if axis is None or w.ndim < 2:
        total = tensor_sqnr(w, dq)
        return total, None, total, 1
    sig, err = channel_energy(w, dq, axis, groups)
    total = _sqnr(float(sig.sum()), float(err.sum()))
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
    written = written_weights(plan, fp, qp)
    todo, f_inits, q_nodes, q_consts = written.units, written.f_inits, written.q_nodes, written.q_consts
    out = []
    for chunk in _chunks(todo, f_inits, key=lambda item: item[3]):
        values = dequantize_constants([dq for _, _, dq, _ in chunk], q_consts, qp)
        for (node, f, _dq, weight), value in zip(chunk, values, strict=True):
            w = tensor_array(f_inits[weight])  # lazy (external) weights memory-mapped
            value = _as_float_layout(f, q_nodes[node], w, value)
            if value is None:
                continue
            total, worst, worst_db, channels = _figures(w, value, channel_axis(f, w.ndim), channel_groups(f, w.shape))
            out.append(WeightError(node, weight, total, worst, worst_db, channels))
    return sorted(out, key=lambda e: (e.sqnr_db, e.node))


def _as_float_layout(f: onnx.NodeProto, q: onnx.NodeProto, w: np.ndarray, value: np.ndarray) -> np.ndarray | None:
    """``value`` (the written weight, dequantized) in the float weight ``w``'s layout, None when it has
    none: a ``Gemm(transB=1)`` written as ``MatMul`` reads ``w`` transposed (``[K, N]``)."""
    gemm_t = gemm_as_matmul(f, q)
    if gemm_t and value.ndim == 2 and value.T.shape == w.shape:
        return value.T
    return value if value.shape == w.shape and not gemm_t else None


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
