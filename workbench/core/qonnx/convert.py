"""QDQ <-> QONNX conversion with a pre-flight report of what cannot be converted.

QDQ -> QONNX: a ``QuantizeLinear -> DequantizeLinear`` pair on a float tensor becomes one
``Quant`` (``FloatQuant`` for float8, ``BipolarQuant`` when a hint says so); a
``DequantizeLinear`` of a constant integer tensor becomes ``Quant`` of the dequantized float
initializer. Per-axis scales are reshaped to broadcast (``[C, 1, 1, 1]`` for axis 0 of a 4-D
weight); blocked scales are expanded to the weight's shape. Integer kernels (QLinearConv,
MatMulInteger, DynamicQuantizeLinear ...) have no QONNX form.

QONNX -> QDQ: ``Quant`` on a constant becomes an integer initializer (the smallest QDQ storage
that holds the bit width: a 3-bit weight is exact in int8) plus ``DequantizeLinear``; ``Quant``
on an activation becomes ``QuantizeLinear -> DequantizeLinear`` only where QuantizeLinear clamps
the same way (4, 8 or 16 bits, not narrow, round half to even, integer zero point).

Both directions keep scales, zero points and integers bit for bit, so a QDQ model converted to
QONNX and back gives the same outputs in onnxruntime.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from workbench.core.errors import ExportError, ModelError, checker_line
from workbench.core.formats.numerics import dequantize, expand_param
from workbench.core.formats.qparams import QParams
from workbench.core.formats.qtypes import QTYPES, QType, get_qtype, qtype_of_onnx
from workbench.core.graph.index import NameAllocator, all_names, attrs_of, elem_types, iter_graphs, subgraphs
from workbench.core.graph.prune import drop_unused_initializers
from workbench.core.graph.quantized_ops import quantized_kind
from workbench.core.io.atomic import protect_input
from workbench.core.io.save import save_model
from workbench.core.model.reader import read_model_file
from workbench.core.qonnx.reader import (
    DOMAINS,
    EVEN_ROUNDING,
    bipolar_grid,
    constants,
    float_grid,
    int_quant_grid,
    is_qonnx_node,
    parse_node,
    read_qonnx,
    reduce_like,
    scale_layout,
)
from workbench.core.qonnx.shapes import resolve_input_shapes
from workbench.core.qonnx.writer import FLOAT_FORMATS, QonnxBuilder, with_static_shapes
from workbench.core.wording import count
from workbench.core.writers import common as C

log = logging.getLogger(__name__)

#: quantized operators the converter cannot turn into QDQ / QONNX pairs (integer kernels)
_INTEGER_KINDS = ("QOperator", "dynamic", "weight_only")

TARGETS = ("qonnx", "qdq")


@dataclass
class _Plan:
    """Per-graph rewrite: node name -> replacement nodes, plus the reasons nodes stay."""

    replace: dict[int, list[onnx.NodeProto]] = field(default_factory=dict)
    drop: set[int] = field(default_factory=set)
    reasons: list[tuple[str, str]] = field(default_factory=list)
    converted_outputs: set[str] = field(default_factory=set)
    opset: int = 0


def _shapes(proto: onnx.ModelProto) -> dict[str, list]:
    """Static shapes known after onnx shape inference (dims as int or None)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=False)
    except Exception:  # noqa: BLE001 - custom ops or broken models: use what is declared
        inferred = proto
    out = {}
    for g in iter_graphs(inferred.graph):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
                out[vi.name] = [d.dim_value if d.HasField("dim_value") else None
                                for d in vi.type.tensor_type.shape.dim]
    return out


# -- QDQ -> QONNX ------------------------------------------------------------------------------------


class _ToQonnx:
    def __init__(self, proto: onnx.ModelProto, hints: dict[str, str]):
        self.proto, self.hints = proto, hints
        self.builder = QonnxBuilder(NameAllocator(all_names(proto)))
        self.shapes = _shapes(proto)

    def analyse(self, graph: onnx.GraphProto, consts: dict[str, np.ndarray]) -> _Plan:
        plan = _Plan()
        consts = constants(graph, consts)
        types = elem_types(graph)
        producer = {o: n for n in graph.node for o in n.output}
        consumers: dict[str, list[onnx.NodeProto]] = {}
        for n in graph.node:
            for i in n.input:
                consumers.setdefault(i, []).append(n)
        outputs = {o.name for o in graph.output}
        index = {id(n): k for k, n in enumerate(graph.node)}
        self.inner_reads = _read_in_subgraphs(graph)
        for k, n in enumerate(graph.node):
            if n.op_type == "DequantizeLinear" and n.domain in ("", "ai.onnx"):
                self._dq(n, k, graph, consts, types, producer, consumers, outputs, index, plan)
            elif n.op_type == "QuantizeLinear" and n.domain in ("", "ai.onnx"):
                bad = [c.op_type for c in consumers.get(n.output[0], []) if c.op_type != "DequantizeLinear"]
                inner = n.output[0] in self.inner_reads
                if bad or n.output[0] in outputs or inner:
                    what = (f"feeds {', '.join(sorted(set(bad)))}" if bad else "is a graph output" if not inner
                            else "is read inside an If / Loop body")
                    plan.reasons.append((n.name, f"its integer output {n.output[0]!r} {what}; QONNX has no "
                                         "integer tensors."))
            elif quantized_kind(n.op_type, n.domain) in _INTEGER_KINDS or n.domain == "com.microsoft" and n.op_type.startswith("Q"):
                plan.reasons.append((n.name, f"integer kernel {n.op_type} has no QONNX form; convert the "
                                     "QDQ model instead (before onnxruntime fuses it)."))
        return plan

    def _dq(self, n, k, graph, consts, types, producer, consumers, outputs, index, plan: _Plan) -> None:
        x, a = n.input[0], attrs_of(n)
        if n.input[1] not in consts or (len(n.input) > 2 and n.input[2] and n.input[2] not in consts):
            plan.reasons.append((n.name, "scale or zero point is not a constant."))
            return
        q_node = producer.get(x)
        if consts[n.input[1]].dtype != np.float32:  # float16 / bfloat16 / double models
            where = q_node if q_node is not None and q_node.op_type == "QuantizeLinear" else n
            plan.reasons.append((where.name, f"it computes in {consts[n.input[1]].dtype} (scale {n.input[1]!r}); "
                                 "QONNX quantizers compute in float32: convert the model to fp32 first."))
            return
        scale = consts[n.input[1]].astype(np.float32)
        if x in consts:
            etype = types.get(x)
        elif q_node is not None and q_node.op_type == "QuantizeLinear":
            etype = self._q_type(q_node, consts)
        else:
            src = (f"produced by {q_node.op_type}" if q_node is not None else "that is a graph input"
                   if x in {i.name for i in graph.input} else "of the enclosing graph (this is an If / Loop body)")
            plan.reasons.append((n.name, f"its input {x!r} is an integer tensor {src}; QONNX has no "
                                 "integer tensors."))
            return
        qt = qtype_of_onnx(etype) if etype else None
        if qt is None:
            plan.reasons.append((n.name, f"element type {onnx.TensorProto.DataType.Name(etype or 0)} has no "
                                 "QONNX quantizer (supported: int/uint 4, 8, 16, int32, float8 e4m3fn/e5m2)."))
            return
        hint = self.hints.get(n.output[0])
        if hint and get_qtype(hint).storage == qt.storage and get_qtype(hint).onnx_type == qt.onnx_type:
            qt = get_qtype(hint)
        zp = consts[n.input[2]] if len(n.input) > 2 and n.input[2] else np.zeros(scale.shape, qt.storage)
        if (qt.is_float or qt.name == "bipolar") and np.any(np.asarray(zp, np.float32) != 0):
            plan.reasons.append((n.name, f"non-zero zero point on {qt.name}: "
                                 f"{'FloatQuant' if qt.is_float else 'BipolarQuant'} has none."))
            return
        # a [1] scale without an axis is per-tensor, as onnxruntime reads it (quantize_static writes its
        # bias scales so); with an axis it is the per-axis scale of a tensor of one channel
        per_axis = scale.size > 1 or "axis" in a or a.get("block_size")
        axis = a.get("axis", 1) if scale.ndim and per_axis else None
        qp = QParams(scale, np.asarray(zp), qt.name, axis, a.get("block_size") or None)
        if x in consts:
            self._const(n, k, consts[x], qp, plan)
        else:
            self._pair(n, k, q_node, qp, consts, consumers, index, plan)

    @staticmethod
    def _q_type(q: onnx.NodeProto, consts) -> int:
        """Element type of a QuantizeLinear output: its zero point's, else output_dtype, else uint8."""
        if len(q.input) > 2 and q.input[2] in consts:
            dt = consts[q.input[2]].dtype
            return next((t.onnx_type for t in QTYPES.values() if t.storage == dt and not t.qonnx_only), 0)
        return int(attrs_of(q).get("output_dtype", 0)) or onnx.TensorProto.UINT8

    def _broadcast(self, p: np.ndarray, qp: QParams, shape: tuple[int, ...] | None) -> np.ndarray | None:
        p = np.asarray(p, np.float32)
        if p.ndim == 0 or qp.axis is None:
            return p.reshape(())
        if shape is None:
            return None
        axis = qp.axis % len(shape)
        if qp.block_size:
            return expand_param(p, tuple(shape), axis, qp.block_size)
        return p.reshape([p.size] + [1] * (len(shape) - 1 - axis))

    def _const(self, n, k, q: np.ndarray, qp: QParams, plan: _Plan) -> None:
        qt = qp.qt
        if qt.name == "bipolar":
            xf = (bipolar_grid(q) * expand_param(qp.scale, q.shape, qp.axis, qp.block_size)).astype(np.float32)
        else:
            xf = dequantize(np.asarray(q).astype(qt.storage), qp)
        s = self._broadcast(qp.scale, qp, q.shape)
        z = self._broadcast(np.asarray(qp.zero_point, np.float32), qp, q.shape)
        x_name = self.builder.data(f"{n.input[0].removesuffix('_quantized')}", xf)
        plan.replace[k] = [self.builder.quant(x_name, n.output[0], s, z, qt, n.output[0])]
        plan.converted_outputs.add(n.output[0])

    def _pair(self, n, k, q_node, qp: QParams, consts, consumers, index, plan: _Plan) -> None:
        qt = qp.qt
        if q_node.input[1] not in consts or not np.array_equal(consts[q_node.input[1]], qp.scale):
            plan.reasons.append((n.name, f"its QuantizeLinear {q_node.name!r} uses another scale."))
            return
        if len(q_node.input) > 2 and q_node.input[2] and not np.array_equal(consts.get(q_node.input[2]), qp.zero_point):
            plan.reasons.append((n.name, f"its QuantizeLinear {q_node.name!r} uses another zero point."))
            return
        if qt.is_float and int(attrs_of(q_node).get("saturate", 1)) == 0:
            plan.reasons.append((q_node.name, "float8 QuantizeLinear with saturate=0 (overflow to NaN/Inf) "
                                 "is not converted; FloatQuant here saturates."))
            return
        if any(c.op_type != "DequantizeLinear" for c in consumers.get(q_node.output[0], [])) \
                or q_node.output[0] in self.inner_reads:
            return  # reported on the QuantizeLinear
        shape = self.shapes.get(q_node.input[0])
        if qp.axis is not None and np.ndim(qp.scale) and (shape is None or (qp.block_size and None in shape)):
            plan.reasons.append((n.name, f"per-axis / per-block activation {q_node.input[0]!r} needs a known "
                                 "rank (and static shape for blocks); run shape inference first."))
            return
        s = self._broadcast(qp.scale, qp, tuple(shape) if shape else None)
        z = self._broadcast(np.asarray(qp.zero_point, np.float32), qp, tuple(shape) if shape else None)
        plan.replace[k] = [self.builder.quant(q_node.input[0], n.output[0], s, z, qt, q_node.input[0])]
        plan.drop.add(index[id(q_node)])
        plan.converted_outputs.add(n.output[0])


def _read_in_subgraphs(graph: onnx.GraphProto) -> set[str]:
    """Tensor names read by the nodes of ``graph``'s subgraphs, at any depth (outer-scope reads included)."""
    names: set[str] = set()
    for n in graph.node:
        for sub in subgraphs(n):
            for g in iter_graphs(sub):
                for m in g.node:
                    names.update(i for i in m.input if i)
    return names


def _apply(graph: onnx.GraphProto, plan: _Plan) -> None:
    new: list[onnx.NodeProto] = []
    for k, n in enumerate(graph.node):
        if k in plan.drop:
            continue
        new.extend(plan.replace.get(k, [n]))
    del graph.node[:]
    graph.node.extend(new)


def _walk(graph: onnx.GraphProto, consts: dict[str, np.ndarray], analyse) -> list[tuple[onnx.GraphProto, _Plan]]:
    """Analyse ``graph`` and its subgraphs (outer constants visible inside)."""
    out = [(graph, analyse(graph, consts))]
    inner = constants(graph, consts)
    for n in graph.node:
        for sub in subgraphs(n):
            out += _walk(sub, inner, analyse)
    return out


def _raise_or_log(reasons: list[tuple[str, str]], partial: bool, target: str) -> None:
    if not reasons:
        return
    lines = "; ".join(f"{node}: {why}" for node, why in reasons[:5])
    if not partial:
        more = f" (+{len(reasons) - 5} more)" if len(reasons) > 5 else ""
        raise ExportError(f"{count(len(reasons), 'node')} cannot be converted to {target}: {lines}{more}",
                          hint="See `workbench-cli convert --to " + target + "` for the full report, or "
                               "convert partially (partial=True / --partial) to leave them unchanged.")
    log.warning("left %s unconverted: %s", count(len(reasons), "node"), lines)


def qdq_to_qonnx(proto: onnx.ModelProto, *, dtype_hints: dict[str, str] | None = None,
                 partial: bool = False) -> onnx.ModelProto:
    """QONNX copy of a QDQ model (``proto`` is not modified).

    Parameters
    ----------
    dtype_hints : dict of str to str, optional
        DequantizeLinear output -> dtype name when the QDQ storage is wider than the real grid
        (``"int3"`` held in int8, ``"bipolar"``); the storage type must match.
    partial : bool
        Leave unconvertible nodes as they are instead of raising.

    Raises
    ------
    ExportError
        Some node cannot be converted (and ``partial`` is False); the message lists them.
    """
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    conv = _ToQonnx(out, dtype_hints or {})
    plans = _walk(out.graph, {}, conv.analyse)
    _raise_or_log([r for _, p in plans for r in p.reasons], partial, "qonnx")
    for g, p in plans:
        _apply(g, p)
    conv.builder.finish(out)
    drop_unused_initializers(out)
    return out


# -- QONNX -> QDQ ------------------------------------------------------------------------------------


def _storage(bits: int, signed: bool, opset: int, const: bool) -> tuple[QType | None, int]:
    """Smallest QDQ type for a QONNX bit width, and the opset it needs (None: no type)."""
    if bits <= 4 and (opset >= 21 or not const):
        return get_qtype("int4" if signed else "uint4"), 21
    if bits <= 8:
        return get_qtype("int8" if signed else "uint8"), 10
    if bits <= 16:
        return get_qtype("int16" if signed else "uint16"), 21
    if bits <= 32 and signed and const:
        return get_qtype("int32"), 10
    return None, 0


def _float_type(p) -> QType | None:
    f = p.float_params
    for name, (e, m, b, top) in FLOAT_FORMATS.items():
        if (f.get("exponent_bits"), f.get("mantissa_bits"), f.get("exponent_bias")) == (e, m, b) \
                and f.get("max_val") == top:
            return get_qtype(name)
    return None


class _ToQdq:
    def __init__(self, proto: onnx.ModelProto):
        self.proto = proto
        self.alloc = NameAllocator(all_names(proto))
        self.opset = C.default_opset(proto)
        self.shapes = _shapes(proto)
        self.inits: list[onnx.TensorProto] = []

    def analyse(self, graph: onnx.GraphProto, consts: dict[str, np.ndarray]) -> _Plan:
        plan = _Plan()
        consts = constants(graph, consts)
        for k, n in enumerate(graph.node):
            if not is_qonnx_node(n):
                continue
            why = self._node(n, k, parse_node(n, consts), consts, plan)
            if why:
                plan.reasons.append((n.name or n.output[0], why))
        return plan

    def _node(self, n, k, p, consts, plan: _Plan) -> str | None:
        if p.kind in ("trunc", "other"):
            return f"{n.op_type} has no QDQ form (QuantizeLinear/DequantizeLinear only scale and round)."
        if p.scale is None:
            return "scale is not a constant."
        if np.any(~np.isfinite(p.scale)) or np.any(p.scale <= 0):
            return "scale is not finite and positive."
        if p.rounding_mode not in EVEN_ROUNDING:
            return f"rounding_mode {p.rounding_mode}: QuantizeLinear rounds half to even only."
        const = p.x in consts
        x = consts.get(p.x)
        shape = tuple(x.shape) if const else self.shapes.get(p.x)
        if p.kind == "bipolar":
            if not const:
                return "BipolarQuant on an activation: QuantizeLinear cannot take the sign (0 -> +1)."
            return self._emit(n, k, p, get_qtype("int8"), bipolar_grid(x), None, shape, 10, plan)
        if p.kind == "float":
            qt = _float_type(p)
            if qt is None or not int(p.float_params.get("saturation", 1)):
                f = p.float_params
                return (f"FloatQuant format (exponent {f.get('exponent_bits')}, mantissa {f.get('mantissa_bits')}, "
                        f"bias {f.get('exponent_bias')}, max {f.get('max_val')}) is not float8e4m3fn / "
                        "float8e5m2 (saturating).")
            q = None
            if const:
                e, m, b, top = FLOAT_FORMATS[qt.name]
                q = float_grid(np.asarray(x, np.float32) / p.scale, e, m, b, top)
            return self._emit(n, k, p, qt, q, np.float32(0), shape, 19, plan)
        if p.bits is None or p.bits != int(p.bits) or p.bits < 1:
            return "bit width is not a constant integer."
        if p.zero_point is None or np.any(p.zero_point != np.round(p.zero_point)):
            return "zero point is not a constant integer."
        bits = int(p.bits)
        qt, need = _storage(bits, p.signed, self.opset, const)
        if not const:
            if bits not in (4, 8, 16) or p.narrow:
                return (f"bit width {bits}{' narrow' if p.narrow else ''} on an activation: QuantizeLinear "
                        "saturates only to the full int/uint 4, 8 or 16-bit range.")
        elif qt is None:
            return f"bit width {bits} ({'signed' if p.signed else 'unsigned'}) has no QDQ storage type."
        if bits == 1 and p.signed:
            qt = get_qtype("int8")
        q = None
        if const:
            q = int_quant_grid(x, p.scale, p.zero_point, bits, p.signed, p.narrow, p.rounding_mode)
        return self._emit(n, k, p, qt, q, p.zero_point, shape, need, plan)

    def _emit(self, n, k, p, qt: QType, q, zp, shape, need: int, plan: _Plan) -> str | None:
        """Check the layout of scale / zero point and plan the replacement (q: integers of a constant)."""
        if np.asarray(p.scale).size == 1:
            shape = ()
        elif shape is None or None in shape:
            return f"the shape of {p.x!r} is unknown, so the scale layout cannot be read."
        layout = scale_layout(p.scale, tuple(shape))
        if layout is None:
            return "scale is neither per-tensor, per-axis nor per-block along one axis."
        if q is None and layout.kind == "block":
            return "per-block scale on an activation: QuantizeLinear blocks are for constants; use per-tensor."
        zero = reduce_like(np.zeros(()) if zp is None else zp, tuple(shape), layout)
        if zero is None:
            return "zero point does not follow the scale's layout."
        if not qt.is_float and (np.any(zero < qt.qmin) or np.any(zero > qt.qmax)):
            return f"zero point outside the {qt.name} range."
        plan.opset = max(plan.opset, need, 13 if layout.kind == "axis" else 21 if layout.kind == "block" else 10)
        plan.replace[k] = self._nodes(n, p, qt, q, layout, zero)
        plan.converted_outputs.add(n.output[0])
        return None

    def _nodes(self, n, p, qt: QType, q, layout, zero) -> list[onnx.NodeProto]:
        base = p.x
        s = self.alloc.new(f"{base}_scale")
        z = self.alloc.new(f"{base}_zero_point")
        self.inits += [C.float_initializer(s, layout.values),
                       C.quantized_initializer(z, np.asarray(zero).astype(qt.storage), qt)]
        kw = {}
        if layout.kind != "tensor":
            kw["axis"] = int(layout.axis)
            if layout.kind == "block":
                kw["block_size"] = int(layout.block_size)
        if q is not None:
            qn = self.alloc.new(f"{base}_quantized")
            self.inits.append(C.quantized_initializer(qn, np.asarray(q).astype(qt.storage), qt))
            return [helper.make_node("DequantizeLinear", [qn, s, z], [n.output[0]],
                                     name=self.alloc.new(f"{base}_DequantizeLinear"), **kw)]
        mid = self.alloc.new(f"{base}_quantized")
        return [helper.make_node("QuantizeLinear", [p.x, s, z], [mid], name=self.alloc.new(f"{base}_QuantizeLinear"), **kw),
                helper.make_node("DequantizeLinear", [mid, s, z], [n.output[0]],
                                 name=self.alloc.new(f"{base}_DequantizeLinear"), **kw)]


def qonnx_to_qdq(proto: onnx.ModelProto, *, partial: bool = False) -> onnx.ModelProto:
    """QDQ copy of a QONNX model (``proto`` is not modified); opset raised where the types need it.

    Raises
    ------
    ExportError
        Some QONNX node has no QDQ form (and ``partial`` is False), or the opset upgrade fails.
    """
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    conv = _ToQdq(out)

    plans = _walk(out.graph, {}, conv.analyse)
    _raise_or_log([r for _, p in plans for r in p.reasons], partial, "qdq")
    done: set[str] = set()
    for g, p in plans:
        _apply(g, p)
        done |= p.converted_outputs
    out.graph.initializer.extend(conv.inits)
    keep = [a for a in out.graph.quantization_annotation if a.tensor_name not in done]
    del out.graph.quantization_annotation[:]
    out.graph.quantization_annotation.extend(keep)
    if not any(n.domain in DOMAINS for g in iter_graphs(out.graph) for n in g.node):
        kept = [o for o in out.opset_import if o.domain not in DOMAINS]
        del out.opset_import[:]
        out.opset_import.extend(kept)
    drop_unused_initializers(out)
    need = max([p.opset for _, p in plans] + [0])
    out = C.upgrade_opset(out, need) if need > C.default_opset(out) else out
    C.fix_ir_version(out)
    return out


# -- entry points ------------------------------------------------------------------------------------


def conversion_report(proto: onnx.ModelProto, target: str) -> list[tuple[str, str]]:
    """Pre-flight: ``(node, reason)`` for every node that cannot be converted to ``target``.

    Parameters
    ----------
    proto : onnx.ModelProto
        A QDQ model (target "qonnx") or a QONNX model (target "qdq"); not modified.
    target : str
        "qonnx" or "qdq".

    Raises
    ------
    ExportError
        Unknown target.
    """
    if target == "qonnx":
        conv = _ToQonnx(proto, {})
        return [r for _, p in _walk(proto.graph, {}, conv.analyse) for r in p.reasons]
    if target == "qdq":
        conv = _ToQdq(proto)
        return [r for _, p in _walk(proto.graph, {}, conv.analyse) for r in p.reasons]
    raise ExportError(f"Unknown conversion target {target!r}.", hint=f"Use one of: {', '.join(TARGETS)}.")


def convert(proto: onnx.ModelProto, target: str, *, partial: bool = False) -> onnx.ModelProto:
    """Convert ``proto`` to ``target`` ("qonnx" or "qdq"); see :func:`qdq_to_qonnx` / :func:`qonnx_to_qdq`."""
    if target == "qonnx":
        return qdq_to_qonnx(proto, partial=partial)
    if target == "qdq":
        return qonnx_to_qdq(proto, partial=partial)
    raise ExportError(f"Unknown conversion target {target!r}.", hint=f"Use one of: {', '.join(TARGETS)}.")


def read_convert_input(path: str | Path) -> onnx.ModelProto:
    """The model file to convert, read as written (:func:`workbench.core.qonnx.reader.read_qonnx`: no
    preparation, QONNX nodes kept).

    A file that cannot be read as a model (empty, truncated, not ONNX, no graph) is refused with the
    model loader's message (:func:`workbench.core.model.reader.read_model_file`, what ``inspect`` and
    ``quantize`` say), which names the file and what is wrong with it.

    Raises
    ------
    ModelError
        The file is missing, unreadable or not an ONNX model; a stored tensor that does not match its
        dims and data type.
    """
    try:
        proto = read_qonnx(path)
    except ModelError:
        read_model_file(Path(path))  # raises the loader's account of the file, if it has one
        raise
    if not proto.HasField("graph") or not proto.opset_import:  # an empty file parses as an empty model
        read_model_file(Path(path))
        raise ModelError(f"{path}: not an ONNX model (no graph).", hint="Pass an .onnx model file.")
    return proto


def convert_file(src: str | Path, dst: str | Path, target: str, *, partial: bool = False,
                 input_shapes: dict[str, list[int]] | None = None, static_shapes: bool = False) -> onnx.ModelProto:
    """Read ``src``, convert, check with onnx.checker and write ``dst`` atomically; returns the model.

    With ``static_shapes`` (the CLI's default) or ``input_shapes``, a QONNX result gets static input
    shapes and every tensor's shape in ``value_info`` like a QONNX export (``input_shapes``, or
    batch 1 where the batch is the only symbolic dimension; see
    :func:`workbench.core.qonnx.shapes.resolve_input_shapes`). Raises ExportError for
    ``input_shapes`` with target "qdq" or that do not fit the model's inputs.
    """
    protect_input(src)
    if input_shapes and target != "qonnx":
        raise ExportError("--input-shape applies to conversions to QONNX only.", hint="Use --to qonnx, or drop it.")
    out = convert(read_convert_input(src), target, partial=partial)
    if target == "qonnx" and (static_shapes or input_shapes):
        choice = resolve_input_shapes(out, input_shapes, source=str(src))
        if choice.shapes is not None:
            out = with_static_shapes(out, choice.shapes)
    try:
        onnx.checker.check_model(out)
    except onnx.checker.ValidationError as exc:
        raise ExportError(f"{src}: the converted model fails onnx.checker: {checker_line(str(exc))}",
                          hint="Report this as a Workbench bug with the model.", details=str(exc).strip()) from None
    save_model(out, dst)
    return out


__all__ = ["conversion_report", "convert", "convert_file", "read_convert_input", "qdq_to_qonnx", "qonnx_to_qdq", "TARGETS"]
