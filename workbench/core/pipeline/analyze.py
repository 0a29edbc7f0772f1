"""Per-node-unit error of a quantize result on data (streams batches through both models)."""

from __future__ import annotations

from typing import Any

from workbench.core.analysis.unit_error import analyze_units
from workbench.core.data.loader import ANALYSIS_BATCH, open_data_source, sample_batches
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.quantize import QuantizeResult
from workbench.core.progress import CancelToken, ProgressFn


def analyze(model: PreparedModel, result: QuantizeResult, data: Any, *, samples: int | None = None,
            progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> list:
    """Per-node-unit error of ``result`` against ``model`` on ``data``, worst first.

    Returns
    -------
    list of :class:`workbench.core.analysis.unit_error.UnitError`
    """
    source = open_data_source(data, model)
    total = source.num_samples() or 0
    if samples:
        total = min(total, samples) if total else samples
    if source.can_batch:
        total = -(-total // ANALYSIS_BATCH)
    model = result.float_model or model
    return analyze_units(model.proto, result.proto, result.plan, result.tensor_map,
                         sample_batches(model, source, samples), progress=progress, cancel=cancel, total=total)


