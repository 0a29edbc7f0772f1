"""Weights as initializers: Constant nodes lifted, initializers removed from graph inputs.

Uses the onnx_ir passes ``LiftConstantsToInitializersPass`` (every tensor-valued Constant, any
size, in every graph; a Constant that is a graph output stays) and
``RemoveInitializersFromInputsPass``. The common case -- no model-local functions, in every graph
(subgraphs too) each Constant holding a ``value`` tensor and no value_info, no initializer listed as
an input -- is done on the protobuf directly (:func:`_lift_plain`), giving byte for byte the model
onnx_ir's round trip gives (tests/test_weights_lift.py compares both on the corpus, the If-heavy
silero_vad files included): importing onnx_ir loads sympy,
about 1.3 s of CPU and 40 MiB of resident memory per run on x86_64 AVX512-VNNI (2 loaded cores),
and its round trip of minilm_l6_v2 another 0.6 s, against 0.12 s here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import onnx

from workbench.core.graph.walk import iter_graphs

if TYPE_CHECKING:
    import onnx_ir as ir

log = logging.getLogger(__name__)

_TENSOR_ATTRS = {"value", "value_float", "value_floats", "value_int", "value_ints"}


def count_constants(proto: onnx.ModelProto) -> int:
    """Number of liftable Constant nodes (tensor-valued) in all graphs."""
    n = 0
    for _, g in iter_graphs(proto.graph):
        n += sum(1 for node in g.node if node.op_type == "Constant" and node.domain in ("", "ai.onnx")
                 and len(node.attribute) == 1 and node.attribute[0].name in _TENSOR_ATTRS)
    return n


def initializers_listed_as_inputs(proto: onnx.ModelProto) -> list[str]:
    """Names of main-graph initializers that are also listed in ``graph.input``."""
    inits = {t.name for t in proto.graph.initializer}
    return [vi.name for vi in proto.graph.input if vi.name in inits]


def lift_weights(proto: onnx.ModelProto, *, in_place: bool = False) -> tuple[onnx.ModelProto, int, list[str]]:
    """Lift Constant nodes to initializers and drop initializers from the graph inputs.

    ``in_place=True`` lets the common case (:func:`_lift_plain`) rewrite ``proto`` itself instead of
    writing a copy: same bytes, without copying every initializer (0.12 s of CPU on the 90 MB
    minilm_l6_v2). The caller must own ``proto``; the onnx_ir path still returns a new model.

    Returns
    -------
    proto : onnx.ModelProto
        A new model (the argument is not modified), or ``proto`` itself when ``in_place`` and the
        common case applied.
    lifted : int
        Number of Constant nodes turned into initializers.
    dropped_inputs : list of str
        Initializers that were also graph inputs and were removed from ``graph.input``.
    """
    before = count_constants(proto)
    dropped = initializers_listed_as_inputs(proto)
    if not before and not dropped:
        return proto, 0, []
    plain = None if dropped else _lift_plain(proto, in_place=in_place)
    if plain is not None:
        return plain, before, []
    import onnx_ir as ir  # 0.4 s (it loads sympy): only for models that hold Constant weights
    from onnx_ir.passes.common import RemoveInitializersFromInputsPass

    try:
        model = ir.from_proto(proto)
        if before:
            _lift(model)
        if dropped:
            RemoveInitializersFromInputsPass()(model)
        out = ir.to_proto(model)
    except Exception as exc:  # noqa: BLE001 - onnx_ir rejects some malformed graphs; keep the model as is
        log.warning("lifting constants skipped: %s", exc)
        return proto, 0, []
    return out, before - count_constants(out), dropped


def _copy_field(dst, name: str, value) -> None:
    if isinstance(value, str) and not value:
        return  # a string field set but empty is not written, as onnx_ir writes it
    if hasattr(value, "extend"):
        getattr(dst, name).extend(value)
    elif hasattr(value, "CopyFrom"):
        getattr(dst, name).CopyFrom(value)
    else:
        setattr(dst, name, value)


def _lift_plain(proto: onnx.ModelProto, *, in_place: bool = False) -> onnx.ModelProto | None:
    """Constants lifted as onnx_ir's round trip lifts them, or None when the model is outside the
    common case (see the module docstring) and onnx_ir must do it.

    What onnx_ir writes there: the other model and graph fields as they were, each opset import
    with its domain set explicitly, the nodes other than Constant unchanged, the initializers then
    the lifted tensors (named by the Constant's output, in node order), and one value_info
    (element type and dims) per initializer, in initializer order. Fields set but empty are
    dropped: strings of the model, graphs, nodes and attributes, and the type and doc_string of an
    input or output. A subgraph (If / Loop / Scan body) is written the same way: its
    Constants become its own initializers. ``in_place``: ``proto`` itself is rewritten and returned.
    """
    if len(proto.functions) or not all(_plain(g) for _, g in iter_graphs(proto.graph)):
        return None
    if in_place:
        _drop_empty_strings(proto)
        for op in proto.opset_import:
            op.domain = op.domain
        _lift_graph_in_place(proto.graph)
        return proto
    out = onnx.ModelProto()
    for field, value in proto.ListFields():
        if field.name != "graph":
            _copy_field(out, field.name, value)
    for op in out.opset_import:
        op.domain = op.domain  # present on the wire, as onnx_ir writes it
    _lift_graph(proto.graph, out.graph)
    return out


def _plain(g: onnx.GraphProto) -> bool:
    """``g`` alone is in the common case: no value_info, sparse initializers or quantization
    annotations, and every Constant a ``value`` tensor held in the file that is not a graph output."""
    outputs = {o.name for o in g.output}
    return not (len(g.value_info) or len(g.sparse_initializer) or len(g.quantization_annotation)
                or any(n.op_type == "Constant" and (n.domain not in ("", "ai.onnx") or len(n.attribute) != 1
                                                    or n.attribute[0].name != "value" or n.output[0] in outputs
                                                    or n.attribute[0].t.data_location == onnx.TensorProto.EXTERNAL)
                       for n in g.node))


def _lift_graph(g: onnx.GraphProto, out: onnx.GraphProto) -> None:
    """Write ``g`` into the empty ``out`` with its Constants (and those of its subgraphs) lifted."""
    for field, value in g.ListFields():
        if field.name not in ("node", "initializer", "value_info"):
            _copy_field(out, field.name, value)
    _drop_empty_io_fields(out)
    consts = [n for n in g.node if n.op_type == "Constant"]
    out.node.extend(_lift_node(n) for n in g.node if n.op_type != "Constant")
    out.initializer.extend(g.initializer)
    _append_lifted(out, consts)


def _drop_empty_io_fields(g: onnx.GraphProto) -> None:
    """Clear the type and doc_string of ``g``'s inputs and outputs that are set but empty, as onnx_ir drops them."""
    for vi in list(g.input) + list(g.output):
        if vi.HasField("type") and not vi.type.ByteSize():
            vi.ClearField("type")
        if vi.HasField("doc_string") and not vi.doc_string:
            vi.ClearField("doc_string")


def _append_lifted(g: onnx.GraphProto, consts: list[onnx.NodeProto]) -> None:
    """Append each Constant's tensor to ``g``'s initializers (named by its output), then one value_info
    per initializer (``g`` has none before)."""
    for n in consts:
        t = g.initializer.add()
        t.CopyFrom(n.attribute[0].t)
        t.name = n.output[0]
    g.value_info.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                        for t in g.initializer)


def _drop_empty_strings(msg) -> None:
    """Clear the string fields of ``msg`` that are set but empty (what :func:`_copy_field` skips)."""
    for field, value in msg.ListFields():
        if isinstance(value, str) and not value:
            msg.ClearField(field.name)


def _lift_graph_in_place(g: onnx.GraphProto) -> None:
    """:func:`_lift_graph` on ``g`` itself: the initializers stay where they are (not copied), the
    lifted tensors are appended to them and the nodes other than Constant are written back."""
    _drop_empty_strings(g)
    _drop_empty_io_fields(g)
    consts = [n for n in g.node if n.op_type == "Constant"]
    _append_lifted(g, consts)  # copies the tensors before the Constant nodes go
    nodes = [_lift_node(n, always_copy=True) for n in g.node if n.op_type != "Constant"]
    del g.node[:]
    g.node.extend(nodes)


def _lift_node(n: onnx.NodeProto, *, always_copy: bool = False) -> onnx.NodeProto:
    """``n`` itself, or a copy whose subgraph attributes are lifted (:func:`_lift_graph`) and whose
    explicitly empty name, domain or doc_string (its own or an attribute's) is dropped (onnx_ir writes
    them only when not empty). ``always_copy``: a copy even when nothing changes."""
    empty = [f for f in ("name", "domain", "doc_string") if n.HasField(f) and not getattr(n, f)]
    if not always_copy and not empty and not any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                                          or (a.HasField("doc_string") and not a.doc_string) for a in n.attribute):
        return n
    copy = onnx.NodeProto()
    copy.CopyFrom(n)
    for f in empty:
        copy.ClearField(f)
    for a in copy.attribute:
        if a.HasField("doc_string") and not a.doc_string:
            a.ClearField("doc_string")
    for a in copy.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            lifted = onnx.GraphProto()
            _lift_graph(a.g, lifted)
            a.g.CopyFrom(lifted)
        elif a.type == onnx.AttributeProto.GRAPHS:
            for sub in a.graphs:
                lifted = onnx.GraphProto()
                _lift_graph(sub, lifted)
                sub.CopyFrom(lifted)
    return copy


def _lift(model: ir.Model) -> None:
    from onnx_ir.passes.common import LiftConstantsToInitializersPass

    try:
        LiftConstantsToInitializersPass(lift_all_constants=True, size_limit=0)(model)
    except ValueError:  # e.g. a sparse_value Constant: lift only the tensor-valued ones
        LiftConstantsToInitializersPass(lift_all_constants=False, size_limit=0)(model)
