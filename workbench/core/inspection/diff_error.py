"""Per-edge error of a quantized file against its float model, measured on the user's data.

Both models run in onnxruntime on the same batches with the matched tensors of a
:class:`~workbench.core.inspection.model_diff.ModelDiff` added as outputs (``diff.tensors``: float
tensor -> the quantized file's tensor with the same value). Integer taps (a QLinearConv output
read by the next QLinear op) are dequantized with the scale and zero point the file holds,
``r = (q - zero_point) * scale`` (ONNX DequantizeLinear). For each tensor
``SQNR = 10 log10(sum(f^2) / sum((f - q)^2))`` in dB over all samples (float64 sums; +inf when
bit-exact). A model whose batch is fixed to 1 runs row by row. Tensors whose shapes differ between the two models, or integer taps without a
constant scale (ConvInteger's int32 accumulators), are left out. The quantized file runs with
onnxruntime's graph optimizations off, so each tap is the value its ONNX operators define (tapping a
tensor would stop some fusions anyway; fused integer kernels can differ from it by a rounding step).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import onnx

from workbench.core.calibration.instrument import output_infos
from workbench.core.data.finite import finite_rows
from workbench.core.data.loader import open_data_source, sample_batches
from workbench.core.errors import ModelError, runtime_reason
from workbench.core.inspection.correspond import check_models_correspond, renamed_outputs_note
from workbench.core.inspection.float_graph import float_as_written
from workbench.core.inspection.model_diff import ModelDiff, diff_models
from workbench.core.inspection.quant_reader import QuantTensor, read_quant_params
from workbench.core.inspection.tensor_dtypes import tensor_dtypes
from workbench.core.io.ort_session import QUIET_LOG, proto_session
from workbench.core.model.load import PreparedModel, prepare_proto
from workbench.core.progress import COMPARE_PHASES, CancelToken, ProgressFn, no_progress, one_step
from workbench.core.qonnx.reader import is_qonnx_node
from workbench.core.runtime.mx_simulation import simulation_proto

log = logging.getLogger(__name__)


def _dequantizer(tap: str, dtype: str, params: dict[str, QuantTensor]):
    """A function int array -> float array for an integer tap, identity for float, None when unknown."""
    if dtype in ("float", "float16", "bfloat16", "?"):
        return lambda a: a
    p = params.get(tap)
    if p is None or p.scale is None:
        return None
    scale = np.asarray(p.scale, np.float64)
    zp = np.asarray(p.zero_point, np.float64) if p.zero_point is not None else 0.0
    if scale.size > 1:
        return None  # per-channel activation taps do not occur in the formats read here
    return lambda a: (np.asarray(a, np.float64) - zp) * scale


def measure_diff(float_model: PreparedModel, quant_proto: onnx.ModelProto, diff: ModelDiff, data,
                 *, samples: int | None = None, progress: ProgressFn | None = None,
                 cancel: CancelToken | None = None, reference: onnx.ModelProto | None = None) -> dict[str, float]:
    """SQNR (dB) per matched float tensor, stored in ``diff.sqnr`` and returned.

    Memory: neither model is copied to add the tapped outputs (:func:`_tap_session`), and the tapped
    tensors of both models are held for one run at a time, each dropped once compared; a batch runs in row
    slices whose taps fit :data:`TAP_BUDGET` (:func:`_row_slices`).

    Parameters
    ----------
    float_model : PreparedModel
        The float model; its file (:func:`float_reference`) runs, as ``diff`` was made from it.
    quant_proto : onnx.ModelProto
        The quantized file.
    data : str, Path, dict or DataSource
        Samples for the float model's inputs (npz, image folder, spec; see ``open_data_source``).
    samples : int, optional
        At most this many samples (all by default).
    reference : onnx.ModelProto, optional
        :func:`float_reference` of ``float_model`` when the caller holds it already (not loaded again).
    progress : ProgressFn, optional
        Told the last two of :data:`~workbench.core.progress.COMPARE_PHASES`: the two sessions loaded (0..2),
        then the samples compared (0..samples).

    Raises
    ------
    ModelError
        onnxruntime refuses one of the models.
    DataError
        ``data`` does not fit the model's inputs.
    Cancelled
        ``cancel`` was set (checked between batches).
    """
    progress = progress or no_progress
    params = {p.tensor: p for p in read_quant_params(quant_proto)}
    qtypes = tensor_dtypes(quant_proto, list(params.values()))
    deq = {f: _dequantizer(q, qtypes.get(q, "?"), params) for f, q in diff.tensors.items()}
    pairs = {f: q for f, q in diff.tensors.items() if deq[f] is not None}
    if not pairs:
        return {}
    f_names, q_names = list(pairs), list(dict.fromkeys(pairs.values()))
    loading = COMPARE_PHASES[1][0]
    progress(0, 2, f"{loading}: the float model")
    f_sess = _tap_session(reference if reference is not None else float_reference(float_model), f_names)
    progress(1, 2, f"{loading}: the quantized model")
    q_sess = _tap_session(quant_proto, q_names, optimize=False)
    progress(2, 2, loading)
    q_inputs = {i.name for i in q_sess.get_inputs()}
    sums = {f: [0.0, 0.0] for f in f_names}  # float tensor -> [sum(f^2), sum((f - q)^2)]
    bad: set[str] = set()
    source = finite_rows(open_data_source(data, float_model))  # samples with NaN / Inf inputs are left out
    n = source.num_samples()
    total = min(n, samples) if (n and samples) else (samples or n or 0)
    done = 0
    progress(0, total, COMPARE_PHASES[2][0])
    per_row = [_row_bytes(f_sess, f_names) + _row_bytes(q_sess, q_names)]  # bytes of a row's taps; 0: unknown
    for batch in sample_batches(float_model, source, samples):
        first = next(iter(batch.values()))
        rows = len(first) if source.can_batch and np.ndim(first) else 0  # a stacked row may be a scalar
        for part in _row_slices(batch, rows, per_row):
            if cancel is not None:
                cancel.check()
            f_out = dict(zip(f_names, _run(f_sess, f_names, part, "the float model"), strict=True))
            q_out = dict(zip(q_names, _run(q_sess, q_names, {k: v for k, v in part.items() if k in q_inputs},
                                           "the quantized model"), strict=True))
            if rows and not per_row[0]:  # measured on the first run (one row)
                held = sum(np.asarray(a).nbytes for a in (*f_out.values(), *q_out.values()))
                per_row[0] = max(1, held // max(1, _rows_of(part, rows)))
            _accumulate(f_out, q_out, pairs, deq, sums, bad)
        done += rows or 1
        progress(done, total, COMPARE_PHASES[2][0])
    if source.note():
        log.warning("%s", source.note())
    diff.sqnr = {f: _db(*sums[f]) for f in f_names if f not in bad}
    diff.samples = done
    return diff.sqnr


#: Bytes of tapped tensors (both models' outputs of one run) a run may hold. What a row's taps take comes from
#: the sessions' output shapes (:func:`_row_bytes`) or, when one is not fixed, from a first run of one row; each
#: batch runs in slices of as many rows as fit (at least one). ppocrv4_rec (dynamic width) takes about 330 MB a
#: row: a batch of 8 rows peaked at 2848 MiB, row by row at 605 MiB.
TAP_BUDGET = 256 << 20
#: Bytes per element of onnxruntime's output types.
_ITEMSIZE = {"tensor(float)": 4, "tensor(double)": 8, "tensor(float16)": 2, "tensor(bfloat16)": 2, "tensor(int8)": 1,
             "tensor(uint8)": 1, "tensor(int16)": 2, "tensor(uint16)": 2, "tensor(int32)": 4, "tensor(uint32)": 4,
             "tensor(int64)": 8, "tensor(uint64)": 8, "tensor(bool)": 1}


def _row_bytes(sess, names: list[str]) -> int:
    """Bytes one row of the outputs ``names`` of ``sess`` takes (every axis after the first fixed in the
    session's output shapes), or 0 when one is not fixed or its type is not a plain tensor."""
    outs = {o.name: o for o in sess.get_outputs()}
    total = 0
    for name in names:
        o = outs.get(name)
        shape = o.shape if o is not None else None
        if not shape or o.type not in _ITEMSIZE or not all(isinstance(d, int) and d >= 0 for d in shape[1:]):
            return 0
        total += math.prod(shape[1:]) * _ITEMSIZE[o.type]
    return total


def _row_slices(batch: dict, rows: int, per_row: list[int]):
    """``batch`` (input -> array, ``rows`` rows on axis 0; 0: not sliceable) as feeds of consecutive rows: one
    row while ``per_row[0]`` (bytes of a row's taps, set by the caller after a run) is 0, then as many as
    :data:`TAP_BUDGET` holds (at least one); inputs without the row axis are passed whole."""
    if rows <= 1:
        yield batch
        return
    i = 0
    while i < rows:
        step = max(1, TAP_BUDGET // per_row[0]) if per_row[0] else 1
        yield {k: (v[i:i + step] if np.ndim(v) and len(v) == rows else v) for k, v in batch.items()}
        i += step


def _rows_of(part: dict, rows: int) -> int:
    """Rows in a slice made by :func:`_row_slices` of a batch of ``rows`` rows."""
    return next((len(v) for v in part.values() if np.ndim(v)), rows)


def _accumulate(f_out: dict, q_out: dict, pairs: dict[str, str], deq: dict, sums: dict[str, list[float]],
                bad: set[str]) -> None:
    """Add one batch to ``sums`` (float tensor -> [sum(f^2), sum((f - q)^2)], float64); a tensor whose
    shapes differ goes to ``bad``. Each tapped array is dropped from ``f_out`` / ``q_out`` once its last
    reader is done, so the float64 copies never pile up beside every tap of the batch."""
    readers = {q: 0 for q in q_out}
    for q in pairs.values():
        readers[q] += 1
    for f in list(f_out):
        q = pairs[f]
        a = np.asarray(f_out.pop(f), np.float64)
        b = deq[f](q_out[q])
        readers[q] -= 1
        if not readers[q]:
            del q_out[q]
        if a.shape != np.shape(b):
            bad.add(f)
            continue
        sums[f][0] += float(np.sum(a * a))
        sums[f][1] += float(np.sum((a - b) ** 2))


def _tap_session(proto: onnx.ModelProto, names: list[str], *, optimize: bool = True):
    """A CPU onnxruntime session of ``proto`` that also outputs the tensors ``names``.

    ``proto`` is neither modified nor copied: the extra outputs are a small serialised ModelProto
    appended to its graph's bytes (protobuf merges concatenated messages) and large weights are
    handed over in place (:func:`workbench.core.io.ort_session.proto_session`). ``optimize=False`` runs
    the graph as written (ORT_DISABLE_ALL). MX weights are made runnable first
    (:func:`workbench.core.runtime.mx_simulation.simulation_proto`).

    Raises
    ------
    ModelError
        onnxruntime refuses the model (its reason in the message).
    """
    import onnxruntime as ort

    proto = simulation_proto(proto)
    extra = onnx.ModelProto()
    extra.graph.output.extend(output_infos(proto, names))
    so = ort.SessionOptions()
    so.log_severity_level = QUIET_LOG
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        return proto_session(proto, so, extra.SerializeToString())
    except ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise ModelError(f"onnxruntime cannot load the model: {exc}",
                         hint="Check the model with `workbench-cli inspect`.") from None


def _run(sess, names: list[str], feed: dict, which: str) -> list:
    """``sess.run``; a model that takes one row at a time (batch fixed to 1) runs row by row and its
    outputs are stacked on axis 0."""
    try:
        return sess.run(names, feed)
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
        rows = {len(v) for v in feed.values() if np.ndim(v)}
        if len(rows) == 1 and rows != {1}:
            try:
                parts = [sess.run(names, {k: v[i:i + 1] for k, v in feed.items()}) for i in range(rows.pop())]
                return [np.concatenate([p[j] for p in parts], axis=0) for j in range(len(names))]
            except Exception:  # noqa: BLE001 - report the first failure below
                pass
        shapes = ", ".join(f"{k} {list(v.shape)}" for k, v in feed.items())
        raise ModelError(f"onnxruntime cannot run {which} on the data ({shapes}): {runtime_reason(exc, 300)}",
                         hint="Pick data made for both models (a file quantized with a fixed batch needs batch-1 "
                              "samples).") from None


def _db(sig: float, err: float) -> float:
    if err == 0.0:
        return math.inf
    if sig == 0.0:
        return -math.inf
    return 10.0 * math.log10(sig / err)


def compare_models(float_model: PreparedModel, quant_proto: onnx.ModelProto, data=None, *,
                   samples: int | None = None, progress: ProgressFn | None = None,
                   cancel: CancelToken | None = None, quant_label: str = "the quantized model") -> ModelDiff:
    """:func:`diff_models` of the two, then :func:`measure_diff` on ``data`` when given; ``progress`` is told the
    phases :data:`~workbench.core.progress.COMPARE_PHASES` (the last two only with ``data``).

    ``quant_proto`` is prepared first (a copy; unnamed and repeated node names named as ``open_model`` names
    them: ``Reshape_0``), so a raw ``onnx.load`` and an opened model give the same diff; that prepared graph
    is kept in ``ModelDiff.quant_proto`` (draw it, not the raw file, beside the diff).
    ``quant_label`` names the quantized file in errors.

    Raises
    ------
    ModelError
        ``quant_proto`` is not a model or is a QONNX file, the two models' graph inputs/outputs differ (names, count,
        ranks; outputs of other names but the same count are matched by position, with a note in
        ``ModelDiff.notes``) or no node matched (unrelated models), or onnxruntime refuses a model.
    """
    if not isinstance(quant_proto, onnx.ModelProto):
        raise ModelError("compare: the quantized model must be an onnx.ModelProto.", hint="Load it with onnx.load.")
    if any(is_qonnx_node(n) for n in quant_proto.graph.node):
        name = "FILE" if quant_label.startswith("the ") else quant_label
        raise ModelError(f"{quant_label} is a QONNX file (Quant nodes of qonnx.custom_op.general), which "
                         "onnxruntime cannot run, so it cannot be compared as it is.",
                         hint=f"Convert it to QDQ first (workbench-cli convert {name} OUT.onnx --to qdq) and compare "
                              "OUT.onnx, or compare the QDQ file it was exported from.")
    quant_proto = prepare_proto(quant_proto, as_written=True).proto  # the node names the canvas and `compare` show (case 24)
    reference = float_reference(float_model)
    float_label = str(float_model.path or "the float model")
    hint = "Compare a quantized file with the float model it was made from."
    check_models_correspond(reference, quant_proto, float_label, quant_label, hint=hint, outputs_by_position=True)
    # reported once the inputs and outputs correspond (a refusal there is the command's one line)
    matched = one_step(progress or no_progress, COMPARE_PHASES[0][0])
    diff = diff_models(reference, quant_proto)
    diff.quant_proto = quant_proto
    diff.notes += [n for n in [renamed_outputs_note(reference, quant_proto)] if n]
    if not diff.matches and len(reference.graph.node):
        n = len(reference.graph.node)
        which = "the float model's only node matches no node" if n == 1 else f"none of the {n} float nodes matches a node"
        raise ModelError(f"{float_label} and {quant_label} do not correspond: {which} of the quantized file.", hint=hint)
    matched()
    if data is not None:
        measure_diff(float_model, quant_proto, diff, data, samples=samples, progress=progress, cancel=cancel,
                     reference=reference)
    return diff


def float_reference(float_model: PreparedModel) -> onnx.ModelProto:
    """The float graph as its file holds it (what another tool quantized), named as the prepared one:
    :func:`workbench.core.inspection.float_graph.float_as_written` (nothing folded, so a BatchNormalization
    another tool kept is matched, not "added"); the prepared graph when the model has no file."""
    return float_as_written(float_model)
