"""Which data-movement ops of a QDQ file onnxruntime runs on integer tensors (CPU, optimization level 2 and up).

onnxruntime 1.32 rewrites a QDQ graph in four steps before it runs (``onnxruntime/core/optimizer``):

1. ``EnsureUniqueDQForNodeUnit``: every reader of a DequantizeLinear output gets a DequantizeLinear of its own;
2. ``QDQPropagationTransformer``: a DequantizeLinear is pushed forward, and a QuantizeLinear backward,
   through :data:`PROPAGATE_VERSIONS` ops, inserting Q -> DQ pairs of the same (constant, scalar) scale and
   zero_point on each edge they pass (forward: one QuantizeLinear per output, a DequantizeLinear per reader);
3. ``QDQS8ToU8Transformer`` (x86): an int8 QuantizeLinear whose one reader is a DequantizeLinear becomes uint8
   with zero_point + 128 (a pair whose QuantizeLinear has several readers stays int8);
4. the selectors: DQ -> op -> Q with one DequantizeLinear on input 0, every output edge to a QuantizeLinear
   (one per output), the same element type and the same scale and zero_point on both sides runs the op on
   the integer tensor (``DropQDQNodesRules`` for :data:`DROP_QDQ`, ``SplitQDQRules`` for Split).

So an int8 pair whose QuantizeLinear feeds two readers stays int8 while its neighbour becomes uint8, and the op
between them stays float (the int8 nudenet_320n QDQ file: its C2f Splits, an SPPF MaxPool).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

#: op -> (16-bit allowed, 4-bit allowed, scale must be > 0) of onnxruntime's DropQDQ / Split selectors
DROP_QDQ: dict[str, tuple[bool, bool, bool]] = {
    **{op: (True, False, False) for op in ("Expand", "Flatten", "Gather", "GatherElements", "Reshape", "Slice",
                                          "Squeeze", "Tile", "Transpose", "Unsqueeze")},
    "Resize": (False, False, False),
    "MaxPool": (False, True, True), "ReduceMax": (False, True, True), "ReduceMin": (False, True, True),
    "Split": (True, False, False),
}
#: DropQDQ ops matched at these opset versions only (others: any version)
DROP_VERSIONS: dict[str, tuple[int, ...]] = {"MaxPool": (12,)}
#: ops ``QDQPropagationTransformer`` moves Q / DQ nodes through, at these opset versions
PROPAGATE_VERSIONS: dict[str, tuple[int, ...]] = {
    "MaxPool": (12,), "Reshape": (5, 13, 14, 19), "Transpose": (1, 13), "Squeeze": (1, 11, 13),
    "Unsqueeze": (1, 11, 13), "Slice": (1, 10, 11, 13),
}

#: ops between a Shape and a Reshape that onnxruntime's ReshapeFusion folds
_SHAPE_MATH = frozenset({"Gather", "Unsqueeze", "Concat", "Slice", "Squeeze", "Cast"})


@dataclass(frozen=True)
class _Pair:
    """A Q -> DQ pair as the selectors see it: element type after step 3 and its scale / zero_point tensors."""

    dtype: str
    scale: str
    zero_point: str


class DropView:
    """The main graph of a QDQ file as :func:`runs_on_integers` reads it.

    Parameters
    ----------
    proto : onnx.ModelProto
        The file (not modified).
    dtypes : dict of str to str
        Tensor -> element type name (``"int8"``, ``"float"``; :func:`~workbench.core.inspection.tensor_dtypes.tensor_dtypes`).
    """

    def __init__(self, proto: onnx.ModelProto, dtypes: dict[str, str]):
        self.nodes = list(proto.graph.node)
        self.producer = {o: n for n in self.nodes for o in n.output if o}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for n in self.nodes:
            for i in n.input:
                if i:
                    self.consumers.setdefault(i, []).append(n)
        self.dtypes = dtypes
        self.inits = {i.name: i for i in proto.graph.initializer}
        self.outputs = {o.name for o in proto.graph.output}
        self._folds: dict[str, bool] = {}
        self.opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 13)

    def version_in(self, node: onnx.NodeProto, versions: tuple[int, ...] | None) -> bool:
        """Whether ``node``'s op resolves to one of ``versions`` at the file's opset (None: any)."""
        if node.domain not in ("", "ai.onnx"):
            return False
        if versions is None:
            return True
        try:
            return onnx.defs.get_schema(node.op_type, self.opset).since_version in versions
        except onnx.defs.SchemaError:
            return False

    def constant(self, tensor: str) -> np.ndarray | None:
        """The value of an initializer or Constant node output, None otherwise."""
        if tensor in self.inits:
            return numpy_helper.to_array(self.inits[tensor])
        node = self.producer.get(tensor)
        if node is not None and node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            return numpy_helper.to_array(node.attribute[0].t)
        return None

    def foldable(self, tensor: str, depth: int = 8) -> bool:
        """Whether ``tensor`` is a constant or computed from constants only (folded when the session loads)."""
        if tensor in self._folds:
            return self._folds[tensor]
        node = self.producer.get(tensor)
        found = self.constant(tensor) is not None or (
            node is not None and depth > 0 and node.op_type not in ("Shape", "Size", "QuantizeLinear",
                                                                    "DequantizeLinear")
            and bool(node.input) and all(self.foldable(i, depth - 1) for i in node.input if i))
        self._folds[tensor] = found
        return found

    def readers(self, tensor: str) -> list[onnx.NodeProto]:
        """The nodes reading ``tensor`` when onnxruntime runs the graph: a Shape whose value only goes (through
        Gather, Slice, Unsqueeze, Concat ... of constant indices) into the shape input of Reshape nodes, one of
        them of ``tensor`` itself, is gone (its ``ReshapeFusion`` writes such shapes as constants with 0 / -1;
        nudenet_320n's DFL head; a dim of another tensor or a computed one keeps the Shape). Not every case:
        onnxruntime also drops the Shape of QOperator digits_transformer's attention Reshape_7 (Div-computed dim)."""
        return [r for r in self.consumers.get(tensor, []) if not self._reshape_fused(r, tensor)]

    def _reshape_fused(self, node: onnx.NodeProto, tensor: str) -> bool:
        if node.op_type != "Shape":
            return False
        todo, seen, own = [node.output[0]], set(), False
        while todo:
            t = todo.pop()
            if t in seen:
                continue
            readers = self.consumers.get(t, [])
            if t in self.outputs or not readers:
                return False
            seen.add(t)
            for r in readers:
                if r.op_type == "Reshape" and len(r.input) > 1 and r.input[1] == t:
                    own = own or r.input[0] == tensor
                    continue
                if r.op_type == "Concat":
                    if not all(self.foldable(i) or self._from_shape(i, tensor) for i in r.input):
                        return False  # a computed dim (digits_transformer's head size by Div): the Shape stays
                elif r.op_type not in _SHAPE_MATH or not all(self.foldable(i) for i in r.input[1:] if i):
                    return False  # a Slice of computed bounds stays
                todo.extend(o for o in r.output if o)
        return own  # a Shape only of other tensors' Reshapes stays (ppocrv4_rec's p2o.Shape.0)

    def _from_shape(self, tensor: str, of: str) -> bool:
        """Whether ``tensor`` is picked from a Shape of ``of`` by Gather / Slice / Unsqueeze ... of constant
        indices (a dim of another tensor keeps the Shape: digits_transformer's attention)."""
        node = self.producer.get(tensor)
        while node is not None and node.op_type in _SHAPE_MATH and node.op_type != "Concat" \
                and all(self.foldable(i) for i in node.input[1:] if i):
            node = self.producer.get(node.input[0])
        return node is not None and node.op_type == "Shape" and node.input[0] == of


def _propagates(v: DropView, node: onnx.NodeProto | None) -> bool:
    return node is not None and node.op_type in PROPAGATE_VERSIONS and v.version_in(node, PROPAGATE_VERSIONS[node.op_type])


def _scalar_qparams(v: DropView, node: onnx.NodeProto) -> bool:
    """Whether a Q / DQ node has a constant scalar scale and zero_point (what propagation needs)."""
    for i in (1, 2):
        if len(node.input) <= i or not node.input[i]:
            continue
        value = v.constant(node.input[i])
        if value is None or value.size != 1:
            return False
    return True


def _zero_point_dtype(v: DropView, node: onnx.NodeProto) -> str:
    """The integer type of a Q node's output or a DQ node's input."""
    t = node.output[0] if node.op_type == "QuantizeLinear" else node.input[0]
    return v.dtypes.get(t, "uint8")


def _u8(dtype: str, single_reader: bool, from_constant: bool = False) -> str:
    """Step 3: int8 becomes uint8 when its QuantizeLinear has one DequantizeLinear reader (not a folded constant)."""
    return "uint8" if dtype == "int8" and single_reader and not from_constant else dtype


def _pair_of_dq(v: DropView, dq: onnx.NodeProto) -> _Pair:
    """The pair ending in an original DequantizeLinear ``dq`` as step 4 sees it."""
    dtype = _zero_point_dtype(v, dq)
    q = v.producer.get(dq.input[0])
    if q is not None and q.op_type == "QuantizeLinear":
        # step 1 splits a DQ of several readers, so the QuantizeLinear then has several DequantizeLinear readers
        single = len(v.readers(q.output[0])) == 1 and len(v.readers(dq.output[0])) <= 1 \
            and q.output[0] not in v.outputs
        dtype = _u8(dtype, single, from_constant=v.foldable(q.input[0]))
    return _Pair(dtype, _at(dq, 1), _at(dq, 2))


def _pair_of_q(v: DropView, q: onnx.NodeProto) -> _Pair:
    """The pair starting at the file's QuantizeLinear ``q`` as step 4 sees it."""
    readers = v.readers(q.output[0])
    single = len(readers) == 1 and readers[0].op_type == "DequantizeLinear" \
        and len(v.readers(readers[0].output[0])) <= 1 and q.output[0] not in v.outputs
    return _Pair(_u8(_zero_point_dtype(v, q), single), _at(q, 1), _at(q, 2))


def _at(node: onnx.NodeProto, i: int) -> str:
    return node.input[i] if len(node.input) > i else ""


def _forward_source(v: DropView, node: onnx.NodeProto) -> tuple[onnx.NodeProto, onnx.NodeProto] | None:
    """(DequantizeLinear, the op just before ``node``) when step 2 pushes a DequantizeLinear forward to ``node``'s
    input 0 through a chain of propagating ops; None when input 0 comes from elsewhere."""
    prev = v.producer.get(node.input[0]) if node.input else None
    if not _propagates(v, prev) or node.input[0] != prev.output[0]:
        return None
    cur = prev
    while True:
        src = v.producer.get(cur.input[0]) if cur.input else None
        if src is None:
            return None
        if src.op_type == "DequantizeLinear":
            return (src, prev) if _scalar_qparams(v, src) and cur.input[0] not in v.outputs else None
        if not _propagates(v, src) or cur.input[0] != src.output[0]:
            return None
        cur = src


def _backward_target(v: DropView, node: onnx.NodeProto) -> onnx.NodeProto | None:
    """The QuantizeLinear step 2 pulls back to ``node``'s input (``node`` propagates, reads a tensor only it
    reads, and its output reaches that QuantizeLinear through single-reader propagating ops), else None."""
    if not _propagates(v, node) or not node.input:
        return None
    if len(v.readers(node.input[0])) != 1 or node.input[0] in v.outputs or v.constant(node.input[0]) is not None:
        return None
    cur = node
    while True:
        out = cur.output[0]
        readers = v.readers(out)
        if out in v.outputs or len(readers) != 1:
            return None
        nxt = readers[0]
        if nxt.op_type == "QuantizeLinear":
            return nxt if _scalar_qparams(v, nxt) else None
        if not _propagates(v, nxt) or nxt.input[0] != out:
            return None
        cur = nxt


def _input_pair(v: DropView, node: onnx.NodeProto) -> tuple[_Pair, onnx.NodeProto | None] | None:
    """The pair on ``node``'s input 0 after step 2 and the DequantizeLinear it comes from (None when pulled
    back from a QuantizeLinear), or None when input 0 is no dequantized activation."""
    src = v.producer.get(node.input[0]) if node.input else None
    if src is not None and src.op_type == "DequantizeLinear":
        return _pair_of_dq(v, src), src  # a constant's int8 stays int8 (minilm's int8 embedding Gathers: float)
    fwd = _forward_source(v, node)
    if fwd is not None:
        dq, before = fwd
        others = [r for r in v.readers(before.output[0]) if r.op_type != "QuantizeLinear"]
        return _Pair(_u8(_zero_point_dtype(v, dq), len(others) == 1), _at(dq, 1), _at(dq, 2)), dq
    q = _backward_target(v, node)
    if q is not None and (src is None or src.op_type != "DequantizeLinear"):
        return _Pair(_u8(_zero_point_dtype(v, q), True), _at(q, 1), _at(q, 2)), None
    return None


def _output_pairs(v: DropView, node: onnx.NodeProto, source: onnx.NodeProto | None,
                  backward: bool) -> list[_Pair] | None:
    """The pairs on ``node``'s output edges after step 2 (one QuantizeLinear per output, every edge to it), or
    None when an output edge reaches no QuantizeLinear."""
    outputs = [o for o in node.output if o]
    if any(o in v.outputs for o in outputs):
        return None
    pairs = []
    for out in outputs:
        readers = v.readers(out)
        qs = [r for r in readers if r.op_type == "QuantizeLinear"]
        rest = [r for r in readers if r.op_type != "QuantizeLinear"]
        if backward:  # pulled back through node: a pair of the downstream QuantizeLinear, one reader
            q = _backward_target(v, node)
            return [_Pair(_u8(_zero_point_dtype(v, q), True), _at(q, 1), _at(q, 2))] if q is not None else None
        if rest and source is not None and _propagates(v, node) and len(outputs) == 1 and _scalar_qparams(v, source):
            if qs:  # the inserted QuantizeLinear beside the file's: two QuantizeLinear readers
                return None
            pairs.append(_Pair(_u8(_zero_point_dtype(v, source), len(rest) == 1), _at(source, 1), _at(source, 2)))
            continue
        pulled = _backward_target(v, rest[0]) if len(rest) == 1 and not qs and rest[0].input[0] == out else None
        if pulled is not None:  # a QuantizeLinear pulled back through the reader: inserted with one reader
            pairs.append(_Pair(_u8(_zero_point_dtype(v, pulled), True), _at(pulled, 1), _at(pulled, 2)))
            continue
        if rest or len(qs) != 1:
            return None
        pairs.append(_pair_of_q(v, qs[0]))
    return pairs or None


def runs_on_integers(v: DropView, node: onnx.NodeProto) -> bool:
    """Whether onnxruntime (CPU, x86) runs the float op ``node`` of a QDQ file on integer tensors: it is a
    :data:`DROP_QDQ` op that steps 1-4 (module docstring) leave between a DequantizeLinear and QuantizeLinear
    nodes of one element type, scale and zero_point."""
    rule = DROP_QDQ.get(node.op_type)
    if rule is None or not node.input or not v.version_in(node, DROP_VERSIONS.get(node.op_type)):
        return False
    found = _input_pair(v, node)
    if found is None:
        return False
    pair, source = found
    if any((p := v.producer.get(t)) is not None and p.op_type == "DequantizeLinear" for t in node.input[1:] if t):
        return False  # a second DequantizeLinear input: not a DropQDQ unit
    outs = _output_pairs(v, node, source, backward=source is None)
    if not outs:
        return False
    allow16, allow4, positive = rule
    if pair.dtype in ("int16", "uint16") and not allow16 or pair.dtype in ("int4", "uint4") and not allow4:
        return False
    if pair.dtype not in ("int8", "uint8", "int16", "uint16", "int4", "uint4"):
        return False
    if positive:
        scale = v.constant(pair.scale)
        if scale is None or not (scale > 0).all():
            return False
    return all(o.dtype == pair.dtype and _same(v, o.scale, pair.scale) and _same(v, o.zero_point, pair.zero_point)
               for o in outs)


def _same(v: DropView, a: str, b: str) -> bool:
    """Whether two scale (or zero_point) tensors are the same tensor or constants of equal values.
    A zero_point changed by step 3 is changed on both sides alike, so the file's values are compared."""
    if a == b:
        return True
    va, vb = v.constant(a) if a else np.zeros(1, np.uint8), v.constant(b) if b else np.zeros(1, np.uint8)
    if va is None or vb is None or va.size != vb.size:
        return False
    return bool((va.reshape(-1).astype(np.float64) == vb.reshape(-1).astype(np.float64)).all())
