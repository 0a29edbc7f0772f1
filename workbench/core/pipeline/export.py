"""Writing a quantize result to disk as QDQ or QONNX (atomically)."""

from __future__ import annotations

import importlib
from pathlib import Path

from workbench.core.errors import ExportError
from workbench.core.io.save import save_model
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.quantize import QuantizeResult
from workbench.core.qonnx.blockers import qdq_only_blockers

#: what :func:`refuse_qdq_only` tells the command line to do
QDQ_ONLY_CLI_HINT = "Export with --format qonnx."


def refuse_qdq_only(plan, *, hint: str = QDQ_ONLY_CLI_HINT) -> None:
    """Refuse a QDQ export of ``plan`` (a :class:`workbench.core.planning.plan.Plan`) that uses QONNX-only dtypes
    QDQ cannot hold (QONNX-only activations, bipolar weights; :func:`workbench.core.qonnx.blockers.qdq_only_blockers`).
    Cheap: check it before calibrating. ``hint`` says what to do in the caller's words (the CLI's by default).

    Raises
    ------
    ExportError
        Naming the node units (the first five) and their dtypes, e.g. "A QDQ file cannot hold the QONNX-only
        dtypes of 1 node unit: conv1 (weight bipolar)."
    """
    blockers = qdq_only_blockers(plan)
    if not blockers:
        return
    units = {u.node: u for u in plan.units.values()}

    def dtypes(node: str) -> str:
        cfg = units[node].config
        parts = [(role, getattr(cfg, role)) for role in ("weight", "activation")]
        return ", ".join(f"{role} {spec.dtype}" for role, spec in parts
                         if spec is not None and (spec.qtype.qonnx_only or spec.dtype == "bipolar"))

    named = "; ".join(f"{n} ({dtypes(n)})" for n in blockers[:5]) + (" ..." if len(blockers) > 5 else "")
    raise ExportError(f"A QDQ file cannot hold the QONNX-only dtypes of {len(blockers)} node "
                      f"unit{'s' if len(blockers) != 1 else ''}: {named}.", hint=hint)


def export(result: QuantizeResult, path: str | Path, *, format: str = "qdq", model: PreparedModel | None = None,
           input_shapes: dict[str, list[int]] | None = None, static_shapes: bool = False) -> Path:
    """Write ``result`` atomically to ``path`` (temp file + rename). Returns the path.

    ``format`` "qdq" writes ``result.proto``; "qonnx" writes QONNX (Quant / BipolarQuant /
    FloatQuant nodes, :mod:`workbench.core.qonnx.writer`), written again when ``model`` (the float model;
    needed for bipolar weights) is given, from ``result.written_from`` (the model ``result.proto`` was written
    from: SmoothQuant's weights, bias-corrected Conv biases) or ``model``, keeping its float weights; else
    converted from ``result.proto``.
    With ``static_shapes`` (the CLI's default for QONNX) or ``input_shapes``, a QONNX file gets
    static input shapes and every tensor's shape in ``value_info`` (so the ``qonnx`` package runs
    it as written): ``input_shapes`` where given, batch 1 where the batch is an input's only
    symbolic dimension (:func:`workbench.core.qonnx.shapes.resolve_input_shapes`); the file then
    takes only those shapes.

    Raises
    ------
    ExportError
        Target not writable, disk full, an unknown format, or a plan QDQ cannot hold
        (QONNX-only activation dtypes or bipolar weights exported as "qdq": :func:`refuse_qdq_only`, which
        callers run before calibrating); ``input_shapes``
        with "qdq", naming no input or not fitting it.
    """
    if format not in ("qdq", "qonnx"):
        raise ExportError(f"Unknown export format {format!r}.", hint="Use --format qdq or --format qonnx.")
    if input_shapes and format != "qonnx":
        raise ExportError("--input-shape applies to QONNX exports only.", hint="Add --format qonnx, or drop --input-shape.")
    proto = result.proto
    if format == "qonnx":
        # loaded here: a QDQ export (the default) does not load the QONNX converter, reader and writer
        qonnx = importlib.import_module("workbench.core.qonnx.export")
        proto = qonnx.export_qonnx_shaped(result, model, input_shapes, static_shapes)
    else:
        refuse_qdq_only(result.plan)
    path = Path(path)
    save_model(proto, path)
    return path


