"""Per-node-unit error of a quantize result on data (streams batches through both models), in one
pass or as row-range shards through an executor (local processes, Ray) whose error sums add."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import onnx

from workbench.core.analysis.evaluate import EvalReport, evaluate
from workbench.core.analysis.executors import Executor, InlineExecutor
from workbench.core.analysis.noise_trace import probe_pairs
from workbench.core.analysis.own_noise import own_fragments, unit_nodes
from workbench.core.analysis.unit_error import accumulate, add_sums, unit_outputs, unit_rows, unit_segments
from workbench.core.data.finite import finite_rows
from workbench.core.data.loader import ANALYSIS_BATCH, open_data, open_data_source, sample_batches
from workbench.core.data.rows import RowRange, split_rows
from workbench.core.errors import DataError
from workbench.core.model.load import PreparedModel, prepare_proto
from workbench.core.pipeline.quantize import QuantizeResult
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.runtime.session import describe_runtime

#: What the per-unit taps run with: the quantized graph unfused, so every DequantizeLinear output
#: (a unit's fake-quantized output) can be read; the float graph at onnxruntime's default level.
UNIT_TAPS_RUNTIME = describe_runtime(False)


def analyze_end_to_end(model: PreparedModel, result: QuantizeResult, data: Any, *, samples: int | None = None,
                       progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> EvalReport:
    """The model outputs of ``result`` against the float model on ``data``, measured exactly as
    :func:`workbench.core.analysis.evaluate.evaluate` measures a written file (onnxruntime's default
    optimisations: fused integer kernels), so ``analyze``'s headline figure equals ``evaluate``'s, up to
    onnxruntime's float32 results at another batch size (about 1e-8 relative): batches of
    :data:`~workbench.core.data.loader.ANALYSIS_BATCH` rows, as the per-unit pass runs, so memory
    stays flat in the number of rows."""
    return evaluate(result.float_model or model, result.proto, data, samples=samples, progress=progress,
                    cancel=cancel, batch_size=ANALYSIS_BATCH)


def analyze(model: PreparedModel, result: QuantizeResult, data: Any, *, samples: int | None = None,
            executor: Executor | None = None, shards: int | None = None, own_noise: bool = True,
            progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> list:
    """Per-node-unit error of ``result`` against ``model`` on ``data``, worst first.

    With ``own_noise`` (the default) each unit's own noise is measured too: its QDQ fragment run on the
    float model's values of its inputs (:mod:`workbench.core.analysis.own_noise`; one more unfused run per
    batch, of the units alone), which :func:`workbench.core.analysis.sensitivity.local_sensitivity` then
    reports; the float residual Adds are probed only for the units whose fragment cannot be built (their
    figure is derived from the accumulated noise). Without it (autotune's ranking, kept as it was tuned)
    every own figure is derived.

    With ``executor`` (not inline) the rows are split into ``shards`` consecutive ranges (default:
    4), each measured as a task; the error sums of the shards add, so the figures equal a single
    pass up to float64 summation order (about 1e-12 relative) when both run the same batch sizes;
    where the tapped outputs of a batch exceed the memory budget
    (:data:`workbench.core.analysis.unit_error.TAP_BUDGET`) the runs are split, and onnxruntime's
    float32 results of different batch sizes may differ in their last bits (about 1e-8 relative).

    Returns
    -------
    UnitRows
        A list of :class:`workbench.core.analysis.unit_error.UnitError`, worst first, whose ``own`` holds
        the SQNR of each unit output computed from float inputs (``own_noise``), and ``probed`` the SQNR of
        the float residual Adds measured for the derived local SQNR (no rows of their own).
    """
    source = finite_rows(open_data_source(data, model))  # samples with NaN / Inf inputs are left out
    model = result.float_model or model
    if executor is not None and not isinstance(executor, InlineExecutor):
        return _sharded(model, result, source, samples, executor, shards or 4, own_noise, progress, cancel)
    total = source.num_samples() or 0
    if samples:
        total = min(total, samples) if total else samples
    if source.can_batch:
        total = -(-total // ANALYSIS_BATCH)
    pairs, own = _with_probes(model, result, own_noise)
    if not pairs:
        return []
    segs = unit_segments(model.proto, pairs)
    sums = accumulate(model.proto, result.proto, pairs, segs, sample_batches(model, source, samples), own=own,
                      progress=progress, cancel=cancel, total=total)
    return unit_rows(pairs, segs, sums)


def _with_probes(model: PreparedModel, result: QuantizeResult, own_noise: bool) -> tuple[dict, dict | None]:
    """``(pairs, own)``: the unit outputs to measure, and the float residual Adds (or other float nodes mixing
    noisy tensors) where the input trace of a unit whose own noise is derived stops, so its local SQNR has an
    input figure (:func:`workbench.core.analysis.noise_trace.probe_pairs`); ``own``: the units whose own noise
    is measured on float inputs (:func:`workbench.core.analysis.own_noise.unit_nodes`; None without
    ``own_noise``). No pairs when no unit output is measured."""
    pairs = unit_outputs(result.plan, result.tensor_map)
    if not pairs:
        return {}, None
    own = unit_nodes(result.plan, pairs) if own_noise else None
    frags = own_fragments(model.proto, result.proto, pairs, own) if own else None
    measured = {pairs[t][0] for t in frags.outputs} if frags is not None else set()
    derived = {u for u, _op, _q in pairs.values() if u not in measured} if own else None
    probes = probe_pairs(result.plan, model.proto, result.proto, pairs, units=derived)
    return {**pairs, **probes}, ({u: n for u, n in own.items() if u in measured} or None) if own else None


@dataclass(frozen=True)
class AnalysisShard:
    """Rows ``start..stop`` of the data, for both models (serialized) and the unit outputs to compare."""

    float_model: bytes
    quant_model: bytes
    pairs: dict
    segs: dict
    data_spec: dict
    start: int
    stop: int
    own: dict | None = None  # units whose own noise is measured (:func:`workbench.core.analysis.own_noise.unit_nodes`)


def analyze_shard(task: AnalysisShard) -> dict:
    """Run in a worker: the error sums of one shard (:func:`workbench.core.analysis.unit_error.accumulate`)."""
    fp = onnx.load_from_string(task.float_model)
    model = prepare_proto(fp)
    rows = finite_rows(RowRange(open_data(task.data_spec, model), task.start, task.stop))
    batches = rows.batches(ANALYSIS_BATCH)
    return accumulate(fp, onnx.load_from_string(task.quant_model), task.pairs, task.segs, batches, own=task.own)


def _sharded(model, result, source, samples, executor: Executor, shards: int, own_noise: bool, progress,
             cancel) -> list:
    n = source.num_samples()
    if n is None:
        raise DataError(f"{source.describe()}: sharded analysis needs the number of samples.",
                        hint="Use an .npz/.npy file or a folder, or analyze in one pass.")
    n = min(n, samples) if samples else n
    pairs, own = _with_probes(model, result, own_noise)
    if not pairs:
        return []
    segs = unit_segments(model.proto, pairs)
    fb, qb = model.proto.SerializeToString(), result.proto.SerializeToString()
    tasks = [AnalysisShard(fb, qb, pairs, segs, source.to_json(), a, b, own) for a, b in split_rows(n, shards)]
    parts = []
    if progress is not None:
        progress(0, len(tasks), "Measuring per-node error (shards)")
    results = executor.map(analyze_shard, tasks)
    try:
        for part in results:
            if cancel is not None:
                cancel.check()
            parts.append(part)
            if progress is not None:
                progress(len(parts), len(tasks), "Measuring per-node error (shards)")
    finally:
        results.close()
    return unit_rows(pairs, segs, add_sums(parts))
