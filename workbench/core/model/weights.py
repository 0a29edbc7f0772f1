"""Weights as initializers: Constant nodes lifted, initializers removed from graph inputs.

Uses the onnx_ir passes ``LiftConstantsToInitializersPass`` (every tensor-valued Constant, any
size, in every graph; a Constant that is a graph output stays) and
``RemoveInitializersFromInputsPass``. The common case -- no model-local functions, in every graph
(subgraphs too) each Constant holding a ``value`` tensor, tensor types (or none) in value_info, inputs
and outputs, initializers listed as inputs in the main graph only, each graph output made by a node of
its graph (see :func:`_plain`) -- is done on the protobuf directly (:func:`_lift_plain`), giving byte
for byte the model onnx_ir's round trip gives, value_info and sorted metadata_props included
(tests/test_weights_lift.py compares both on the corpus, the If-heavy silero_vad files, the corpus
after shape inference, an opset-upgraded model and an onnxruntime quantize_static export): importing
onnx_ir loads sympy, about 1.3 s of CPU and 40 MiB of resident memory per run on x86_64 AVX512-VNNI
(2 loaded cores), and its round trip of minilm_l6_v2 another 0.6 s, against 0.12 s here; ppocrv4_rec's
QDQ export (1,931 value_info entries written) takes 0.06-0.1 s here.
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
    plain = _lift_plain(proto, in_place=in_place, drop=frozenset(dropped))
    if plain is not None:
        return plain, before, dropped
    import onnx_ir as ir  # 0.4 s (it loads sympy): only for models outside the common case
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


class _Irregular(Exception):
    """The model is outside the common case: onnx_ir's round trip must write it."""


def _copy_field(dst, name: str, value) -> None:
    if isinstance(value, str) and not value:
        return  # a string field set but empty is not written, as onnx_ir writes it
    if hasattr(value, "extend"):
        getattr(dst, name).extend(value)
    elif hasattr(value, "CopyFrom"):
        getattr(dst, name).CopyFrom(value)
    else:
        setattr(dst, name, value)


def _lift_plain(proto: onnx.ModelProto, *, in_place: bool = False,
                drop: frozenset[str] = frozenset()) -> onnx.ModelProto | None:
    """Constants lifted (and the main graph's inputs named in ``drop`` removed) as onnx_ir's round trip
    does it, or None when the model is outside the common case (see the module docstring) and onnx_ir
    must do it. ``drop`` must be :func:`initializers_listed_as_inputs` of ``proto``.

    What onnx_ir writes there: the other model and graph fields as they were, each opset import
    with its domain set explicitly, the nodes other than Constant unchanged, the initializers then
    the lifted tensors (named by the Constant's output, in node order), and the value_info, inputs
    and outputs of :func:`_graph_infos`. Fields set but empty are dropped: strings of the model,
    graphs, nodes and attributes, a model_version of 0, and those of an input's, output's or
    value_info's type (:func:`_as_written`). metadata_props (model, graph, node, value) are written
    as a dict, sorted by key (:func:`_set_props`).
    A subgraph (If / Loop / Scan body) is written the same way: its Constants become its own
    initializers. ``in_place``: ``proto`` itself is rewritten and returned (only once every graph
    is known to be in the common case).
    """
    if not _plain_model(proto) or not all(_plain(g, main=not path) for path, g in iter_graphs(proto.graph)):
        return None
    try:
        if in_place:
            return _lift_model_in_place(proto, drop)
        out = onnx.ModelProto()
        for field, value in proto.ListFields():
            if field.name != "graph" and not (field.name == "model_version" and not value):
                _copy_field(out, field.name, value)
        for op in out.opset_import:
            op.domain = op.domain  # present on the wire, as onnx_ir writes it
        _order_props(out)
        _lift_graph(proto.graph, out.graph, drop)
        return out
    except _Irregular:
        return None


def _plain_model(proto: onnx.ModelProto) -> bool:
    """The model's own fields are in the common case: an ir_version, no model-local functions,
    training_info or device configurations (onnx_ir writes none of the last two), each opset domain
    imported once (onnx_ir keeps one version per domain)."""
    domains = [op.domain for op in proto.opset_import]
    return (proto.HasField("ir_version") and not (len(proto.functions) or len(proto.training_info)
                                                 or len(proto.configuration))
            and len(set(domains)) == len(domains))


def _plain(g: onnx.GraphProto, *, main: bool) -> bool:
    """``g`` alone is in the common case: no sparse initializers or quantization annotations, every
    Constant a ``value`` tensor held in the file that is not a graph output, no metadata_props on a
    tensor (initializer or Constant's), initializers named and
    unique (listed as inputs in the main graph only), node outputs unique and none an input's or
    initializer's name, every output listed once and made by a node of ``g`` (onnx_ir writes an
    output that is an input, an initializer or an outer graph's tensor with the output's type, on
    that tensor too). The types are checked while they are written (:func:`_as_written`)."""
    outputs = {o.name for o in g.output}
    if (len(g.sparse_initializer) or len(g.quantization_annotation)
            or any(len(t.metadata_props) for t in g.initializer)
            or any(n.op_type == "Constant" and (n.domain not in ("", "ai.onnx") or len(n.attribute) != 1
                                                or n.attribute[0].name != "value" or n.output[0] in outputs
                                                or n.attribute[0].t.data_location == onnx.TensorProto.EXTERNAL
                                                or len(n.attribute[0].t.metadata_props))
                   for n in g.node)):
        return False
    inputs = {i.name for i in g.input}
    inits = [t.name for t in g.initializer]
    init_set = set(inits)
    if len(init_set) != len(inits) or "" in init_set or (not main and init_set & inputs):
        return False
    made = [o for n in g.node for o in n.output if o]
    made_set = set(made)
    return (len(made_set) == len(made) and not made_set & (inputs | init_set)
            and outputs <= made_set and len(outputs) == len(g.output))


def _lift_model_in_place(proto: onnx.ModelProto, drop: frozenset[str]) -> onnx.ModelProto:
    """:func:`_lift_plain` on ``proto`` itself; raises :class:`_Irregular` before changing anything."""
    apply = _lift_graph_in_place(proto.graph, drop)
    _drop_empty_strings(proto)
    if proto.HasField("model_version") and not proto.model_version:
        proto.ClearField("model_version")  # onnx_ir writes it when not 0
    for op in proto.opset_import:
        op.domain = op.domain
    _order_props(proto)
    apply()
    return proto


def _lift_graph(g: onnx.GraphProto, out: onnx.GraphProto, drop: frozenset[str] = frozenset()) -> None:
    """Write ``g`` into the empty ``out`` with its Constants (and those of its subgraphs) lifted and
    its inputs named in ``drop`` removed; raises :class:`_Irregular`."""
    consts = [n for n in g.node if n.op_type == "Constant"]
    value_info, inputs, outputs = _graph_infos(g, consts, drop)
    nodes = [_lift_node(n) for n in g.node if n.op_type != "Constant"]
    for field, value in g.ListFields():
        if field.name not in ("node", "initializer", "value_info", "input", "output"):
            _copy_field(out, field.name, value)
    _order_props(out)
    out.input.extend(inputs)
    out.output.extend(outputs)
    out.node.extend(nodes)
    out.initializer.extend(g.initializer)
    _append_lifted(out, consts)
    out.value_info.extend(value_info)


def _lift_graph_in_place(g: onnx.GraphProto, drop: frozenset[str]):
    """:func:`_lift_graph` on ``g`` itself, in two steps: this call works out everything (and raises
    :class:`_Irregular`) without changing ``g``; the function it returns rewrites ``g``: the
    initializers stay where they are (not copied), the lifted tensors are appended to them, the
    nodes other than Constant, the inputs, outputs and value_info are written back."""
    consts = [n for n in g.node if n.op_type == "Constant"]
    value_info, inputs, outputs = _graph_infos(g, consts, drop)
    nodes = [_lift_node(n, always_copy=True) for n in g.node if n.op_type != "Constant"]

    def apply() -> None:
        _drop_empty_strings(g)
        _order_props(g)
        _append_lifted(g, consts)  # copies the tensors before the Constant nodes go
        for field, values in (("node", nodes), ("input", inputs), ("output", outputs), ("value_info", value_info)):
            del getattr(g, field)[:]  # the entries held in the lists stay readable (detached)
            getattr(g, field).extend(values)
    return apply


Infos = list[onnx.ValueInfoProto]


def _graph_infos(g: onnx.GraphProto, consts: list[onnx.NodeProto], drop: frozenset[str]) -> tuple[Infos, Infos, Infos]:
    """The value_info, inputs and outputs onnx_ir writes for ``g`` once its Constants ``consts`` are
    lifted and its inputs named in ``drop`` removed.

    value_info, in this order: one per initializer (the file's value_info entry for it as
    :func:`_as_written` writes it, for a removed input that input's entry, else element type and dims
    of the tensor), one per lifted Constant (type and dims of its tensor, the metadata_props of its
    value_info entry), then one per node output that is no graph output and has a value_info entry,
    in node order. The last entry of a name counts; entries of other names (inputs, outputs, names
    of no tensor of ``g``) are dropped, but a graph output keeps their metadata_props under its own.
    An input or output is written even when it holds nothing. Raises :class:`_Irregular` for an entry
    onnx_ir reads otherwise."""
    raw = {vi.name: vi for vi in g.value_info}
    written = {name: _as_written(vi) for name, vi in raw.items()}
    for vi in g.input:
        if vi.name in drop:
            written[vi.name] = _as_written(vi)
    out = [written[t.name] if t.name in written else _tensor_info(t) for t in g.initializer]
    out += [_tensor_info(n.attribute[0].t, n.output[0], raw.get(n.output[0])) for n in consts]
    output_names = {o.name for o in g.output}
    out += [written[name] for n in g.node if n.op_type != "Constant"
            for name in n.output if name in written and name not in output_names]
    inputs = [_as_written(vi, always=True) for vi in g.input if vi.name not in drop]
    outputs = [_as_written(vi, always=True, under=raw[vi.name].metadata_props if vi.name in raw else ())
               for vi in g.output]
    return [vi for vi in out if vi is not None], inputs, outputs


def _tensor_info(t: onnx.TensorProto, name: str = "", entry: onnx.ValueInfoProto | None = None) -> onnx.ValueInfoProto:
    """Element type and dims of ``t``, named ``name`` (else ``t``'s name), with ``entry``'s metadata_props."""
    vi = onnx.helper.make_tensor_value_info(name or t.name, t.data_type, list(t.dims))
    if entry is not None and len(entry.metadata_props):
        _set_props(vi, entry.metadata_props)
    return vi


_DTYPES = frozenset(onnx.TensorProto.DataType.values())


def _as_written(vi: onnx.ValueInfoProto, *, always: bool = False, under=()) -> onnx.ValueInfoProto | None:
    """``vi`` as onnx_ir writes it back: ``vi`` itself when unchanged, else a copy without the type
    when it has none of its kinds set, without the empty denotations / doc_string set, with its
    metadata_props (over those in ``under``: a graph output's value_info entry) sorted. None when it
    holds nothing (no type, doc_string or metadata_props) unless ``always`` (inputs, outputs).
    Raises :class:`_Irregular` for no name field, a non-tensor type, a tensor type without (or with
    an unknown) elem_type."""
    if not vi.HasField("name"):
        raise _Irregular(vi.name)
    props_ok = not len(under) and (not len(vi.metadata_props) or _props_in_order(vi.metadata_props))
    if not vi.type.HasField("tensor_type"):
        if vi.type.WhichOneof("value") is not None:
            raise _Irregular(vi.name)  # sequence, optional, map, sparse: onnx_ir reads them its own way
        if not (always or vi.doc_string or len(vi.metadata_props) or len(under)):
            return None
        if not vi.HasField("type") and (vi.doc_string or not vi.HasField("doc_string")) and props_ok:
            return vi
        bare = onnx.ValueInfoProto(name=vi.name)
        if vi.doc_string:
            bare.doc_string = vi.doc_string
        _set_props(bare, under, vi.metadata_props)
        return bare
    tt = vi.type.tensor_type
    if not tt.HasField("elem_type") or tt.elem_type not in _DTYPES:
        raise _Irregular(vi.name)
    empty_dims = [i for i, d in enumerate(tt.shape.dim) if d.HasField("denotation") and not d.denotation]
    empty_doc = vi.HasField("doc_string") and not vi.doc_string
    empty_type_doc = vi.type.HasField("denotation") and not vi.type.denotation
    if not (empty_dims or empty_doc or empty_type_doc or not props_ok):
        return vi
    copy = onnx.ValueInfoProto()
    copy.CopyFrom(vi)
    for i in empty_dims:
        copy.type.tensor_type.shape.dim[i].ClearField("denotation")
    if empty_doc:
        copy.ClearField("doc_string")
    if empty_type_doc:
        copy.type.ClearField("denotation")
    if not props_ok:
        _set_props(copy, under, vi.metadata_props)
    return copy


def _append_lifted(g: onnx.GraphProto, consts: list[onnx.NodeProto]) -> None:
    """Append each Constant's tensor to ``g``'s initializers, named by its output."""
    for n in consts:
        t = g.initializer.add()
        t.CopyFrom(n.attribute[0].t)
        t.name = n.output[0]


def _props_in_order(props) -> bool:
    """metadata_props as onnx_ir writes them: keys sorted, each once, key and value both set."""
    keys = [p.key for p in props]
    return (all(a < b for a, b in zip(keys, keys[1:], strict=False))
            and all(p.HasField("key") and p.HasField("value") for p in props))


def _order_props(msg) -> None:
    """Write ``msg``'s metadata_props as onnx_ir writes them (:func:`_set_props`)."""
    if not _props_in_order(msg.metadata_props):
        _set_props(msg, msg.metadata_props)


def _set_props(msg, *sources) -> None:
    """Set ``msg``'s metadata_props to those of ``sources`` as onnx_ir writes a dict of them: the last
    value of a key counts, keys sorted."""
    props = {p.key: p.value for src in sources for p in src}
    del msg.metadata_props[:]
    for key in sorted(props):
        msg.metadata_props.add(key=key, value=props[key])


def _drop_empty_strings(msg) -> None:
    """Clear the string fields of ``msg`` that are set but empty (what :func:`_copy_field` skips)."""
    for field, value in msg.ListFields():
        if isinstance(value, str) and not value:
            msg.ClearField(field.name)


def _lift_node(n: onnx.NodeProto, *, always_copy: bool = False) -> onnx.NodeProto:
    """``n`` itself, or a copy whose subgraph attributes are lifted (:func:`_lift_graph`), whose
    explicitly empty name, domain or doc_string (its own or an attribute's) is dropped (onnx_ir writes
    them only when not empty) and whose metadata_props are sorted (:func:`_order_props`).
    ``always_copy``: a copy even when nothing changes. Raises :class:`_Irregular` for device
    configurations."""
    if len(n.device_configurations):
        raise _Irregular(n.name)
    empty = [f for f in ("name", "domain", "doc_string") if n.HasField(f) and not getattr(n, f)]
    props_ok = not len(n.metadata_props) or _props_in_order(n.metadata_props)
    if not always_copy and not empty and props_ok and not any(
            a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
            or (a.HasField("doc_string") and not a.doc_string) for a in n.attribute):
        return n
    copy = onnx.NodeProto()
    copy.CopyFrom(n)
    for f in empty:
        copy.ClearField(f)
    if not props_ok:
        _order_props(copy)
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
