"""Writing a quantize result to disk as QDQ or QONNX (atomically)."""

from __future__ import annotations

from pathlib import Path

from workbench.core.errors import ExportError
from workbench.core.io.save import save_model
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.quantize import QuantizeResult
from workbench.core.qonnx.export import export_qonnx, qdq_only_blockers
from workbench.core.qonnx.shapes import resolve_input_shapes
from workbench.core.qonnx.writer import with_static_shapes


def export(result: QuantizeResult, path: str | Path, *, format: str = "qdq", model: PreparedModel | None = None,
           input_shapes: dict[str, list[int]] | None = None, static_shapes: bool = False) -> Path:
    """Write ``result`` atomically to ``path`` (temp file + rename). Returns the path.

    ``format`` "qdq" writes ``result.proto``; "qonnx" writes QONNX (Quant / BipolarQuant /
    FloatQuant nodes, :mod:`workbench.core.qonnx.writer`), from ``model`` (the float model, keeps
    its weights; needed for bipolar weights) when given, else converted from ``result.proto``.
    With ``static_shapes`` (the CLI's default for QONNX) or ``input_shapes``, a QONNX file gets
    static input shapes and every tensor's shape in ``value_info`` (so the ``qonnx`` package runs
    it as written): ``input_shapes`` where given, batch 1 where the batch is an input's only
    symbolic dimension (:func:`workbench.core.qonnx.shapes.resolve_input_shapes`); the file then
    takes only those shapes.

    Raises
    ------
    ExportError
        Target not writable, disk full, an unknown format, or a plan QDQ cannot hold
        (QONNX-only activation dtypes or bipolar weights exported as "qdq"); ``input_shapes``
        with "qdq", naming no input or not fitting it.
    """
    if format not in ("qdq", "qonnx"):
        raise ExportError(f"Unknown export format {format!r}.", hint="Use --format qdq or --format qonnx.")
    if input_shapes and format != "qonnx":
        raise ExportError("--input-shape applies to QONNX exports only.", hint="Add --format qonnx, or drop --input-shape.")
    proto = result.proto
    if format == "qonnx":
        proto = export_qonnx(result, model)
        choice = resolve_input_shapes(proto, input_shapes, source=getattr(model, "name", None) or "the model")
        if choice.shapes is not None and (static_shapes or input_shapes):
            proto = with_static_shapes(proto, choice.shapes)
    elif qdq_only_blockers(result.plan):
        raise ExportError(f"Nodes {', '.join(qdq_only_blockers(result.plan)[:5])} use QONNX-only dtypes "
                          "that QDQ cannot hold.", hint="Export with --format qonnx.")
    path = Path(path)
    save_model(proto, path)
    return path


