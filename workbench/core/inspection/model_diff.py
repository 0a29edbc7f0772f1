"""Float model vs its quantized file: which node became which, what was inserted, folded, left float.

Matching is by graph structure, so it works on our exports and on other tools' files
(onnxruntime ``quantize_static`` QDQ or QOperator, ``quantize_dynamic``):

1. Q/DQ are stripped from the quantized graph: a tensor read through DequantizeLinear <-
   QuantizeLinear (or DynamicQuantizeLinear, or a QONNX Quant node) stands for the float tensor
   the QuantizeLinear read.
2. Nodes are matched by name where the name (or the name without onnxruntime's ``_quant`` suffix)
   exists in both with a compatible op type (``Conv`` ~ ``QLinearConv`` ~ ``ConvInteger``, see
   :data:`workbench.core.graph.op_equivalents.FLOAT_OP`; ``Max(x, 0)`` ~ ``Relu``, as our float8
   exports write a ReLU under its own name).
3. The rest are matched by op type + topology, repeated until nothing changes: a float node and a
   quantized node of compatible op types match when the nodes producing their data inputs match.
   Float nodes the quantized file dropped (BatchNormalization or a Mul / Add by a per-channel constant
   folded into a Conv, Relu fused into its producer's QuantizeLinear) are looked through when comparing
   producers.

The float model is the user's file as written (:func:`workbench.core.inspection.float_graph.float_as_written`):
a node that file holds is never "added", whether the quantizer kept it (onnxruntime keeps
BatchNormalization) or folded it (our exports fold it, as opening the model does).

Every Q and DQ node of the quantized file is listed once in :attr:`ModelDiff.qdq`: a
QuantizeLinear with its DequantizeLinear consumers (an activation pair), or a DequantizeLinear
alone (a weight or bias stored as integers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from workbench.core.graph.layout import node_keys
from workbench.core.graph.op_equivalents import FLOAT_OP
from workbench.core.graph.quantized_ops import INTEGER_KERNELS, quantized_kind
from workbench.core.inspection.correspond import output_names
from workbench.core.inspection.quant_summary import COMPUTE_OPS
from workbench.core.inspection.tensor_dtypes import tensor_dtypes
from workbench.core.model.opset import default_opset
from workbench.core.wording import count

#: float ops a quantizer may drop: folded into the producer (BatchNormalization into Conv) or fused
#: into the following QuantizeLinear (Relu, Clip), or removed as no-ops
FOLDABLE = frozenset({"BatchNormalization", "Relu", "Clip", "Identity", "Dropout"})
#: element-wise ops by a constant that a quantizer may fold into the Conv before them
#: (:mod:`workbench.core.model.affine`)
AFFINE = frozenset({"Mul", "Add"})
_STRIP = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")
_INT_DATA = frozenset({"int8", "uint8", "int16", "uint16", "int4", "uint4", "float8e4m3fn", "float8e5m2"})


@dataclass
class QdqPair:
    """Q/DQ nodes of the quantized file around one tensor.

    Attributes
    ----------
    tensor : str
        The float tensor the QuantizeLinear reads, or the integer initializer a lone DQ reads.
    quantize : str
        Name of the QuantizeLinear ("" for a weight / bias DequantizeLinear without one).
    dequantize : list of str
        Names of the DequantizeLinear nodes reading the quantized tensor.
    dtype : str
        The quantized dtype (``uint8``, ``int8``, ``int32`` for biases, ``int4`` ...).
    role : str
        ``"activation"`` (a Q/DQ pair), ``"weight"`` or ``"bias"`` (an int32 DQ).
    """

    tensor: str
    quantize: str
    dequantize: list[str]
    dtype: str
    role: str


@dataclass
class NodeMatch:
    """A float node and the node of the quantized file computing it.

    ``how`` is ``"name"`` or ``"structure"``; ``status`` is ``"quantized"`` (an integer kernel, a
    compute op (Conv, MatMul, Gemm ...) whose data and weight inputs both come from DequantizeLinear,
    or another op reading a DequantizeLinear output), ``"weight_only"`` (a compute op whose weight
    comes from DequantizeLinear and whose data is float: w4-block's int4 MatMul, which onnxruntime runs
    as MatMulNBits), ``"float"`` (a compute op left float: its weight is float, e.g. a Conv excluded
    from the recipe reading a quantized activation with its float weight) or ``"same"`` (a node that has nothing to quantize: Shape, Reshape of float
    data not touched by Q/DQ ...).
    """

    float_node: str
    quant_node: str
    float_op: str
    quant_op: str
    how: str
    status: str


@dataclass
class ModelDiff:
    """What changed from the float model to the quantized file (see the module docstring).

    Attributes
    ----------
    matches : list of NodeMatch
        In float-graph order.
    qdq : list of QdqPair
        Every Q / DQ node of the quantized file, grouped by tensor.
    folded : list of (str, str)
        (name, op type) of float nodes without a counterpart whose op a quantizer folds or fuses.
    removed : list of (str, str)
        Other float nodes without a counterpart.
    added : list of (str, str)
        Nodes of the quantized file (not Q / DQ) without a float counterpart (e.g. the Cast / Mul
        of a dynamic ConvInteger unit).
    tensors : dict of str to str
        Float tensor -> quantized-file tensor carrying the same value, for per-edge error: for outputs of
        matched nodes the tensor of the same name where the file has one, else the output at the same
        position, never an integer tensor no scale turns back into float (a ConvInteger's int32); the
        DequantizeLinear output where a Q/DQ pair follows. Graph outputs are paired with graph outputs.
    """

    matches: list[NodeMatch] = field(default_factory=list)
    qdq: list[QdqPair] = field(default_factory=list)
    folded: list[tuple[str, str]] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)
    added: list[tuple[str, str]] = field(default_factory=list)
    tensors: dict[str, str] = field(default_factory=dict)
    #: float tensor -> the quantized-file node whose output ``tensors`` taps (for colouring that node)
    producers: dict[str, str] = field(default_factory=dict)
    #: float tensor -> SQNR (dB) of the quantized file's value, filled by :func:`measure_diff`
    sqnr: dict[str, float] = field(default_factory=dict)
    #: folded or fused float node -> the quantized-file node that computes it now (a BatchNormalization
    #: -> the Conv it was folded into, a Relu -> the Conv whose output quantization absorbs it)
    folded_into: dict[str, str] = field(default_factory=dict)
    #: nodes of the quantized file that quantize or compute on quantized values (Q / DQ, DynamicQuantizeLinear,
    #: integer kernels, QONNX Quant ...): 0 when it holds no quantization at all
    quantized_ops: int = 0
    #: samples :func:`workbench.core.inspection.diff_error.measure_diff` read (0: not measured)
    samples: int = 0
    #: remarks on how the two were paired, e.g. "output names differ (['logits'] vs ['out']); matched by position"
    notes: list[str] = field(default_factory=list)
    #: the float graph the diff was made from (read only; for the side-by-side panes), None when not kept
    float_proto: onnx.ModelProto | None = field(default=None, repr=False, compare=False)
    #: the quantized graph the diff was made from (prepared by :func:`compare_models`: its node names are the
    #: diff's), None when not kept
    quant_proto: onnx.ModelProto | None = field(default=None, repr=False, compare=False)

    def partner(self, float_node: str) -> str | None:
        """The quantized-file node computing ``float_node``: its match, or the node a folded op went into."""
        for m in self.matches:
            if m.float_node == float_node:
                return m.quant_node
        return self.folded_into.get(float_node)

    def node_sqnr(self) -> dict[str, float]:
        """Quantized-file node -> SQNR (dB) of its (matched) output, the worst where it has several."""
        out: dict[str, float] = {}
        for t, db in self.sqnr.items():
            node = self.producers.get(t)
            if node is not None:
                out[node] = min(db, out.get(node, db))
        return out

    def to_json(self) -> dict:
        """JSON-safe dict (SQNR may be +-inf: write it with a strict encoder such as ``api.dumps_strict``)."""
        return {
            "summary": self.summary(), "counts": self.counts(), "notes": list(self.notes),
            "matches": [{**vars(m), "sqnr_db": self.sqnr.get(_first_output(self, m.quant_node))}
                        for m in self.matches],
            "qdq": [vars(p) for p in self.qdq],
            "folded": [{"node": n, "op_type": o, "into": self.folded_into.get(n)} for n, o in self.folded],
            "removed": [{"node": n, "op_type": o} for n, o in self.removed],
            "added": [{"node": n, "op_type": o} for n, o in self.added],
            "tensors": [{"float": f, "quantized": q, "sqnr_db": self.sqnr.get(f)} for f, q in self.tensors.items()],
        }

    def counts(self) -> dict[str, int]:
        """Numbers for the summary: matches by status (``matched_quantized`` ...), ``qdq_pairs`` (of which
        ``qdq_pairs_on_weights``), ``dq_without_q`` (of which ``dq_without_q_weight_bias``), ``folded``,
        ``removed``, ``added``."""
        out: dict[str, int] = {}
        for m in self.matches:
            out[f"matched_{m.status}"] = out.get(f"matched_{m.status}", 0) + 1
        pairs = [p for p in self.qdq if p.quantize]
        lone = [p for p in self.qdq if not p.quantize]
        out.update(qdq_pairs=len(pairs), qdq_pairs_on_weights=sum(p.role == "weight" for p in pairs),
                   dq_without_q=len(lone), dq_without_q_weight_bias=sum(p.role != "activation" for p in lone),
                   folded=len(self.folded), removed=len(self.removed), added=len(self.added))
        return out

    def summary(self) -> str:
        """One line, e.g. "10 nodes matched (7 quantized, 0 compute ops left float); 8 Q/DQ pairs inserted,
        8 DequantizeLinear without a Q (8 weight/bias); 0 folded or fused, 0 removed, 0 added"; a note
        follows when the second file holds no quantization at all (two float models compared)."""
        c = self.counts()
        held = f" ({c['qdq_pairs_on_weights']} on weights)" if c["qdq_pairs_on_weights"] else ""
        weight_only = f"{c['matched_weight_only']} weight-only, " if c.get("matched_weight_only") else ""
        return (f"{count(len(self.matches), 'node')} matched ({c.get('matched_quantized', 0)} quantized, {weight_only}"
                f"{count(c.get('matched_float', 0), 'compute op')} left float); "
                f"{count(c['qdq_pairs'], 'Q/DQ pair')} inserted{held}, "
                f"{c['dq_without_q']} DequantizeLinear without a Q ({c['dq_without_q_weight_bias']} weight/bias); "
                f"{c['folded']} folded or fused, {c['removed']} removed, {c['added']} added"
                + ("; the second file holds no quantization (no Q/DQ, no integer op): both compute in float"
                   if not self.quantized_ops else ""))


def _base(op: str) -> str:
    return FLOAT_OP.get(op, op)


def _compatible(float_op: str, quant_op: str) -> bool:
    """True when ``quant_op`` can compute ``float_op`` (a Gemm becomes MatMulInteger + Add in dynamic files)."""
    base = _base(quant_op)
    return base == float_op or (float_op == "Gemm" and base == "MatMul")


class _Side:
    """One model's main graph: producers, consumers, the float identity of tensors."""

    def __init__(self, proto: onnx.ModelProto):
        self.nodes = list(proto.graph.node)
        self.keys = node_keys(self.nodes)
        self._key = {id(n): k for n, k in zip(self.nodes, self.keys, strict=True)}
        self.by_name = {k: n for n, k in zip(self.nodes, self.keys, strict=True)}
        self.producer = {o: n for n in self.nodes for o in n.output if o}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for n in self.nodes:
            for t in n.input:
                if t:
                    self.consumers.setdefault(t, []).append(n)
        self.values = {t.name: t for t in proto.graph.initializer}
        self.values.update({n.output[0]: a.t for n in self.nodes if n.op_type == "Constant" and n.output
                            for a in n.attribute if a.name == "value"})
        self.inits = set(self.values)
        self.inits |= {n.output[0] for n in self.nodes if n.op_type == "Constant" and n.output}
        self.inputs = {i.name for i in proto.graph.input} - self.inits

    def k(self, node: onnx.NodeProto) -> str:
        """The node's key: its name, or ``"<op_type>#<index>"`` when empty or repeated (as the canvas names it)."""
        return self._key[id(node)]

    def is_zero(self, t: str) -> bool:
        """True when ``t`` is a constant whose every element is 0."""
        value = self.values.get(t)
        return value is not None and not np.any(numpy_helper.to_array(value))

    def op(self, node: onnx.NodeProto) -> str:
        """The float op ``node`` computes: ``Relu`` for ``Max(x, 0)`` (how our float8 exports write a ReLU,
        keeping its name), else the op type."""
        if node.op_type == "Max" and len(node.input) == 2 and sum(self.is_zero(t) for t in node.input) == 1:
            return "Relu"
        return node.op_type

    def through(self, node: onnx.NodeProto) -> str | None:
        """The data input a float node passes on when a quantizer drops it, None when it cannot be dropped.

        ``input[0]`` of a :data:`FOLDABLE` op; the other input of a Mul / Add by a per-channel constant
        (every dimension 1 but at most one) whose data a Conv writes, directly or through such nodes."""
        if node.op_type in FOLDABLE:
            return node.input[0] if node.input and node.input[0] else None
        if node.op_type not in AFFINE or node.domain not in ("", "ai.onnx") or len(node.input) != 2:
            return None
        consts = [t for t in node.input if t in self.values]
        data = [t for t in node.input if t not in self.values]
        if len(consts) != 1 or len(data) != 1 or sum(d != 1 for d in self.values[consts[0]].dims) > 1:
            return None
        p = self.producer.get(data[0])
        for _ in range(16):
            if p is None:
                return None
            if p.op_type == "Conv":
                return data[0]
            nxt = self.through(p) if p.op_type in AFFINE or p.op_type == "BatchNormalization" else None
            if nxt is None:
                return None
            p = self.producer.get(nxt)
        return None

    def strip(self, t: str) -> str:
        """The tensor ``t`` stands for once Q / DQ / QONNX Quant nodes are removed."""
        for _ in range(8):
            p = self.producer.get(t)
            if p is None or not (p.op_type in _STRIP or quantized_kind(p.op_type, p.domain) == "QONNX"):
                return t
            t = p.input[0]
        return t


def _data_inputs(side: _Side, node: onnx.NodeProto, stripped: bool) -> list[str]:
    """The node's non-constant input tensors (stripped of Q/DQ when ``stripped``)."""
    out = []
    for t in node.input:
        if not t:
            continue
        s = side.strip(t) if stripped else t
        if s not in side.inits and (side.producer.get(s) is not None or s in side.inputs):
            out.append(s)
    return list(dict.fromkeys(out))  # ConvInteger reads x and x's zero point, both DynamicQuantizeLinear(x)


def _qdq_pairs(q: _Side, dtypes: dict[str, str]) -> list[QdqPair]:
    pairs, seen = [], set()
    for n in q.nodes:
        if n.op_type == "QuantizeLinear":
            dqs = [q.k(c) for c in q.consumers.get(n.output[0], []) if c.op_type == "DequantizeLinear"]
            seen.update(dqs)
            role = "weight" if n.input[0] in q.inits else "activation"  # a weight held in a Constant node
            pairs.append(QdqPair(n.input[0], q.k(n), dqs, dtypes.get(n.output[0], "?"), role))
    for n in q.nodes:
        if n.op_type == "DequantizeLinear" and q.k(n) not in seen:
            dtype = dtypes.get(n.input[0], "?")
            role = "bias" if dtype == "int32" else ("weight" if n.input[0] in q.inits else "activation")
            pairs.append(QdqPair(n.input[0], "", [q.k(n)], dtype, role))
    return pairs


class _Matcher:
    def __init__(self, f: _Side, q: _Side):
        self.f, self.q = f, q
        self.f2q: dict[str, str] = {}
        self.q2f: dict[str, str] = {}
        self.how: dict[str, str] = {}

    def add(self, fn: onnx.NodeProto, qn: onnx.NodeProto, how: str) -> None:
        fk, qk = self.f.k(fn), self.q.k(qn)
        self.f2q[fk], self.q2f[qk], self.how[fk] = qk, fk, how

    def by_name(self) -> None:
        for fn in self.f.nodes:
            if not fn.name:
                continue
            for cand in (fn.name, fn.name + "_quant", fn.name + "_MatMul_quant", *self._renamed(fn.name)):
                qn = self.q.by_name.get(cand)
                if qn is not None and qn.name == cand and cand not in self.q2f and _compatible(fn.op_type, self.q.op(qn)):
                    self.add(fn, qn, "name")
                    break

    def _renamed(self, name: str) -> list[str]:
        """Names our dynamic export gives the node computing float node ``name``: ``<name>_ConvInteger`` ..."""
        return [name + "_" + op for op in ("ConvInteger", "MatMulInteger")]

    def _float_key(self, t: str) -> str:
        """Identity of a float tensor: its matched producer (looking through dropped foldable ops)."""
        for _ in range(8):
            p = self.f.producer.get(t)
            if p is None:
                return "input:" + t
            if self.f.k(p) in self.f2q:
                return "node:" + self.f2q[self.f.k(p)] + f":{list(p.output).index(t)}"
            nxt = self.f.through(p)
            if nxt is None:
                return "unmatched:" + self.f.k(p)
            t = nxt
        return "unmatched:" + t

    def _quant_key(self, t: str) -> str:
        t = self.q.strip(t)
        for _ in range(8):
            p = self.q.producer.get(t)
            if p is None:
                return "input:" + t
            if self.q.k(p) in self.q2f:
                return "node:" + self.q.k(p) + f":{list(p.output).index(t)}"
            # unmatched quantized-side helpers of dynamic units (Cast, Mul, Add after ConvInteger)
            if p.op_type in ("Cast", "Mul", "Add") and p.input:
                t = self.q.strip(p.input[0])
                continue
            return "unmatched:" + self.q.k(p)
        return "unmatched:" + t

    def by_structure(self) -> None:
        changed = True
        while changed:
            changed = False
            open_q: dict[tuple, list[onnx.NodeProto]] = {}
            for qn in self.q.nodes:
                if self.q.k(qn) in self.q2f or qn.op_type in _STRIP or qn.op_type == "Constant":
                    continue
                keys = tuple(sorted(self._quant_key(t) for t in _data_inputs(self.q, qn, True)))
                open_q.setdefault((_base(self.q.op(qn)), keys), []).append(qn)
            for fn in self.f.nodes:
                if self.f.k(fn) in self.f2q or fn.op_type == "Constant":
                    continue
                keys = tuple(sorted(self._float_key(t) for t in _data_inputs(self.f, fn, False)))
                if any(k.startswith("unmatched:") for k in keys):
                    continue
                cands = open_q.get((fn.op_type, keys)) or (open_q.get(("MatMul", keys)) if fn.op_type == "Gemm" else None)
                if cands:
                    self.add(fn, cands.pop(0), "structure")
                    changed = True


def _status(q: _Side, qn: onnx.NodeProto, fop: str, dtypes: dict[str, str]) -> str:
    if qn.op_type in INTEGER_KERNELS or quantized_kind(qn.op_type, qn.domain):
        return "quantized"
    if qn.input and qn.input[0] and dtypes.get(qn.input[0], "float") in _INT_DATA:  # MaxPool on uint8 ...
        return "quantized"
    def dequantized(t: str) -> bool:
        p = q.producer.get(t) if t else None
        return p is not None and (p.op_type == "DequantizeLinear" or quantized_kind(p.op_type, p.domain) == "QONNX")

    if fop in COMPUTE_OPS:  # a Conv / MatMul / Gemm computes in integers only when data and weight are both quantized
        if len(qn.input) < 2 or not dequantized(qn.input[1]):
            return "float"
        return "quantized" if dequantized(qn.input[0]) else "weight_only"  # w4-block: MatMulNBits in onnxruntime
    return "quantized" if any(dequantized(t) for t in qn.input) else "same"


def _tap(q: _Side, t: str) -> str:
    """The quantized-file tensor the consumers of ``t`` read: the DQ output of a Q -> DQ pair on ``t``."""
    users = q.consumers.get(t, [])
    if users and all(u.op_type == "QuantizeLinear" for u in users):
        dqs = [c for c in q.consumers.get(users[0].output[0], []) if c.op_type == "DequantizeLinear"]
        if dqs:
            return dqs[0].output[0]
    return t


def diff_models(float_proto: onnx.ModelProto, quant_proto: onnx.ModelProto) -> ModelDiff:
    """Match ``quant_proto`` (a quantized file) to ``float_proto`` (the model it was made from).

    Both models are read only (main graphs). See the module docstring for the rules.

    Returns
    -------
    ModelDiff
    """
    f, q = _Side(float_proto), _Side(quant_proto)
    m = _Matcher(f, q)
    m.by_name()
    m.by_structure()
    dtypes, fdtypes = tensor_dtypes(quant_proto), tensor_dtypes(float_proto)
    diff = ModelDiff(qdq=_qdq_pairs(q, dtypes), float_proto=float_proto,
                     quantized_ops=sum(bool(quantized_kind(n.op_type, n.domain)) or n.op_type in INTEGER_KERNELS
                                       for n in q.nodes))
    for fn in f.nodes:
        fk = f.k(fn)
        qname = m.f2q.get(fk)
        if qname is None:
            if fn.op_type != "Constant":  # weights in Constant nodes are compared as weights, not nodes
                (diff.folded if f.through(fn) is not None else diff.removed).append((fk, fn.op_type))
            continue
        qn = q.by_name[qname]
        diff.matches.append(NodeMatch(fk, qname, fn.op_type, qn.op_type, m.how[fk],
                                      _status(q, qn, fn.op_type, dtypes)))
        for ft, qt in zip(fn.output, qn.output, strict=False):
            tap = _pair(q, ft, qt, fdtypes.get(ft, "?"), dtypes) if ft and qt else None
            if tap is not None:
                diff.tensors[ft] = tap
                diff.producers[ft] = qname
    _follow_folded(f, diff)
    _pair_graph_outputs(float_proto, quant_proto, q, diff)
    diff.folded_into = _folded_into(f, m, diff)
    diff.added = [(q.k(n), n.op_type) for n in q.nodes
                  if q.k(n) not in m.q2f and n.op_type not in ("QuantizeLinear", "DequantizeLinear", "Constant")]
    diff.notes += _opset_note(float_proto, quant_proto, diff)
    return diff


def _opset_note(float_proto: onnx.ModelProto, quant_proto: onnx.ModelProto, diff: ModelDiff) -> list[str]:
    """A note when nodes were added and the two files' default-domain opsets differ: an opset conversion
    (ours upgrades below 13) inserts nodes, e.g. Shape / Flatten / Reshape around an opset-12 Softmax."""
    fo, qo = default_opset(float_proto), default_opset(quant_proto)
    if not diff.added or not fo or not qo or fo == qo:
        return []
    return [f"the float file is opset {fo}, the quantized file opset {qo}: nodes the opset conversion inserted "
            f"(e.g. Shape / Flatten / Reshape around a Softmax) are among the {len(diff.added)} added"]


def _pair(q: _Side, ft: str, qt: str, float_dtype: str, dtypes: dict[str, str]) -> str | None:
    """The quantized-file tensor holding float tensor ``ft`` (output of a node matched to the one writing
    ``qt``): the tensor of the same name where the file has one (a dynamic unit's ConvInteger writes int32,
    its Cast / Mul / Add write ``ft``), else ``qt``; read through a Q/DQ pair; None when that tensor is of
    another type that no scale turns back into ``float_dtype`` (an int32 accumulator)."""
    for t in (ft, qt):
        if t not in q.producer:
            continue
        tap = _tap(q, t)
        dtype = dtypes.get(tap, "?")
        if dtype in (float_dtype, "?") or dtype in _INT_DATA:
            return tap
    return None


def _pair_graph_outputs(float_proto: onnx.ModelProto, quant_proto: onnx.ModelProto, q: _Side,
                        diff: ModelDiff) -> None:
    """Each float graph output is compared with the quantized file's output of the same name (by position
    when the names differ): the value the user gets, whichever node computes it."""
    for ft, qt in output_names(float_proto, quant_proto):
        producer = q.producer.get(qt)
        if producer is None:
            continue
        diff.tensors[ft] = qt
        diff.producers.setdefault(ft, q.k(producer))


def _follow_folded(f: _Side, diff: ModelDiff) -> None:
    """A float tensor read only by folded ops (Conv -> Relu dropped into the Q) is compared after them:
    the quantized file's value stands for the folded op's output, not its input."""
    dropped = {name for name, _op in diff.folded}
    for fn in f.nodes:
        src = f.through(fn) if f.k(fn) in dropped else None
        if src is None or src not in diff.tensors:
            continue
        if all(f.k(c) in dropped for c in f.consumers.get(src, [])):
            diff.tensors[fn.output[0]] = diff.tensors.pop(src)
            diff.producers[fn.output[0]] = diff.producers.pop(src)


def _folded_into(f: _Side, m: _Matcher, diff: ModelDiff) -> dict[str, str]:
    """Folded node -> the quantized node its nearest matched producer became (through other folded
    ops: Conv -> BatchNormalization -> Relu both go into the Conv); folded ops without one are left out."""
    dropped = {name for name, _op in diff.folded}
    out: dict[str, str] = {}
    for name in dropped:
        node = f.by_name[name]
        for _ in range(16):
            src = f.through(node)
            p = f.producer.get(src) if src else None
            if p is None:
                break
            if f.k(p) in m.f2q:
                out[name] = m.f2q[f.k(p)]
                break
            if f.k(p) not in dropped:
                break
            node = p
    return out


def _first_output(diff: ModelDiff, quant_node: str) -> str | None:
    """The (first) float tensor whose tap the quantized node ``quant_node`` produces."""
    return next((t for t, n in diff.producers.items() if n == quant_node), None)


def format_diff(diff: ModelDiff, worst: int = 10, limit: int = 20) -> str:
    """Plain text for the terminal: the summary, the ``worst`` tensors by SQNR, then the folded
    (with the quantized node each went into), removed and added nodes and the float compute ops
    left float (at most ``limit`` of each); then a ``note:`` line per note."""
    lines = [diff.summary()]
    if diff.sqnr:
        ranked = sorted(diff.sqnr.items(), key=lambda kv: kv[1])[:worst]
        lines.append(f"worst SQNR ({count(len(diff.sqnr), 'tensor')} measured):")
        lines += [f"  {db:8.2f} dB  {t} (quantized: {diff.tensors[t]})" for t, db in ranked]
    left = [(m.float_node, m.float_op) for m in diff.matches if m.status == "float"]
    for title, rows in (("left float", left), ("folded or fused", diff.folded), ("removed", diff.removed),
                        ("added", diff.added)):
        if rows:
            lines.append(f"{title}: {len(rows)}")
            lines += [f"  {op} {name}" + (f" (into {diff.folded_into[name]})" if name in diff.folded_into else "")
                      for name, op in rows[:limit]]
            if len(rows) > limit:
                lines.append(f"  ... {len(rows) - limit} more (use --json)")
    lines += [f"note: {note}" for note in diff.notes]
    return "\n".join(lines)
