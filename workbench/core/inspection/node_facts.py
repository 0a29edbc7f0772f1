"""What one node is, as Netron shows it: op type and domain, its attributes written compactly, and
each input and output with the tensor's name, element type and shape (shape inference's results,
symbolic dims by their names), weights (initializers) with their size.

:class:`NodeFactsIndex` reads a model's tensors once (every graph, subgraphs included);
:meth:`NodeFactsIndex.facts` then describes one node without touching weight data (only tensor
attributes of at most :data:`SHOWN_VALUES` elements are read, to show their values).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, numpy_helper

from workbench.core.graph.contrib_stand_ins import stand_in_contrib_ops
from workbench.core.graph.dim_names import dim_of
from workbench.core.graph.skeleton import shape_skeleton
from workbench.core.graph.walk import iter_graphs
from workbench.core.inspection.quant_reader import dtype_name, read_quant_params
from workbench.core.inspection.tensor_dtypes import tensor_dtypes

#: a list attribute longer than this is elided (the whole value goes in :attr:`AttrFact.full`)
MAX_ITEMS = 8
#: a string longer than this is elided
MAX_CHARS = 48
#: a tensor attribute with at most this many elements shows its values
SHOWN_VALUES = 8
#: ops a tensor's source and readers are looked through (a quantized model's Q/DQ pairs)
QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})
#: integer attributes that name an element type (Cast ``to``, ``dtype``, ``output_dtype``)
DTYPE_ATTRS = frozenset({"to", "dtype", "output_dtype"})

Dim = int | str | None  # a size, a symbolic dim's name, or None (unknown)


@dataclass(frozen=True)
class AttrFact:
    """One attribute: ``text`` is compact (long lists elided with "…"), ``full`` the whole value
    ("" when ``text`` is already whole)."""

    name: str
    text: str
    full: str = ""


@dataclass(frozen=True)
class TensorFact:
    """One input or output of a node.

    Attributes
    ----------
    slot : str
        The operator schema's name for the position (``X``, ``W``, ``B``; ``inputs[2]`` for a variadic
        one), else ``input 0`` / ``output 0`` (an op without a known schema).
    name : str
        The tensor ("" for an optional input left out).
    dtype : str
        Element type as ``onnx.TensorProto`` names it, lower case (``float``, ``int64``, ``uint8``);
        "" when unknown; ``sequence`` / ``map`` / ``optional`` for non-tensor values.
    shape : tuple of Dim or None
        Dims (int size, str symbolic name, None unknown); None when even the rank is unknown.
    weight : bool
        An initializer (a constant the model stores).
    size : int or None
        Elements of a weight (None for other tensors).
    nbytes : int or None
        Bytes of a weight's values (None for other tensors and sub-byte types).
    producer : str
        Node writing the tensor ("" for a graph input or a weight).
    consumers : tuple of str
        Nodes reading it.
    source : str
        :attr:`producer` with QuantizeLinear / DequantizeLinear looked through: the node whose result
        the tensor carries ("" when that is a weight or a graph input).
    readers : tuple of str
        :attr:`consumers` with QuantizeLinear / DequantizeLinear looked through.
    graph_input, graph_output : bool
        Whether the tensor is an input / output of its graph.
    """

    slot: str
    name: str
    dtype: str = ""
    shape: tuple[Dim, ...] | None = None
    weight: bool = False
    size: int | None = None
    nbytes: int | None = None
    producer: str = ""
    consumers: tuple[str, ...] = ()
    source: str = ""
    readers: tuple[str, ...] = ()
    graph_input: bool = False
    graph_output: bool = False

    @property
    def dtype_text(self) -> str:
        """:func:`dtype_text` of :attr:`dtype`."""
        return dtype_text(self.dtype)

    @property
    def shape_text(self) -> str:
        """``[1, 3, height, ?]``: symbolic dims by name, unknown ones as ``?``; ``?`` for an unknown
        rank, ``[]`` for a scalar."""
        return shape_text(self.shape)


@dataclass(frozen=True)
class NodeFacts:
    """One node: ``domain`` is "" for the default ONNX domain; ``graph`` the path of a subgraph node
    ("" in the main graph)."""

    name: str
    op_type: str
    domain: str
    graph: str
    attributes: tuple[AttrFact, ...]
    inputs: tuple[TensorFact, ...]
    outputs: tuple[TensorFact, ...]


def dtype_text(name: str) -> str:
    """``float32`` for ``float`` and ``float64`` for ``double`` (as Netron writes them), ``?`` for "";
    other names unchanged."""
    return {"float": "float32", "double": "float64", "": "?"}.get(name, name)


def shape_text(shape: tuple[Dim, ...] | None) -> str:
    """``[1, 3, height, ?]`` (see :attr:`TensorFact.shape_text`)."""
    if shape is None:
        return "?"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _dims(tt: onnx.TypeProto.Tensor) -> tuple[Dim, ...] | None:
    if not tt.HasField("shape"):
        return None
    return tuple(dim_of(d) for d in tt.shape.dim)


def _type_of(tp: onnx.TypeProto) -> tuple[str, tuple[Dim, ...] | None]:
    kind = tp.WhichOneof("value")
    if kind == "tensor_type" or kind == "sparse_tensor_type":
        tt = getattr(tp, kind)  # a symbolic dim by its name; shape inference's unk__3, "?" or "-1": unknown
        return (dtype_name(tt.elem_type) if tt.elem_type else ""), _dims(tt)
    if kind in ("sequence_type", "map_type", "optional_type"):
        return kind.removesuffix("_type"), None
    return "", None


def _join(items: list[str], limit: int = MAX_ITEMS) -> tuple[str, str]:
    """``[a, b, c]``; past ``limit`` items ``[a, b, …] (20 values)`` and the whole list as ``full``."""
    whole = "[" + ", ".join(items) + "]"
    if len(items) <= limit and len(whole) <= MAX_CHARS:
        return whole, ""
    shown, keep = "", limit
    while keep > 1:
        shown = "[" + ", ".join(items[:keep]) + ", …]"
        if len(shown) <= MAX_CHARS:
            break
        keep -= 1
    return f"{shown} ({len(items)} values)", whole


def _string(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _num(value: float) -> str:
    return format(float(value), ".6g")


def _tensor_text(t: TensorProto) -> tuple[str, str]:
    head = f"{dtype_text(dtype_name(t.data_type))} {shape_text(tuple(t.dims))}"
    elements = int(np.prod(t.dims)) if t.dims else 1
    if elements > SHOWN_VALUES or t.data_location == TensorProto.EXTERNAL:
        return head, ""
    try:
        values = numpy_helper.to_array(t).ravel().tolist()
    except Exception:  # noqa: BLE001 - an odd element type: the type and shape say enough
        return head, ""
    text, full = _join([_num(v) if isinstance(v, float) else str(v) for v in values])
    return f"{head} = {text}", (f"{head} = {full}" if full else "")


def attr_fact(attr: AttributeProto) -> AttrFact:
    """``attr`` written compactly: ``[3, 3]``, ``0.0001``, ``NOTSET``, ``float32 [1] = [0]`` (a tensor),
    ``graph body (12 nodes)``; an element-type attribute (Cast ``to``) by the type's name (``float32 (1)``)."""
    t = attr.type
    if t == AttributeProto.INT:
        if attr.name in DTYPE_ATTRS and attr.i in TensorProto.DataType.values():
            return AttrFact(attr.name, f"{dtype_text(dtype_name(attr.i))} ({attr.i})")
        return AttrFact(attr.name, str(attr.i))
    if t == AttributeProto.FLOAT:
        return AttrFact(attr.name, _num(attr.f))
    if t == AttributeProto.STRING:
        s = _string(attr.s)
        return AttrFact(attr.name, s) if len(s) <= MAX_CHARS else AttrFact(attr.name, s[:MAX_CHARS - 1] + "…", s)
    if t == AttributeProto.INTS:
        return AttrFact(attr.name, *_join([str(i) for i in attr.ints]))
    if t == AttributeProto.FLOATS:
        return AttrFact(attr.name, *_join([_num(f) for f in attr.floats]))
    if t == AttributeProto.STRINGS:
        return AttrFact(attr.name, *_join([_string(s) for s in attr.strings]))
    if t == AttributeProto.TENSOR:
        return AttrFact(attr.name, *_tensor_text(attr.t))
    if t == AttributeProto.TENSORS:
        return AttrFact(attr.name, f"{len(attr.tensors)} tensors")
    if t == AttributeProto.GRAPH:
        return AttrFact(attr.name, f"graph {attr.g.name} ({len(attr.g.node)} nodes)".replace("  ", " "))
    if t == AttributeProto.GRAPHS:
        return AttrFact(attr.name, f"{len(attr.graphs)} graphs")
    if t == AttributeProto.SPARSE_TENSOR:
        return AttrFact(attr.name, f"sparse {dtype_text(dtype_name(attr.sparse_tensor.values.data_type))} "
                                   f"{shape_text(tuple(attr.sparse_tensor.dims))}")
    if t in (AttributeProto.TYPE_PROTO, AttributeProto.TYPE_PROTOS):
        return AttrFact(attr.name, "type")
    return AttrFact(attr.name, attr.ref_attr_name and f"ref {attr.ref_attr_name}" or "?")


#: Formal parameters of an op: (name, variadic) per input, then per output
_Slots = tuple[tuple[tuple[str, bool], ...], tuple[tuple[str, bool], ...]]


def _slot_names(node: onnx.NodeProto, opsets: dict[str, int]) -> tuple[list[str], list[str]]:
    """The schema's names of ``node``'s inputs and outputs (variadic ones numbered), else ``input i``: the
    onnx package's schema, or for an onnxruntime contrib op (``com.microsoft``: QLinearAdd, MatMulNBits,
    QGemm, DynamicQuantizeLSTM ...) the schema onnxruntime registers for it."""
    slots = _onnx_slots(node, opsets) or _contrib_slots(node.domain, node.op_type)
    if slots is None:  # a custom op: no schema
        return ([f"input {i}" for i in range(len(node.input))], [f"output {i}" for i in range(len(node.output))])

    def names(params, n: int, kind: str) -> list[str]:
        out = []
        for i in range(n):
            if i < len(params) and not params[i][1]:
                out.append(params[i][0])
            elif params and params[-1][1]:
                out.append(f"{params[-1][0]}[{i - len(params) + 1}]")
            else:
                out.append(f"{kind} {i}")
        return out

    return names(slots[0], len(node.input), "input"), names(slots[1], len(node.output), "output")


def _onnx_slots(node: onnx.NodeProto, opsets: dict[str, int]) -> _Slots | None:
    try:
        schema = onnx.defs.get_schema(node.op_type, opsets.get(node.domain, 1), node.domain)
    except Exception:  # noqa: BLE001 - not an op the onnx package knows
        return None
    variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic
    return (tuple((p.name, p.option == variadic) for p in schema.inputs),
            tuple((p.name, p.option == variadic) for p in schema.outputs))


@functools.cache
def _contrib_schemas() -> dict[tuple[str, str], _Slots]:
    """(domain, op type) -> slots of every op onnxruntime registers outside the onnx package's domains
    (its newest version of each; a contrib op keeps its inputs' names across versions)."""
    try:
        from onnxruntime.capi.onnxruntime_pybind11_state import get_all_operator_schema
        schemas = get_all_operator_schema()
    except Exception:  # noqa: BLE001 - no onnxruntime, or a build without the schema registry
        return {}
    out: dict[tuple[str, str], tuple[int, _Slots]] = {}
    for s in schemas:
        if s.domain in ("", "ai.onnx", "ai.onnx.ml"):
            continue
        slots = (tuple((p.name, str(p.option).endswith("Variadic")) for p in s.inputs),
                 tuple((p.name, str(p.option).endswith("Variadic")) for p in s.outputs))
        key = (s.domain, s.name)
        if key not in out or s.since_version > out[key][0]:
            out[key] = (s.since_version, slots)
    return {k: v for k, (_, v) in out.items()}


def _contrib_slots(domain: str, op_type: str) -> _Slots | None:
    return _contrib_schemas().get((domain, op_type)) if domain not in ("", "ai.onnx") else None


def _weight_bytes(t: TensorProto, elements: int) -> int | None:
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
    except (KeyError, TypeError, ValueError):
        return None
    if t.data_type in (TensorProto.INT4, TensorProto.UINT4):
        return None
    return elements * itemsize


def _qdq_output_type(node: onnx.NodeProto, known) -> tuple[str, tuple[Dim, ...] | None] | None:
    """(dtype, dims) of a QuantizeLinear / DequantizeLinear output from its inputs (``known(name)``: their
    (dtype, dims) or None): a DequantizeLinear writes its scale's type (its ``output_dtype`` attribute when
    set), a QuantizeLinear its zero point's type (``output_dtype``, else uint8), both in their input's shape;
    None when neither is known."""
    attrs = {a.name: a for a in node.attribute}
    x = known(node.input[0])
    dims = x[1] if x is not None else None
    if "output_dtype" in attrs and attrs["output_dtype"].i:
        dtype = dtype_name(attrs["output_dtype"].i)
    elif node.op_type == "DequantizeLinear":
        scale = known(node.input[1]) if len(node.input) > 1 else None
        dtype = scale[0] if scale is not None else ""
    else:
        zp = known(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        dtype = zp[0] if zp is not None else "uint8"
    return (dtype, dims) if dtype or dims is not None else None


class NodeFactsIndex:
    """The tensors of ``proto`` (every graph) read once: types and shapes, weights, producers and consumers.

    Node names are those of ``proto`` (a prepared model's are unique); a name used twice describes the
    first node of that name.
    """

    def __init__(self, proto: onnx.ModelProto):
        self.opsets = {o.domain if o.domain != "ai.onnx" else "": o.version for o in proto.opset_import}
        self.types: dict[str, tuple[str, tuple[Dim, ...] | None]] = {}
        self.weights: dict[str, TensorProto] = {}
        self.producer: dict[str, str] = {}
        self.consumers: dict[str, list[str]] = {}
        self._qdq: dict[str, onnx.NodeProto] = {}  # Q/DQ node name -> node
        self.graph_inputs: set[str] = set()
        self.graph_outputs: set[str] = set()
        self.nodes: dict[str, tuple[str, onnx.NodeProto]] = {}
        for path, g in iter_graphs(proto.graph):
            for vi in list(g.value_info) + list(g.input) + list(g.output):
                dtype, dims = _type_of(vi.type)
                if dtype or dims is not None:
                    self.types[vi.name] = (dtype, dims)
            self.graph_inputs |= {i.name for i in g.input}
            self.graph_outputs |= {o.name for o in g.output}
            for t in g.initializer:
                self.weights[t.name] = t
            for node in g.node:
                self.nodes.setdefault(node.name, (path, node))
                if node.op_type in QDQ_OPS and node.input and node.output:
                    self._qdq.setdefault(node.name, node)
                for o in node.output:
                    if o:
                        self.producer.setdefault(o, node.name)
                for i in node.input:
                    if i:
                        self.consumers.setdefault(i, []).append(node.name)
        if any(o not in self.weights and self.types.get(o, ("", None))[1] is None for o in self.producer):
            self._infer(proto)

    def _infer(self, proto: onnx.ModelProto) -> None:
        """Types of the tensors the file does not declare, and shapes of those it declares without one (a QDQ
        export without value_info showed "? ?" for every DequantizeLinear output): onnx shape inference where
        it works, with onnxruntime's contrib ops stood in for by ONNX ops of the same output types and shapes
        (:func:`~workbench.core.graph.contrib_stand_ins.stand_in_contrib_ops`); then each QuantizeLinear /
        DequantizeLinear output still unknown from its inputs (:func:`_qdq_output_type`), in graph order; then
        the dtype alone of any output still unknown, as :func:`tensor_dtypes` tells it (a contrib op without a
        stand-in: its zero point's dtype)."""
        try:
            skeleton = shape_skeleton(proto)
            stand_in_contrib_ops(skeleton)
            inferred = onnx.shape_inference.infer_shapes(skeleton)
        except Exception:  # noqa: BLE001 - a custom op, a model past 2 GB: the Q/DQ rule below still applies
            inferred = None
        if inferred is not None:
            for _, g in iter_graphs(inferred.graph):
                for vi in list(g.value_info) + list(g.output):
                    dtype, dims = _type_of(vi.type)
                    if vi.name not in self.types and (dtype or dims is not None):
                        self.types[vi.name] = (dtype, dims)
                    elif vi.name in self.types and self.types[vi.name][1] is None and dims is not None:
                        self.types[vi.name] = (self.types[vi.name][0] or dtype, dims)  # declared without a shape
        for _, g in iter_graphs(proto.graph):
            for node in g.node:
                if node.op_type in QDQ_OPS and node.output and node.output[0] and node.output[0] not in self.types:
                    found = _qdq_output_type(node, self._known)
                    if found is not None:
                        self.types[node.output[0]] = found
        if any(o not in self.types and o not in self.weights for o in self.producer):
            carried = tensor_dtypes(proto, read_quant_params(proto))
            for o in self.producer:
                if o not in self.types and o not in self.weights and o in carried:
                    self.types[o] = (carried[o], None)

    def _known(self, name: str) -> tuple[str, tuple[Dim, ...] | None] | None:
        """(dtype, dims) of a typed tensor or a weight, None when unknown."""
        w = self.weights.get(name)
        if w is not None:
            return dtype_name(w.data_type), tuple(int(d) for d in w.dims)
        return self.types.get(name)

    def __contains__(self, node: str) -> bool:
        return node in self.nodes

    def _source(self, name: str) -> str:
        """The producer of ``name`` with Q/DQ nodes looked through ("" at a weight or graph input)."""
        node = self.producer.get(name, "")
        for _ in range(8):
            qdq = self._qdq.get(node)
            if qdq is None:
                return node
            node = self.producer.get(qdq.input[0], "")
        return node

    def _readers(self, name: str) -> tuple[str, ...]:
        """The consumers of ``name`` with Q/DQ nodes looked through, in graph order, each once."""
        out: dict[str, None] = {}
        todo, seen = [name], set()
        while todo:
            tensor = todo.pop(0)
            if tensor in seen:
                continue
            seen.add(tensor)
            for c in self.consumers.get(tensor, ()):
                qdq = self._qdq.get(c)
                if qdq is None:
                    out[c] = None
                else:
                    todo.append(qdq.output[0])
        return tuple(out)

    def tensor(self, name: str, slot: str = "") -> TensorFact:
        """What is known of tensor ``name`` (``slot``: its position's name on the node asking)."""
        if not name:
            return TensorFact(slot, "")
        links = {"producer": self.producer.get(name, ""), "consumers": tuple(self.consumers.get(name, ())),
                 "source": self._source(name), "readers": self._readers(name),
                 "graph_input": name in self.graph_inputs, "graph_output": name in self.graph_outputs}
        w = self.weights.get(name)
        if w is not None:
            elements = int(np.prod(w.dims)) if w.dims else 1
            return TensorFact(slot, name, dtype_name(w.data_type), tuple(int(d) for d in w.dims), True, elements,
                              _weight_bytes(w, elements), **links)
        dtype, dims = self.types.get(name, ("", None))
        return TensorFact(slot, name, dtype, dims, **links)

    def facts(self, node: str) -> NodeFacts:
        """Describe node ``node``.

        Raises
        ------
        KeyError
            No node of that name.
        """
        path, n = self.nodes[node]
        ins, outs = _slot_names(n, self.opsets)
        return NodeFacts(n.name, n.op_type, "" if n.domain == "ai.onnx" else n.domain, path,
                         tuple(attr_fact(a) for a in n.attribute),
                         tuple(self.tensor(t, s) for t, s in zip(n.input, ins, strict=True)),
                         tuple(self.tensor(t, s) for t, s in zip(n.output, outs, strict=True)))


def node_facts(proto: onnx.ModelProto, node: str) -> NodeFacts:
    """:meth:`NodeFactsIndex.facts` of ``node`` in ``proto`` (indexes the whole model: keep a
    :class:`NodeFactsIndex` to describe several nodes). Raises KeyError when there is no such node."""
    return NodeFactsIndex(proto).facts(node)
