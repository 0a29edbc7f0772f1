"""Per-node-unit error of a quantize result on data (streams batches through both models), in one
pass or as row-range shards through an executor (local processes, Ray) whose error sums add."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import onnx

from workbench.core.analysis.evaluate import EvalReport, evaluate
from workbench.core.analysis.executors import Executor, InlineExecutor
from workbench.core.analysis.noise_trace import probe_pairs
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
            executor: Executor | None = None, shards: int | None = None,
            progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> list:
    """Per-node-unit error of ``result`` against ``model`` on ``data``, worst first.

    With ``executor`` (not inline) the rows are split into ``shards`` consecutive ranges (default:
    4), each measured as a task; the error sums of the shards add, so the figures equal a single
    pass up to float64 summation order (about 1e-12 relative) when both run the same batch sizes;
    where the tapped outputs of a batch exceed the memory budget
    (:data:`workbench.core.analysis.unit_error.TAP_BUDGET`) the runs are split, and onnxruntime's
    float32 results of different batch sizes may differ in their last bits (about 1e-8 relative).

    Returns
    -------
    UnitRows
        A list of :class:`workbench.core.analysis.unit_error.UnitError`, worst first, whose ``probed``
        holds the SQNR of the float residual Adds measured for the local SQNR (no rows of their own).
    """
    source = finite_rows(open_data_source(data, model))  # samples with NaN / Inf inputs are left out
    model = result.float_model or model
    if executor is not None and not isinstance(executor, InlineExecutor):
        return _sharded(model, result, source, samples, executor, shards or 4, progress, cancel)
    total = source.num_samples() or 0
    if samples:
        total = min(total, samples) if total else samples
    if source.can_batch:
        total = -(-total // ANALYSIS_BATCH)
    pairs = _with_probes(model, result)
    if not pairs:
        return []
    segs = unit_segments(model.proto, pairs)
    sums = accumulate(model.proto, result.proto, pairs, segs, sample_batches(model, source, samples),
                      progress=progress, cancel=cancel, total=total)
    return unit_rows(pairs, segs, sums)


def _with_probes(model: PreparedModel, result: QuantizeResult) -> dict:
    """The unit outputs to measure, and the float residual Adds (or other float nodes mixing noisy
    tensors) where a unit's input trace stops, so its local SQNR has an input figure
    (:func:`workbench.core.analysis.noise_trace.probe_pairs`); none when no unit output is measured."""
    pairs = unit_outputs(result.plan, result.tensor_map)
    if not pairs:
        return {}
    return {**pairs, **probe_pairs(result.plan, model.proto, result.proto, pairs)}


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


def analyze_shard(task: AnalysisShard) -> dict:
    """Run in a worker: the error sums of one shard (:func:`workbench.core.analysis.unit_error.accumulate`)."""
    fp = onnx.load_from_string(task.float_model)
    model = prepare_proto(fp)
    rows = finite_rows(RowRange(open_data(task.data_spec, model), task.start, task.stop))
    batches = rows.batches(ANALYSIS_BATCH)
    return accumulate(fp, onnx.load_from_string(task.quant_model), task.pairs, task.segs, batches)


def _sharded(model, result, source, samples, executor: Executor, shards: int, progress, cancel) -> list:
    n = source.num_samples()
    if n is None:
        raise DataError(f"{source.describe()}: sharded analysis needs the number of samples.",
                        hint="Use an .npz/.npy file or a folder, or analyze in one pass.")
    n = min(n, samples) if samples else n
    pairs = _with_probes(model, result)
    if not pairs:
        return []
    segs = unit_segments(model.proto, pairs)
    fb, qb = model.proto.SerializeToString(), result.proto.SerializeToString()
    tasks = [AnalysisShard(fb, qb, pairs, segs, source.to_json(), a, b) for a, b in split_rows(n, shards)]
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
