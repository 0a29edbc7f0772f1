"""Writing a quantize result to disk as QDQ or QONNX (atomically).

A result that quantizes nothing (the latency check or the recipe kept every unit float) is written as the
input file holds it, with the recipe stamped in its metadata (:func:`float_as_given`): the CLI says "the model
written is the float model" and "the written model computes in float like the input", while ``result.proto`` is
the prepared float graph (Constants lifted, BatchNormalization and Conv affines folded, opset 13), which runs
alike only up to float rounding (ppocr_mobile_v2_cls: ``evaluate`` of the written file against the input read
132.84 dB, not inf). A QONNX export of such a result writes that file too (no Quant node to write), with only the
static input shapes every QONNX export gets when they apply (:func:`export`).
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

import onnx

from workbench.core.errors import ExportError, WorkbenchError
from workbench.core.graph.quantized_ops import find_quantized
from workbench.core.io.save import save_model
from workbench.core.model.load import PreparedModel, prepare_proto
from workbench.core.model.reader import read_opened_file
from workbench.core.pipeline.quantize import QuantizeResult
from workbench.core.qonnx.blockers import qdq_only_blockers

log = logging.getLogger(__name__)

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


def quantizes_nothing(result: QuantizeResult) -> bool:
    """True when ``result``'s plan keeps every node unit float (or the model has none: not
    :meth:`~workbench.core.planning.plan.QuantPlan.quantizes_any`) and its ``proto`` holds no quantized node (Q/DQ,
    integer kernel, in any graph): it computes what the float model does."""
    return not result.plan.quantizes_any() and not find_quantized(result.proto)


def float_as_given(result: QuantizeResult) -> onnx.ModelProto | None:
    """The model file ``result`` was quantized from, read again as given (every node, name, opset and weight of the
    file; external tensors loaded, the large ones memory-mapped), for a result that :func:`quantizes_nothing`; its
    metadata_props gain the ``workbench.*`` entries the writer stamped on ``result.proto`` (the recipe as written).

    A file whose names opening had to change (nodes sharing a name or unnamed, a tensor defined twice:
    ``PreparedModel.renames``) is given them, as :func:`~workbench.core.model.load.prepare_proto` does with
    ``as_written=True`` (Constants lifted; no opset upgrade, nothing folded): onnxruntime refuses two nodes of one
    name (shared/cases/24 as given: "two nodes with same node name (dup)"), and the notes, issues and a project
    name the nodes as opened (``dup_0``, ``dup_1``).

    Returns
    -------
    onnx.ModelProto or None
        None when ``result`` quantizes something, its input model has no file (built in memory), or the file no
        longer holds the bytes it was opened from or cannot be read (logged: ``result.proto``, the prepared float
        graph, is written then). Never raises.
    """
    model = result.input_model
    if model is None or model.path is None or not quantizes_nothing(result):
        return None
    try:
        proto = read_opened_file(Path(model.path), model.sha256) if model.sha256 else None
    except WorkbenchError as exc:
        log.warning("%s: cannot read it again (%s); the prepared (folded) float graph is written instead.",
                    model.path, exc)
        return None
    if proto is None:
        log.warning("%s: the file changed since it was opened; the prepared (folded) float graph is written "
                    "instead.", model.path)
        return None
    if model.renames:  # onnxruntime refuses the file's own names: the opened model's, on the graph as written
        proto = prepare_proto(proto, path=Path(model.path), sha256=model.sha256, as_written=True).proto
    _restamp(proto, result.proto)
    return proto


def _restamp(proto: onnx.ModelProto, written: onnx.ModelProto) -> None:
    """Give ``proto`` the ``workbench.*`` metadata_props of ``written`` (the recipe, mode, version and issues the
    writer stamped), after the file's own: ``cost``, ``convert`` and ``evaluate`` tell from them that ``quantize``
    wrote the file with every unit float (:func:`workbench.core.analysis.cost.written_float`)."""
    stamps = [p for p in written.metadata_props if p.key.startswith("workbench.")]
    keep = [p for p in proto.metadata_props if p.key not in {s.key for s in stamps}]
    del proto.metadata_props[:]
    proto.metadata_props.extend(keep + stamps)


def export(result: QuantizeResult, path: str | Path, *, format: str = "qdq", model: PreparedModel | None = None,
           input_shapes: dict[str, list[int]] | None = None, static_shapes: bool = False) -> Path:
    """Write ``result`` atomically to ``path`` (temp file + rename). Returns the path.

    ``format`` "qdq" writes ``result.proto``, or the input file as given when the result quantizes nothing
    (:func:`float_as_given`); "qonnx" writes QONNX (Quant / BipolarQuant /
    FloatQuant nodes, :mod:`workbench.core.qonnx.writer`), written again when ``model`` (the float model;
    needed for bipolar weights) is given, from ``result.written_from`` (the model ``result.proto`` was written
    from: SmoothQuant's weights, bias-corrected Conv biases) or ``model``, keeping its float weights; else
    converted from ``result.proto``; for a result that quantizes nothing, the input file as given, as "qdq" writes it.
    With ``static_shapes`` (the CLI's default for QONNX) or ``input_shapes``, a QONNX file gets
    static input shapes and every tensor's shape in ``value_info`` (so the ``qonnx`` package runs
    it as written): ``input_shapes`` where given, batch 1 where the batch is an input's only
    symbolic dimension (:func:`workbench.core.qonnx.shapes.resolve_input_shapes`); the file then
    takes only those shapes. That rewrite applies to the float file as given too (it is the one a QONNX file of a
    result quantizing nothing differs by from the QDQ file: none when the inputs are static already).

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
        proto = qonnx.export_qonnx_shaped(result, model, input_shapes, static_shapes, given=float_as_given(result))
    else:
        refuse_qdq_only(result.plan)
        given = float_as_given(result)
        proto = given if given is not None else proto
    path = Path(path)
    save_model(proto, path)
    return path


