"""What is in a model: a JSON-safe report for the CLI ``inspect`` verb and the app's info panel
(its text form: :func:`workbench.core.inspection.report_text.format_report`)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
from onnx import helper

from workbench.core.inspection.quant_reader import read_quant_params
from workbench.core.inspection.quant_summary import summarize_quantization
from workbench.core.inspection.quick import dtype_label
from workbench.core.inspection.report_text import format_report
from workbench.core.model.load import PreparedModel

__all__ = ["format_report", "inspect_model"]


def inspect_model(model: PreparedModel) -> dict:
    """Describe a prepared model.

    Returns
    -------
    dict
        JSON-safe: ``file``, ``sha256``, ``producer``, ``ir_version``, ``opsets`` (domain ->
        version), ``original_opset``, ``nodes`` (all graphs), ``nodes_main_graph``,
        ``op_histogram`` (op type -> count, ``domain::op`` outside the default domain, sorted by
        count), ``initializers``, ``weights`` (``count``, ``bytes``, ``elements``,
        ``by_dtype`` {dtype: bytes}, ``location`` "initializers" or "external data",
        ``external_data_files``, ``lifted_from_constant_nodes``), ``inputs`` / ``outputs`` ([{name, dtype, shape}]),
        ``subgraphs`` ([{path, nodes}]), ``quantized`` ({``nodes``, ``kinds`` {kind: count}: the
        summary's :attr:`~workbench.core.inspection.quant_summary.QuantSummary.kinds`, the formats as
        onnxruntime runs the nodes (a MatMulNBits at accuracy_level 4 is ``"dynamic"``, a Q / DQ at the edge
        of QOperator kernels ``"QOperator"``), ``op_types`` {op: count}, ``constant_weight_ops`` {float op: count}:
        the summary's :attr:`~workbench.core.inspection.quant_summary.QuantSummary.weighted`}), ``quantization_summary`` (one line, see
        :func:`workbench.core.inspection.quant_summary.summarize_quantization`; None for a float model),
        ``quantization_parameters`` (per quantized tensor, see
        :meth:`workbench.core.inspection.quant_reader.QuantTensor.to_json`), ``units`` (None here: the
        planner's view, :func:`workbench.core.inspection.units.planned_units`, is added by
        :func:`workbench.core.api.inspect_model` when asked, since it costs the recipe and planner
        imports), ``renames`` ([{kind, old, new, graph}]),
        ``ambiguous_names`` and ``notes``.
    """
    proto = model.proto
    params = read_quant_params(proto) if model.quantized else []
    hist: Counter = Counter()
    for _, node in model.iter_nodes():
        hist[node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"] += 1
    graphs = list(model.iter_graphs())
    summary = summarize_quantization(proto, params) if model.quantized else None
    return {
        "file": str(model.path) if model.path else None,
        "sha256": model.sha256,
        "producer": f"{proto.producer_name} {proto.producer_version}".strip(),
        "ir_version": proto.ir_version,
        "opsets": {(o.domain or "ai.onnx"): o.version for o in proto.opset_import},
        "original_opset": model.original_opset,
        "nodes": sum(hist.values()),
        "nodes_main_graph": len(proto.graph.node),
        "op_histogram": dict(hist.most_common()),
        "initializers": sum(len(g.initializer) for _, g in graphs),
        "weights": _weights(model, graphs),
        "inputs": [{"name": i.name, "dtype": i.dtype.name, "shape": list(i.shape)} for i in model.inputs],
        "outputs": [_value_info(vi) for vi in proto.graph.output],
        "subgraphs": [{"path": p, "nodes": len(g.node)} for p, g in graphs if p],
        "quantized": {
            "nodes": len(model.quantized),
            "kinds": dict(summary.kinds) if summary else {},  # one definition: the summary line's
            "op_types": dict(Counter(q.op_type for q in model.quantized).most_common()),
            "constant_weight_ops": dict(summary.weighted) if summary else {},
        },
        "quantization_summary": summary.text() if summary else None,
        "quantization_parameters": [q.to_json() for q in params],
        "units": None,
        "renames": [{"kind": r.kind, "old": r.old, "new": r.new, "graph": r.graph} for r in model.renames],
        "ambiguous_names": dict(model.ambiguous_names),
        "notes": list(model.notes),
    }


def _weights(model: PreparedModel, graphs) -> dict:
    by_dtype: Counter = Counter()
    elements = 0
    for _, g in graphs:
        for t in g.initializer:
            n = int(np.prod(t.dims)) if t.dims else 1
            elements += n
            by_dtype[_dtype_name(t.data_type)] += _nbytes(t, n)
    return {
        "count": sum(len(g.initializer) for _, g in graphs),
        "bytes": int(sum(by_dtype.values())),
        "elements": elements,
        "by_dtype": dict(by_dtype.most_common()),
        "location": "external data" if model.external_data_files else "initializers",
        "lifted_from_constant_nodes": model.lifted_constants,
        "external_data_files": list(model.external_data_files),
    }


def _dtype_name(data_type: int) -> str:
    return dtype_label(data_type, onnx.TensorProto.DataType.Name(data_type))


def _nbytes(t: onnx.TensorProto, n: int) -> int:
    if t.raw_data:
        return len(t.raw_data)
    try:
        return n * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        return 0


def _value_info(vi: onnx.ValueInfoProto) -> dict:
    tt = vi.type.tensor_type
    shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
    return {"name": vi.name, "dtype": _dtype_name(tt.elem_type) if tt.elem_type else "unknown", "shape": shape}
