"""What an already-quantized model is, in one line, and the dtype of each node and drawn edge.

``summarize_quantization(proto).text()`` gives e.g. ``"QDQ: 3 Conv uint8/int8, 1 Gemm uint8/int8"``
or ``"dynamic: 20 Conv uint8/uint8, 2 MatMul uint8/uint8, 1 LSTM uint8/int8, 3 MatMul float"``
(``"dynamic (int4 QDQ weights fused by onnxruntime into MatMulNBits): ..."`` for a QDQ file run so):
the formats found (:mod:`workbench.core.graph.quantized_ops`; the QuantizeLinear / DequantizeLinear at the edges
of a QOperator file's integer kernels count as QOperator, :mod:`~workbench.core.inspection.qoperator_boundary`),
then per compute op type (Conv,
ConvTranspose, MatMul, Gemm, LSTM, GRU, Attention and their integer forms) how many run with which
``activation/weight`` dtypes, and how many stay float. A compute node counts as quantized when it is
an integer kernel (QLinearConv, ConvInteger, MatMulNBits ...) or, in QDQ and QONNX models, when an
input comes from a DequantizeLinear / Quant node; the dtypes are those of the integer tensors.

Everything here reads the file only (no onnxruntime); the canvas of the app and ``inspect`` show it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import onnx

from workbench.core.formats.qtypes import qtype_of_onnx
from workbench.core.graph.index import attrs_of
from workbench.core.graph.layout import GraphStructure, node_keys
from workbench.core.graph.op_equivalents import EQUIVALENTS, FLOAT_OP, Equivalent
from workbench.core.graph.op_families import PASS_THROUGH_OPS, WEIGHT_OPS
from workbench.core.graph.quantized_ops import (
    is_integer_kernel,
    nbits_node_runs_int8,
    nbits_runs_int8,
    quantized_kind,
)
from workbench.core.inspection.qdq_drop import DROP_QDQ, DropView, runs_on_integers
from workbench.core.inspection.qoperator_boundary import quantization_kinds
from workbench.core.inspection.quant_reader import QuantTensor, params_by_node, read_quant_params
from workbench.core.inspection.tensor_dtypes import tensor_dtypes
from workbench.core.planning.kernels import (
    ORT_ACCURACY_LEVEL,
    integer_kernel,
    is_int8,
    nbits_kernel,
    nbits_layout,
    relu_after_bias,
)
from workbench.core.wording import count

#: float ops counted in the summary (the ones quantization is about)
COMPUTE_OPS = frozenset(WEIGHT_OPS) | {"LSTM", "GRU", "RNN", "Attention"}
#: compute kernels whose dtypes are read from their activation and weight inputs (:data:`EQUIVALENTS`); a
#: MatMulBnb4's weight is FP4 / NF4 blocks, no integer dtype, so it reads as a float MatMul
_KERNELS: dict[str, Equivalent] = {name: e for name, e in EQUIVALENTS.items()
                                   if e.integer and e.op in COMPUTE_OPS and name != "MatMulBnb4"}
#: element-wise ops onnxruntime's QDQ selectors (CPU) turn into integer kernels when every listed input
#: comes from a DequantizeLinear and the op's one reader is a QuantizeLinear, of one 8-bit type as onnxruntime
#: sees them (its unary, binary, variadic and Where rules; ``_runtime_type``): op -> positions of the quantized inputs (None: all)
ELEMENTWISE_KERNELS: dict[str, tuple[int, ...] | None] = {
    "AveragePool": (0,), "GlobalAveragePool": (0,), "LeakyRelu": (0,), "Sigmoid": (0,), "Softmax": (0,),
    "Add": (0, 1), "Mul": (0, 1), "Concat": None, "Where": (1, 2),
}
_KIND_TEXT = {"weight_only": "weight-only"}


@dataclass
class QuantSummary:
    """How a model is quantized.

    Attributes
    ----------
    kinds : dict of str to int
        Format (``"QDQ"``, ``"QOperator"``, ``"dynamic"``, ``"weight_only"``, ``"QONNX"``) -> number of
        quantized operators of that format, most first; empty for a float model
        (:func:`~workbench.core.inspection.qoperator_boundary.quantization_kinds`). A main-graph MatMulNBits
        at ``accuracy_level`` 4 counts as ``"dynamic"`` (its activation quantized to int8 per block as it
        runs), at 0 (unset) to 3 as ``"weight_only"`` (onnxruntime's CPU kernel: 1 fp32, 2 fp16 only for an
        fp16 input on ARM64, 3 bf16 not implemented: float32 math on the dequantized weight). So does a
        weight-only QDQ MatMul (float activation, DequantizeLinear weight) onnxruntime fuses into MatMulNBits
        at its default level 4 (:func:`run_dtypes`): its weight's DequantizeLinear leaves ``"QDQ"``.
    ops : list of (str, str, int)
        (float op type, ``"activation/weight"`` dtypes or ``"float"``, node count), quantized rows
        first, each group by count; a MatMulNBits at accuracy_level 4 reads ``"int8/uint4"`` (the int8 its
        activation is quantized to as it runs; ``compute`` keeps the file's ``"float/uint4"``), and so does
        a QDQ MatMul onnxruntime fuses into one (``"int8/int4"``: :func:`run_dtypes`).
    node_dtypes : dict of str to str
        Node key -> the dtype it computes in (see :func:`node_dtypes`). A node's key is its name, or
        ``"<op_type>#<index>"`` for an empty or repeated name (:func:`~workbench.core.graph.layout.node_keys`,
        the names the canvas gives its nodes), in this and the next two fields.
    kernels : dict of str to str
        Node key -> integer kernel it is (``"QLinearConv"``) or that onnxruntime fuses its QDQ unit
        into (``"QDQ -> QLinearConv"``). A MatMulNBits of the file only at ``accuracy_level`` 4, where
        onnxruntime computes it in int8 (:func:`~workbench.core.graph.quantized_ops.nbits_runs_int8`); at 0
        (unset) to 3 it is float32 math on a 4-bit weight, a weight-only node (``compute`` ``"float/uint4"``).
    compute : dict of str to str
        Node key -> ``"activation/weight"`` dtypes (``"uint8/int8"``) of each compute node (Conv, MatMul,
        LSTM, ... and their integer kernels) that computes on a quantized tensor: the nodes counted in
        the quantized rows of ``ops``.
    weighted : dict of str to int
        Float op (``"Conv"``, ``"MatMul"``) -> how many of its quantized compute nodes (``compute``) take a
        constant weight (an initializer, also behind its QuantizeLinear / DequantizeLinear): the ones a weight
        scale per output channel applies to; an attention MatMul of two activations is not counted.
    as_kernels : dict of (str, str) to int
        (op, dtypes) of a quantized row of ``ops`` -> how many of its nodes are integer kernels
        (``kernels``). ``text`` says so where it is fewer than the row's count: an int8 QDQ file whose
        shared int8 pairs x86 onnxruntime cannot turn uint8 runs those units as DequantizeLinear and a
        float op ("QDQ: 64 Conv int8/int8 (7 integer kernels, 57 in float)", nudenet_320n).
    families : list of (str, int)
        Every op type onnxruntime runs on quantized data, with its node count, most first (ties by name):
        integer kernels (``kernels``) by the float op they compute, weight-only kernels, and pass-through
        ops (Reshape, Transpose, MaxPool, ...) on integer tensors (:func:`_on_quantized_data`), e.g.
        ``("Conv", 38)``. Float ops between Q/DQ pairs (LayerNormalization, Div, Erf) are not counted.
    fused_qdq : dict of str to int
        Weight dtype (``"int4"``) -> how many weight-only QDQ MatMuls of that weight dtype onnxruntime fuses into
        MatMulNBits and ``kinds`` counts ``"dynamic"``: ``text`` names the file's QDQ beside ``dynamic``
        (``"dynamic (int4 QDQ weights fused by onnxruntime into MatMulNBits): 36 MatMul int8/int4"``), so a
        reader who made a QDQ file finds the format it holds; empty for every other file.
    """

    kinds: dict[str, int] = field(default_factory=dict)
    ops: list[tuple[str, str, int]] = field(default_factory=list)
    node_dtypes: dict[str, str] = field(default_factory=dict)
    kernels: dict[str, str] = field(default_factory=dict)
    families: list[tuple[str, int]] = field(default_factory=list)
    compute: dict[str, str] = field(default_factory=dict)
    weighted: dict[str, int] = field(default_factory=dict)
    as_kernels: dict[tuple[str, str], int] = field(default_factory=dict)
    fused_qdq: dict[str, int] = field(default_factory=dict)

    @property
    def quantized(self) -> bool:
        return bool(self.kinds)

    def text(self) -> str:
        """One line: ``"QDQ: 3 Conv uint8/int8, 1 Gemm uint8/int8"`` ("float model" when not quantized)."""
        if not self.kinds:
            return "float model"
        kinds = " + ".join(self._kind_text(k) for k in self.kinds)
        rows = ", ".join(f"{n} {op} {dt}{self._run_note(op, dt, n)}" for op, dt, n in self.ops)
        return f"{kinds}: {rows}" if rows else kinds

    def _kind_text(self, kind: str) -> str:
        """A format as ``text`` names it: ``"weight-only"``; ``"dynamic"`` with, where it counts QDQ MatMuls
        onnxruntime fuses into MatMulNBits, the QDQ the file holds: ``"dynamic (int4 QDQ weights fused by
        onnxruntime into MatMulNBits)"``."""
        word = _KIND_TEXT.get(kind, kind)
        if kind == "dynamic" and self.fused_qdq:
            word += f" ({'/'.join(sorted(self.fused_qdq))} QDQ weights fused by onnxruntime into MatMulNBits)"
        return word

    def _run_note(self, op: str, dtypes: str, n: int) -> str:
        """What onnxruntime makes of a row whose activation is an integer type but not all of whose nodes are
        integer kernels: ``" (7 integer kernels, 57 in float)"``, ``" (run in float)"``; "" otherwise."""
        k = self.as_kernels.get((op, dtypes))
        if k is None or k == n or dtypes == "float" or dtypes.startswith(("float", "?")):
            return ""
        return " (run in float)" if k == 0 else f" ({count(k, 'integer kernel')}, {n - k} in float)"

    def families_text(self, limit: int = 6) -> str:
        """The op families run on quantized data, most first: ``"38 Conv, 13 MatMul, 4 Transpose and 2 more"`` (the
        first ``limit``; "" when there are none)."""
        shown = ", ".join(f"{n} {op}" for op, n in self.families[:limit])
        rest = len(self.families) - limit
        return f"{shown} and {rest} more" if rest > 0 else shown


class _Graph(DropView):
    """Producers and dtypes of the main graph."""

    def __init__(self, proto: onnx.ModelProto, params: list[QuantTensor]):
        super().__init__(proto, tensor_dtypes(proto, params))
        self.relu_after = relu_after_bias(proto.graph)  # MatMuls onnxruntime fuses with bias + Relu
        self.qonnx_dtype = {}
        by_tensor = {p.tensor: p for p in params}
        for n in self.nodes:
            if quantized_kind(n.op_type, n.domain) == "QONNX" and n.input and n.input[0] in by_tensor:
                self.qonnx_dtype[n.output[0]] = by_tensor[n.input[0]].dtype

    def source_dtype(self, tensor: str) -> str | None:
        """The integer dtype a float input was dequantized from (DQ / QONNX producer), else None."""
        prod = self.producer.get(tensor)
        if prod is None:
            return None
        if prod.op_type == "DequantizeLinear":
            return self.dtypes.get(prod.input[0], "?")
        return self.qonnx_dtype.get(tensor)

    def dtype(self, tensor: str) -> str:
        return self.dtypes.get(tensor, "?")


def _input(node: onnx.NodeProto, i: int | None) -> str:
    return node.input[i] if i is not None and len(node.input) > i else ""


def _constant_weight(g: _Graph, node: onnx.NodeProto) -> bool:
    """Whether a compute node's weight input (its kernel's weight position, else input 1) is an initializer or a
    Constant node's value, directly or behind the DequantizeLinear (and QuantizeLinear) that quantize it."""
    kernel = _KERNELS.get(node.op_type)
    t = _input(node, kernel.weight if kernel is not None else 1)
    for _ in range(3):  # the initializer, its DequantizeLinear, a QuantizeLinear before that
        if not t:
            return False
        if _constant_value(g, t):
            return True
        prod = g.producer.get(t)
        if prod is None or prod.op_type not in ("DequantizeLinear", "QuantizeLinear"):
            return False
        t = prod.input[0]
    return False


def _compute_dtypes(g: _Graph, node: onnx.NodeProto) -> str:
    """``"act/weight"`` dtypes of a compute node, or ``"float"``."""
    op = node.op_type
    kernel = _KERNELS.get(op)
    if kernel is not None:
        if op == "MatMulNBits":
            w = f"uint{int(attrs_of(node).get('bits', 4))}"
        else:
            w = g.dtype(_input(node, kernel.weight))
        a = kernel.activation_dtype or g.dtype(_input(node, kernel.activation))
        return f"{a}/{w}"
    a = g.source_dtype(_input(node, 0))
    w = g.source_dtype(_input(node, 1))
    if a is None and w is None:
        return "float"
    return f"{a or 'float'}/{w or 'float'}"


def node_dtype(g: _Graph, node: onnx.NodeProto) -> str:
    """The dtype ``node`` computes in: a Q node its output's, a DQ node its input's, an integer
    kernel its activation input's; a compute node fed by a DequantizeLinear, a node fed by QONNX
    nodes, or another node onnxruntime runs on integers (:func:`_runs_integer`) the integer dtype of
    its first such input; otherwise the dtype of its first output (a Sigmoid that reads a
    DequantizeLinear but whose output has no QuantizeLinear runs in float)."""
    op = node.op_type
    if op == "QuantizeLinear" or op == "DynamicQuantizeLinear":
        return g.dtype(node.output[0])
    if op == "DequantizeLinear":
        return g.dtype(node.input[0])
    if op in _KERNELS:
        a, w = _compute_dtypes(g, node).split("/")
        return a if a != "float" else w
    if op.startswith("QLinear"):
        return g.dtype(node.input[0])
    if quantized_kind(op, node.domain) == "QONNX":
        return g.qonnx_dtype.get(node.output[0], "?")
    for t in node.input:
        src = g.source_dtype(t) if t else None
        if src is not None:
            if op in COMPUTE_OPS or t in g.qonnx_dtype or _runs_integer(g, node):
                return src
            break  # a DQ-fed element-wise node whose result stays float (a SiLU's Sigmoid and Mul)
    return g.dtype(node.output[0]) if node.output else "?"


def _runs_integer(g: _Graph, node: onnx.NodeProto) -> bool:
    """True when onnxruntime runs a non-compute node of a QDQ graph on integers (QLinearSigmoid,
    QLinearAdd, a Reshape / MaxPool between Q/DQ pairs): every float input comes from a
    DequantizeLinear and every reader of its outputs is a QuantizeLinear (its QDQ selectors)."""
    float_in = [t for t in node.input if t and g.dtype(t) in ("float", "float16", "bfloat16", "double", "?")]
    if not float_in or not all((p := g.producer.get(t)) is not None and p.op_type == "DequantizeLinear"
                               for t in float_in):
        return False
    users = [u for o in node.output if o for u in g.consumers.get(o, [])]
    return bool(users) and all(u.op_type == "QuantizeLinear" for u in users)


def _qtype(dtype: str):
    """The QType of a dtype name of :func:`tensor_dtypes` ("uint8", "float8e4m3fn", "int4"), None for float."""
    try:
        return qtype_of_onnx(onnx.TensorProto.DataType.Value(dtype.upper()))
    except ValueError:  # "float", "?": not an element type name of a quantized tensor
        return None


def _dq_layout(g: _Graph, dq: onnx.NodeProto) -> bool:
    """Whether a weight's DequantizeLinear has a layout MatMulNBits takes (:func:`nbits_layout`)."""
    a = attrs_of(dq)
    if a.get("block_size"):
        return nbits_layout("per_block", a.get("axis", 1), int(a["block_size"]))
    scale = g.inits.get(_input(dq, 1))
    per_tensor = scale is not None and len(scale.dims) == 0 or (scale is not None and list(scale.dims) == [1])
    return nbits_layout("per_tensor" if per_tensor else "per_channel", a.get("axis", 1), None)


def _constant_value(g: _Graph, tensor: str) -> bool:
    """Whether ``tensor`` is an initializer or a Constant node's value (onnxruntime folds that into an
    initializer before its QDQ fusions, so a weight held so fuses too)."""
    prod = g.producer.get(tensor)
    return tensor in g.inits or (prod is not None and prod.op_type == "Constant" and prod.domain in ("", "ai.onnx"))


def _only(g: _Graph, tensor: str) -> onnx.NodeProto | None:
    """The one node reading ``tensor``, None when it has none or several."""
    users = g.consumers.get(tensor, [])
    return users[0] if len(users) == 1 else None


def _u8_pair(g: _Graph, dq: onnx.NodeProto | None) -> bool:
    """Whether an activation DequantizeLinear's pair reaches x86 onnxruntime's integer kernels: uint8
    already, or int8 that its QDQS8ToU8Transformer turns uint8, which it does only for a QuantizeLinear
    whose one output edge is this DequantizeLinear (it first gives every reader of a shared pair its own
    DequantizeLinear, so a tensor read by two nodes stays int8 and its units float)."""
    if dq is None or dq.op_type != "DequantizeLinear":
        return False
    qtype = _qtype(g.dtype(dq.input[0]))
    if qtype is None or qtype.name != "int8":
        return True
    q = g.producer.get(dq.input[0])
    return q is not None and q.op_type == "QuantizeLinear" and _only(g, q.output[0]) is dq \
        and len(g.readers(dq.output[0])) <= 1


def _fused_kernel(g: _Graph, node: onnx.NodeProto) -> str | None:
    """The kernel onnxruntime makes of a QDQ unit around ``node`` (its QDQ fusion rules, for the
    element types that have kernels: :mod:`workbench.core.planning.kernels`): activation and weight
    from 8-bit integer DequantizeLinear and the output to an 8-bit QuantizeLinear (directly or through
    Relu / Clip) give QLinearConv / QLinearMatMul / QGemm, a MatMul or Gemm with a float output
    MatMulIntegerToFloat / QGemm (a 16-bit output pair keeps the op float);
    a MatMul whose integer weight sits beside a float or 16-bit activation MatMulNBits; None where
    onnxruntime runs DequantizeLinear and the float op (ConvTranspose, 16-bit activations, float8);
    element-wise ops as :func:`_elementwise_kernel`."""
    op = node.op_type
    if op in ELEMENTWISE_KERNELS:
        return _elementwise_kernel(g, node)
    if op not in ("Conv", "ConvTranspose", "MatMul", "Gemm"):
        return None
    a_dq = g.producer.get(_input(node, 0))
    w_dq = g.producer.get(_input(node, 1))
    if w_dq is None or w_dq.op_type != "DequantizeLinear":
        return None
    w_type = _qtype(g.dtype(w_dq.input[0]))
    a_type = _qtype(g.dtype(a_dq.input[0])) if a_dq is not None and a_dq.op_type == "DequantizeLinear" else None
    users = g.consumers.get(node.output[0], [])
    if len(users) == 1 and users[0].op_type in ("Relu", "Clip"):
        users = g.consumers.get(users[0].output[0], [])
    to_q = bool(users) and all(u.op_type == "QuantizeLinear" for u in users)
    out_types = [_qtype(g.dtype(u.output[0])) for u in users] if to_q else []
    if not integer_kernel(op, w_type, a_type):
        # an 8-bit output pair (int8, float8) keeps onnxruntime from fusing MatMulNBits; a 16-bit one does not;
        # nor does a weight DequantizeLinear read by another node or given out (its selector's one output edge)
        fusable = (_constant_value(g, w_dq.input[0]) and not any(t is not None and t.bits == 8 for t in out_types)
                   and node.name not in g.relu_after  # a float FusedGemm (digits_mlp w4-block: 2 of 3)
                   and _only(g, w_dq.output[0]) is node and w_dq.output[0] not in g.outputs)
        return "MatMulNBits" if fusable and nbits_kernel(op, w_type, a_type, _dq_layout(g, w_dq)) else None
    if to_q and not all(is_int8(t) for t in out_types):
        return None  # a 16-bit output pair (the next unit's activation): DequantizeLinear + float op
    acts = [d for d in (a_dq, w_dq) if d is not None and not _constant_value(g, d.input[0])]
    if not all(_u8_pair(g, dq) for dq in acts) or not all(_u8_pair(g, _only(g, q.output[0])) for q in users if to_q):
        return None  # a signed pair x86 onnxruntime cannot turn uint8: DequantizeLinear + float op
    if op == "Gemm":
        return "QGemm"
    if op == "MatMul":
        return "QLinearMatMul" if to_q else "MatMulIntegerToFloat"
    return f"QLinear{op}" if to_q else None


def _elementwise_kernel(g: _Graph, node: onnx.NodeProto) -> str | None:
    """``QLinear<op>`` when onnxruntime fuses the QDQ unit around the element-wise ``node``
    (:data:`ELEMENTWISE_KERNELS`): the listed inputs read DequantizeLinear outputs, the one reader of the
    output (not a graph output) is a QuantizeLinear, and those integer tensors have one 8-bit type as
    onnxruntime sees them (:func:`_runtime_type`); else None (DequantizeLinear, the float op, QuantizeLinear)."""
    positions = ELEMENTWISE_KERNELS[node.op_type]
    inputs = [t for t in node.input if t] if positions is None else [_input(node, i) for i in positions]
    dqs = [g.producer.get(t) for t in inputs]
    if not inputs or not all(d is not None and d.op_type == "DequantizeLinear" for d in dqs):
        return None
    if not node.output or node.output[0] in g.outputs:
        return None
    q = _only(g, node.output[0])
    if q is None or q.op_type != "QuantizeLinear":
        return None
    types = {_runtime_type(g, d) for d in dqs} | {_runtime_type(g, _only(g, q.output[0]), g.dtype(q.output[0]))}
    return f"QLinear{node.op_type}" if len(types) == 1 and types <= {"int8", "uint8"} else None


def _runtime_type(g: _Graph, dq: onnx.NodeProto | None, dtype: str | None = None) -> str:
    """The integer type of a DequantizeLinear's input (``dtype`` when ``dq`` is None) after onnxruntime's
    x86 QDQS8ToU8Transformer: an int8 pair it turns uint8 (:func:`_u8_pair`) reads uint8. Its binary,
    unary and variadic selectors then ask for one type across the unit (measured with onnxruntime 1.32:
    an int8 Q -> DQ pair read by one node beside a uint8 one fuses, an int8 constant or a shared int8
    pair beside uint8 does not). A QuantizeLinear of a constant (initializer, Constant node or a value
    computed from constants only: GELU's 0.5 and 1.0 in onnxruntime's own int8 exports) is folded into an
    int8 constant first, so it stays int8."""
    if dq is None or dq.op_type != "DequantizeLinear":
        return dtype or "?"
    t = g.dtype(dq.input[0])
    if t != "int8" or not _u8_pair(g, dq):
        return t
    src = g.producer[dq.input[0]].input[0]  # _u8_pair: a QuantizeLinear feeds the pair
    return "int8" if g.foldable(src) else "uint8"  # a Reshape of a constant bias too (ppocr_mobile_v2_cls)


def summarize_quantization(proto: onnx.ModelProto, params: list[QuantTensor] | None = None) -> QuantSummary:
    """How ``proto`` (main graph) is quantized; see the module docstring.

    Parameters
    ----------
    proto : onnx.ModelProto
        Any model (not modified); a float model gives empty ``kinds`` and ``ops`` of float rows.
    params : list of QuantTensor, optional
        :func:`read_quant_params` of ``proto`` when the caller has it already.
    """
    params = read_quant_params(proto) if params is None else params
    g = _Graph(proto, params)
    summary = QuantSummary(kinds=quantization_kinds(proto, g.dtypes))
    rows: Counter = Counter()
    families: Counter = Counter()
    nbits_int8 = qdq_dynamic = 0
    # keyed as the canvas keys its nodes: by name, two unnamed nodes (or two of one name) were one entry, and
    # the boxes of the units whose kernel lost its entry read "float"
    for node, key in zip(g.nodes, node_keys(g.nodes), strict=True):
        summary.node_dtypes[key] = node_dtype(g, node)
        op = node.op_type
        if op == "MatMulNBits":
            if _nbits_int8(g, node):  # else float32 math on dequantized weights: weight-only, no INT mark
                summary.kernels[key] = op
                nbits_int8 += 1
        elif is_integer_kernel(op, node.domain):
            summary.kernels[key] = op
        else:
            fused = _fused_kernel(g, node)
            if fused:
                summary.kernels[key] = f"QDQ -> {fused}"
        base = FLOAT_OP.get(op, op)
        if base in COMPUTE_OPS:
            dtypes = _compute_dtypes(g, node)
            # accuracy_level 4: the kernel quantizes its float activation to int8 per block as it runs
            row = (base, run_dtypes(dtypes, summary.kernels.get(key)))
            if op != "MatMulNBits" and row[1] != dtypes and dtypes.startswith("float/"):
                qdq_dynamic += 1  # a weight-only QDQ MatMul fused into MatMulNBits: int8 activation as run
                weight = dtypes.split("/", 1)[1]
                summary.fused_qdq[weight] = summary.fused_qdq.get(weight, 0) + 1
            rows[row] += 1
            summary.as_kernels[row] = summary.as_kernels.get(row, 0) + (key in summary.kernels)
            if dtypes != "float":
                summary.compute[key] = dtypes
                if _constant_weight(g, node):
                    summary.weighted[base] = summary.weighted.get(base, 0) + 1
        if key in summary.kernels or _on_quantized_data(g, node):
            families[base] += 1
    quant = sorted(((op, dt, n) for (op, dt), n in rows.items() if dt != "float"), key=lambda r: (-r[2], r[0]))
    flt = sorted(((op, dt, n) for (op, dt), n in rows.items() if dt == "float"), key=lambda r: (-r[2], r[0]))
    summary.ops = quant + flt
    summary.families = sorted(families.items(), key=lambda r: (-r[1], r[0])) if summary.kinds else []
    summary.kinds = _kinds_as_run(summary.kinds, {"weight_only": nbits_int8, "QDQ": qdq_dynamic})
    return summary


#: the kernels onnxruntime runs a weight-only MatMul of a file as, in the file or fused from its QDQ unit
_NBITS_KERNELS = ("MatMulNBits", "QDQ -> MatMulNBits")


def run_dtypes(dtypes: str, kernel: str | None) -> str:
    """The ``"activation/weight"`` dtypes onnxruntime computes a compute node at, from its file dtypes
    (``QuantSummary.compute``) and its kernel (``QuantSummary.kernels``, None for none): a MatMulNBits kernel
    quantizes its activation to int8 per block as it runs, at ``accuracy_level`` 4, so ``"float/uint4"`` reads
    ``"int8/uint4"``. A file's MatMulNBits is a kernel only at level 4; one onnxruntime fuses from a
    DequantizeLinear weight and a MatMul (``"QDQ -> MatMulNBits"``) takes the session option's level, 4 by
    default (:data:`~workbench.core.planning.kernels.ORT_ACCURACY_LEVEL`; the fused node of onnxruntime 1.32's
    optimized graph has ``accuracy_level`` 4). Other nodes keep ``dtypes``."""
    if kernel not in _NBITS_KERNELS or "/" not in dtypes:
        return dtypes
    if kernel != "MatMulNBits" and not nbits_runs_int8(ORT_ACCURACY_LEVEL):
        return dtypes
    return "int8/" + dtypes.split("/", 1)[1]


def _kinds_as_run(kinds: dict[str, int], moved: dict[str, int]) -> dict[str, int]:
    """``kinds`` with ``moved[kind]`` nodes of each kind counted ``"dynamic"`` instead: MatMulNBits of
    accuracy_level 4 (``"weight_only"``) and weight-only QDQ MatMuls onnxruntime fuses into them (``"QDQ"``, one
    weight DequantizeLinear each). onnxruntime quantizes their float activation to int8 per block at run time
    and computes integer dot products, as DynamicQuantizeMatMul does; most first as before."""
    if not any(moved.values()):
        return kinds
    out = Counter(kinds)
    for kind, n in moved.items():
        out[kind] -= n
        out["dynamic"] += n
    return dict(sorted(((k, n) for k, n in out.items() if n > 0), key=lambda kv: -kv[1]))


def _nbits_int8(g: _Graph, node: onnx.NodeProto) -> bool:
    """Whether onnxruntime's CPU MatMulNBits ``node`` computes in int8 (:func:`nbits_node_runs_int8`): its
    ``accuracy_level`` (unset: 0) is 4, B an initializer, no ``g_idx`` and no float zero point."""
    return nbits_node_runs_int8(node, g.inits, g.dtype)


def _on_quantized_data(g: _Graph, node: onnx.NodeProto) -> bool:
    """Whether onnxruntime runs ``node`` (not an integer kernel) on quantized data: a weight-only kernel
    (MatMulNBits below accuracy_level 4, GatherBlockQuantized: float math on a packed integer weight), a
    data-movement op (:data:`PASS_THROUGH_OPS`, :data:`~workbench.core.inspection.qdq_drop.DROP_QDQ`) that
    reads an integer tensor itself (QOperator files), or one whose Q/DQ pairs onnxruntime moves and drops
    (:func:`~workbench.core.inspection.qdq_drop.runs_on_integers`: its QDQ propagation, x86 int8 -> uint8
    and DropQDQ / Split rules). A float op that merely reads a DequantizeLinear output (LayerNormalization,
    Div, Erf) runs in float and is not counted. Equal to onnxruntime 1.32's optimized graphs of its int8 and
    uint8 QDQ and QOperator nudenet_320n, minilm and ppocrv4_rec exports."""
    if quantized_kind(node.op_type, node.domain) == "weight_only":
        return True
    if node.op_type not in PASS_THROUGH_OPS and node.op_type not in DROP_QDQ or not node.input:
        return False
    if all(g.constant(t) is not None for t in node.input if t):
        return False  # folded into a constant when the session loads (a QOperator file's Reshape of a bias)
    qtype = _qtype(g.dtype(node.input[0]))
    if qtype is not None and qtype.bits <= 16:  # not an int32 / int64 index or shape tensor
        return True
    return runs_on_integers(g, node)


@dataclass
class EdgeQuant:
    """Per drawn edge of a :class:`GraphStructure` (same index as ``structure.edges``).

    Attributes
    ----------
    dtypes : list of str
        The dtype the edge carries: for an edge with collapsed Q/DQ pairs the quantized dtype of the
        (last) pair, for the output of a QONNX Quant node its integer type (``int8``: float values on
        that grid), otherwise the dtype of ``structure.edge_tensors[e]``.
    tensors : list of str
        The quantized tensor of the edge ("" for none): the QuantizeLinear output of a collapsed
        pair, the edge tensor itself when it is integer, or the integer input of the DequantizeLinear
        producing it. Key into :func:`read_quant_params` (``QuantTensor.tensor``).
    """

    dtypes: list[str] = field(default_factory=list)
    tensors: list[str] = field(default_factory=list)


def edge_quantization(proto: onnx.ModelProto, structure: GraphStructure,
                      params: list[QuantTensor] | None = None) -> EdgeQuant:
    """The dtype and quantized tensor of every edge of ``structure`` (built from ``proto``'s main graph)."""
    params = read_quant_params(proto) if params is None else params
    g = _Graph(proto, params)
    quantized = {p.tensor for p in params}
    hidden = set(structure.hidden)
    out = EdgeQuant()
    for tensor in structure.edge_tensors:
        prod = g.producer.get(tensor)
        if prod is not None and prod.op_type == "DequantizeLinear" and prod.input[0] in quantized:
            q = prod.input[0]
            folded = g.producer.get(q) is not None and g.producer[q].op_type == "QuantizeLinear"
            out.dtypes.append(g.dtype(q) if folded and prod.name in hidden else g.dtype(tensor))
            out.tensors.append(q)
        elif tensor in g.qonnx_dtype:  # a QONNX Quant output: float values on the node's integer grid
            out.dtypes.append(g.qonnx_dtype[tensor])
            out.tensors.append(prod.input[0])
        else:
            out.dtypes.append(g.dtype(tensor))
            out.tensors.append(tensor if tensor in quantized else "")
    return out



def params_around_nodes(proto: onnx.ModelProto, params: list[QuantTensor] | None = None) -> dict[str, list[QuantTensor]]:
    """Node name -> the quantized tensors it reads or writes, Q/DQ looked through (main graph).

    Besides the tensors a quantized op reads itself (:func:`params_by_node`), a float node of a QDQ
    file gets the tensors its DequantizeLinear inputs dequantize (weight, bias, and activations, given
    the role "input") and the ones the QuantizeLinear nodes reading its output produce (role "output"),
    so selecting a Conv shows its unit's scales and zero points, its input told from its output.
    """
    params = read_quant_params(proto) if params is None else params
    by_tensor = {p.tensor: p for p in params}
    out = {n: list(ps) for n, ps in params_by_node(params).items()}
    nodes = list(proto.graph.node)
    producer = {o: n for n in nodes for o in n.output if o}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for n in nodes:
        for t in n.input:
            consumers.setdefault(t, []).append(n)
    for n in nodes:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear"):
            continue
        found = []
        for t in n.input:
            p = producer.get(t)
            if p is not None and p.op_type == "DequantizeLinear" and p.input[0] in by_tensor:
                found.append(_as_role(by_tensor[p.input[0]], "input"))
        for t in n.output:
            for c in consumers.get(t, []):
                if c.op_type == "QuantizeLinear" and c.output[0] in by_tensor:
                    found.append(_as_role(by_tensor[c.output[0]], "output"))
        if found:
            have = out.setdefault(n.name, [])
            have += [p for p in found if all(p.tensor != h.tensor for h in have)]
    for n in nodes:
        if n.name in out:
            order = _slot_order(n, producer, consumers)
            # in the op's input order, then its outputs' (a QLinearAdd's B, a weight read where it is, came before
            # its A, an activation read at its producer)
            out[n.name] = sorted((_seen_from(n, p) for p in out[n.name]),
                                 key=lambda p: order.get(p.tensor, len(order)))
    return out


def _slot_order(node: onnx.NodeProto, producer: dict[str, onnx.NodeProto],
                consumers: dict[str, list[onnx.NodeProto]]) -> dict[str, int]:
    """Quantized tensor -> the index of the slot of ``node`` it fills: its inputs first, then its outputs; a
    tensor a DequantizeLinear feeding an input dequantizes, or a QuantizeLinear reading an output quantizes, takes
    that input's or output's slot (QDQ)."""
    order: dict[str, int] = {}
    for i, t in enumerate(node.input):
        if not t:
            continue
        order.setdefault(t, i)
        p = producer.get(t)
        if p is not None and p.op_type == "DequantizeLinear":
            order.setdefault(p.input[0], i)
    for j, t in enumerate(node.output, start=len(node.input)):
        order.setdefault(t, j)
        for c in consumers.get(t, []):
            if c.op_type == "QuantizeLinear":
                order.setdefault(c.output[0], j)
    return order


def _as_role(p: QuantTensor, role: str) -> QuantTensor:
    """A QDQ activation ``p`` as the node beside its Q/DQ sees it: its ``role`` ("input" or "output");
    weights and biases keep theirs."""
    return replace(p, role=role) if p.role == "activation" else p


def _seen_from(node: onnx.NodeProto, p: QuantTensor) -> QuantTensor:
    """``p`` with the role it plays for ``node``: a QOperator output (role "output", as read at its
    producer) is an "input" of the node reading it, and the other way round; an "activation" (a
    QLinearConv's x) is the node's "input" or "output", as a QDQ file's are; other roles as read."""
    if p.role in ("output", "activation") and p.tensor in node.input and p.tensor not in node.output:
        return replace(p, role="input")
    if p.role in ("input", "activation") and p.tensor in node.output and p.tensor not in node.input:
        return replace(p, role="output")
    return p
