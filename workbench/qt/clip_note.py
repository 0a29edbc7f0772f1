"""The histogram's notes: which rows its clip range and its counts come from (the counts of the first few
rows, :data:`workbench.qt.runs.HISTOGRAM_SAMPLES`, of how many), and why a tensor has no clip range (kept
float by the recipe, its node excluded or not quantized, no calibration yet).

Pure functions over the document's plan and results (no Qt), read by :meth:`MainWindow._on_histogram`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from workbench.core.wording import count


def rows_note(calibration: dict | None, hist_rows: int | None, data_rows: int | None = None) -> str:
    """Which calibration rows the histogram's range and counts come from: ``"range from N calibration rows;
    histogram of the first M of K calibration rows"``. The clip range comes from every calibration row
    (``calibration["samples_seen"]``, the cache JSON; no range part without it), the drawn counts from the first
    ``hist_rows`` of the ``data_rows`` the calibration data offers (capped by the Samples setting), so the
    values drawn may stop short of the range: ``"histogram of all K calibration rows"`` when it drew them all,
    ``"histogram of the first M rows"`` when ``data_rows`` is unknown (None). "" when ``hist_rows`` is unknown."""
    if not hist_rows:
        return ""
    seen = (calibration or {}).get("samples_seen")
    if data_rows and hist_rows >= data_rows:
        drawn = f"histogram of {'all' if data_rows > 1 else 'the'} {count(int(data_rows), 'calibration row')}"
    elif data_rows:
        drawn = f"histogram of the first {int(hist_rows)} of {count(int(data_rows), 'calibration row')}"
    else:
        drawn = f"histogram of the first {count(int(hist_rows), 'row')}"
    return f"range from {count(int(seen), 'calibration row')}; {drawn}" if seen else drawn


def _producer(graph: Any, tensor: str) -> Any:
    return next((n for n in graph.node if tensor in n.output), None)


def _readers(graph: Any, tensor: str) -> list[str]:
    return [f"{n.name or n.op_type} ({n.op_type})" for n in graph.node if tensor in n.input]


def no_clip_reason(plan: Any, graph: Any, tensor: str, calibrated: bool, latency_kept: Collection[str] = ()) -> str:
    """Why ``tensor`` (a float tensor of ``graph``, an onnx GraphProto) has no clip range in the results of
    ``plan`` (:class:`workbench.core.planning.plan.QuantPlan`, None when the recipe does not plan); one
    clause ending the histogram's caption. ``calibrated``: results are shown (else: calibrate first; a
    calibration that quantized nothing counts); ``latency_kept``: the units the latency check's edits keep
    float (their exclusion is said to be its, not the recipe's)."""
    if not calibrated:
        return "no clip range yet: calibrate (Run > Calibrate, F5) to see it"
    if plan is None:
        return "no clip range: the recipe does not plan (see the Problems dock)"
    for unit in plan.units.values():
        if tensor in unit.float_outputs:
            readers = ", ".join(_readers(graph, tensor)) or "a graph output"
            return (f"no clip range: {tensor} stays float under this recipe (no quantized node reads it; "
                    f"read by {readers}), so it has no Q/DQ pair")
    node = _producer(graph, tensor)
    if node is None:
        return f"no clip range: {tensor} is a model input or initializer the recipe does not quantize"
    unit = next((u for u in plan.units.values() if node.name in u.nodes or node.name == u.node), None)
    if unit is not None and unit.excluded and unit.node in latency_kept:
        # not "on this machine": a reopened project's record was measured when (and where) it was saved
        return (f"no clip range: {unit.node} is kept float by the latency check (measured slower quantized; "
                "View > Problems says more)")
    if unit is not None and unit.excluded:
        return f"no clip range: {unit.node} is excluded (kept float) by the recipe"
    if tensor not in plan.activations and tensor not in plan.aliases:
        return f"no clip range: {node.name or tensor} ({node.op_type}) is not quantized under this recipe"
    return "no clip range: the last calibration has no range for this tensor (F5 measures again)"
