"""Writing a quantize result to disk as QDQ or QONNX (atomically)."""

from __future__ import annotations

from pathlib import Path

from workbench.core.errors import ExportError
from workbench.core.io.save import save_model
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.quantize import QuantizeResult
from workbench.core.qonnx.export import export_qonnx, qdq_only_blockers


def export(result: QuantizeResult, path: str | Path, *, format: str = "qdq", model: PreparedModel | None = None) -> Path:
    """Write ``result`` atomically to ``path`` (temp file + rename). Returns the path.

    ``format`` "qdq" writes ``result.proto``; "qonnx" writes QONNX (Quant / BipolarQuant /
    FloatQuant nodes, :mod:`workbench.core.qonnx.writer`), from ``model`` (the float model, keeps
    its weights; needed for bipolar weights) when given, else converted from ``result.proto``.

    Raises
    ------
    ExportError
        Target not writable, disk full, an unknown format, or a plan QDQ cannot hold
        (QONNX-only activation dtypes or bipolar weights exported as "qdq").
    """
    if format not in ("qdq", "qonnx"):
        raise ExportError(f"Unknown export format {format!r}.", hint="Use --format qdq or --format qonnx.")
    proto = result.proto
    if format == "qonnx":
        proto = export_qonnx(result, model)
    elif qdq_only_blockers(result.plan):
        raise ExportError(f"Nodes {', '.join(qdq_only_blockers(result.plan)[:5])} use QONNX-only dtypes "
                          "that QDQ cannot hold.", hint="Export with --format qonnx.")
    path = Path(path)
    save_model(proto, path)
    return path


