"""Reading the quantization parameters of an already-quantized model.

For every quantized tensor: its dtype, scale, zero point, axis and block size, recovered from

* **QDQ** (ours, onnxruntime ``quantize_static``, standard blocked / MX DequantizeLinear):
  the inputs and ``axis`` / ``block_size`` / ``output_dtype`` attributes of QuantizeLinear and
  DequantizeLinear (ONNX operator spec; axis defaults to 1 and matters only for 1-D scales);
* **QOperator**: the (tensor, scale, zero point) input triples of QLinearConv, QLinearMatMul,
  com.microsoft QGemm, QLinearAdd / Mul / Concat / Sigmoid / LeakyRelu / Softmax / pools ...; the int32
  bias of QLinearConv / QLinearConvTranspose (input B) and QGemm (input C) has no scale input: its scale
  is ``input_scale * weight_scale`` (per output channel with a per-channel weight), zero point 0 (ONNX
  operator spec, onnxruntime ``ContribOperators.md``);
* **dynamic** (onnxruntime ``quantize_dynamic``): ConvInteger / MatMulInteger weights and zero
  points; the weight scale is not an input of these ops, onnxruntime multiplies the integer
  output by ``input_scale * weight_scale``, so it is found as the constant factor of that Mul
  (falling back to the ``<weight>_scale`` initializer onnxruntime names); activation scales come
  from DynamicQuantizeLinear at run time (reported with ``scale`` None); com.microsoft
  DynamicQuantizeLSTM / DynamicQuantizeMatMul / MatMulIntegerToFloat carry their weight scales;
* **QONNX**: Quant / IntQuant / BipolarQuant / FloatQuant via :mod:`workbench.core.qonnx.reader`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import onnx

from workbench.core.graph.index import attrs_of, iter_graphs
from workbench.core.graph.quantized_ops import quantized_kind
from workbench.core.inspection.report_text import format_param_json
from workbench.core.io.external import tensor_array
from workbench.core.qonnx.reader import parse_node

log = logging.getLogger(__name__)

#: op type -> ((tensor index, scale index, zero point index, role), ...); a tensor index "out0" is output 0.
_QOP: dict[str, tuple[tuple, ...]] = {
    "QLinearConv": ((0, 1, 2, "input"), (3, 4, 5, "weight"), ("out0", 6, 7, "output")),
    "QLinearConvTranspose": ((0, 1, 2, "input"), (3, 4, 5, "weight"), ("out0", 6, 7, "output")),
    "QLinearMatMul": ((0, 1, 2, "input"), (3, 4, 5, "weight"), ("out0", 6, 7, "output")),
    "QGemm": ((0, 1, 2, "input"), (3, 4, 5, "weight"), ("out0", 7, 8, "output")),
    "QLinearAdd": ((0, 1, 2, "input"), (3, 4, 5, "input"), ("out0", 6, 7, "output")),
    "QLinearMul": ((0, 1, 2, "input"), (3, 4, 5, "input"), ("out0", 6, 7, "output")),
    "QLinearWhere": ((1, 2, 3, "input"), (4, 5, 6, "input"), ("out0", 7, 8, "output")),
}
#: single-input QLinear ops: X, X_scale, X_zero_point, Y_scale, Y_zero_point
#: op type -> (bias index, (input scale index, weight scale index)): the int32 bias, scale input_scale * weight_scale
_QBIAS: dict[str, tuple[int, tuple[int, int]]] = {
    "QLinearConv": (8, (1, 4)),
    "QLinearConvTranspose": (8, (1, 4)),
    "QGemm": (6, (1, 4)),
}
_QUNARY = ("QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", "QLinearAveragePool",
           "QLinearGlobalAveragePool", "QLinearReduceMean")
_INTEGER_OPS = ("ConvInteger", "MatMulInteger")


@dataclass
class QuantTensor:
    """Quantization parameters of one quantized tensor as found in a model.

    Attributes
    ----------
    tensor : str
        Name of the quantized tensor (integer / element-typed), or the float tensor a Q node reads.
    node : str
        The node that quantizes or consumes it (first one found; ``consumers`` lists all).
    op_type : str
    role : str
        "weight", "bias", "activation", "input", "output".
    kind : str
        "QDQ", "QOperator", "dynamic", "weight_only" or "QONNX".
    dtype : str
        Element type name (``int8``, ``uint8``, ``float8e4m3fn``, ``float4e2m1``, ``int4`` ...).
    scale : numpy.ndarray or None
        float32 (or float8e8m0 for MX) constant scale; None when computed at run time.
    zero_point : numpy.ndarray or None
        Constant zero point in the element dtype; None when absent (0) or dynamic.
    axis : int or None
        Axis of a 1-D or blocked scale (normalised to >= 0 where the rank is known); None per tensor.
    block_size : int or None
    scale_name, zero_point_name : str
        Names of the scale / zero point tensors ("" when absent).
    note : str
    """

    tensor: str
    node: str
    op_type: str
    role: str
    kind: str
    dtype: str
    scale: np.ndarray | None
    zero_point: np.ndarray | None
    axis: int | None = None
    block_size: int | None = None
    scale_name: str = ""
    zero_point_name: str = ""
    note: str = ""
    consumers: list[str] = field(default_factory=list)

    @property
    def granularity(self) -> str:
        if self.block_size:
            return "per_block"
        if self.scale is not None and self.scale.size > 1:
            return "per_channel"
        return "per_tensor"

    def to_json(self, max_values: int = 1024) -> dict:
        """JSON-safe dict; scale / zero point lists are left out (stats only) beyond ``max_values``."""
        d = {"tensor": self.tensor, "node": self.node, "op_type": self.op_type, "role": self.role,
             "kind": self.kind, "dtype": self.dtype, "granularity": self.granularity, "axis": self.axis,
             "block_size": self.block_size, "scale_name": self.scale_name,
             "zero_point_name": self.zero_point_name, "note": self.note}
        for key, arr in (("scale", self.scale), ("zero_point", self.zero_point)):
            if arr is None:
                d[key] = None
                continue
            a = np.asarray(arr).astype(np.float64)
            d[f"{key}_shape"] = list(a.shape)
            d[key] = a.tolist() if a.size <= max_values else None
            if a.size:
                d[f"{key}_min"], d[f"{key}_max"] = float(a.min()), float(a.max())
            if a.size and key == "scale":  # magnitudes: onnxruntime's symmetric MatMulNBits stores signed scales
                d["scale_abs_min"], d["scale_abs_max"] = float(np.abs(a).min()), float(np.abs(a).max())
        return d


def dtype_name(onnx_type: int) -> str:
    """``onnx.TensorProto`` element type -> lower-case name (``FLOAT8E4M3FN`` -> ``float8e4m3fn``)."""
    return onnx.TensorProto.DataType.Name(onnx_type).lower()


class _Consts:
    """Constant tensors by name (initializers and Constant nodes of every graph), converted lazily."""

    def __init__(self, proto: onnx.ModelProto):
        self.protos: dict[str, onnx.TensorProto] = {}
        self.producer: dict[str, onnx.NodeProto] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        self.types: dict[str, int] = {}
        for g in iter_graphs(proto.graph):
            for t in g.initializer:
                self.protos[t.name] = t
            for vi in list(g.input) + list(g.output) + list(g.value_info):
                if vi.type.HasField("tensor_type"):
                    self.types[vi.name] = vi.type.tensor_type.elem_type
            for n in g.node:
                for o in n.output:
                    self.producer[o] = n
                for i in n.input:
                    self.consumers.setdefault(i, []).append(n)
                if n.op_type == "Constant" and n.output:
                    for a in n.attribute:
                        if a.name == "value":
                            self.protos[n.output[0]] = a.t
        self._arrays: dict[str, np.ndarray] = {}

    def array(self, name: str) -> np.ndarray | None:
        if not name or name not in self.protos:
            return None
        if name not in self._arrays:
            self._arrays[name] = tensor_array(self.protos[name])  # memory-mapped if kept on disk
        return self._arrays[name]

    def elem_type(self, name: str) -> int:
        if name in self.protos:
            return self.protos[name].data_type
        return self.types.get(name, 0)

    def rank(self, name: str) -> int | None:
        return len(self.protos[name].dims) if name in self.protos else None


def _input(node: onnx.NodeProto, i: int) -> str:
    return node.input[i] if len(node.input) > i else ""


def _axis(axis: int | None, scale: np.ndarray | None, rank: int | None, blocked: bool) -> int | None:
    if axis is None or scale is None or (scale.ndim == 0 or scale.size == 1) and not blocked:
        return None
    return axis % rank if rank else axis


def _per_row(a: np.ndarray | None, n: int, blocks: int) -> np.ndarray | None:
    """A MatMulNBits scale or float zero point as ``[N, blocks]`` (older files store it flat)."""
    if a is None or not n or not blocks or a.size != n * blocks:
        return a
    return a.reshape(n, blocks)


def unpack_zero_points(packed: np.ndarray, bits: int, n: int, blocks: int) -> np.ndarray:
    """MatMulNBits' packed uint8 zero points as one value per block, shape ``[N, blocks]`` uint8.

    onnxruntime packs ``8 // bits`` zero points in a byte, the first in the low bits; the file holds
    ``[N, ceil(blocks * bits / 8)]`` (each row padded to whole bytes) or, in older files, the
    ``N * blocks`` values packed flat (``ContribOperators.md``, MatMulNBits). Returned unchanged
    when ``n`` or ``blocks`` is unknown (0) or the sizes do not fit either layout.
    """
    if not n or not blocks:
        return packed
    per = 8 // bits
    shifts = np.arange(per, dtype=np.uint8) * bits
    values = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    if packed.ndim == 2 and packed.shape[0] == n and packed.shape[1] * per >= blocks:
        return values.reshape(n, -1)[:, :blocks]
    flat = values.reshape(-1)
    return flat[:n * blocks].reshape(n, blocks) if flat.size >= n * blocks else packed


def _lstm_scale_note(scale: np.ndarray | None) -> str:
    """What a DynamicQuantizeLSTM weight scale's axes are (ContribOperators.md: ``[num_directions]`` or
    ``[num_directions, 4 * hidden_size]``)."""
    if scale is None or scale.ndim == 0:
        return ""
    if scale.ndim == 1:
        return "one scale per direction, axis 0 = num_directions"
    return "a scale per direction, axis 0 = num_directions, and per gate channel, axis 1 = 4 * hidden_size"


class _Reader:
    def __init__(self, proto: onnx.ModelProto):
        self.c = _Consts(proto)
        self.out: dict[str, QuantTensor] = {}

    def add(self, qt: QuantTensor) -> None:
        prev = self.out.get(qt.tensor)
        if prev is None:
            qt.consumers = [qt.node]
            self.out[qt.tensor] = qt
        elif qt.node not in prev.consumers:
            prev.consumers.append(qt.node)

    def triple(self, node, tensor: str, s: str, z: str, role: str, kind: str, axis: int | None = None,
               note: str = "") -> None:
        scale, zp = self.c.array(s), self.c.array(z)
        etype = self.c.elem_type(z) or self.c.elem_type(tensor)
        if not s:
            note = note or "scale not stored in the model"
        elif scale is None:
            note = note or f"scale {s!r} is computed at run time"
        self.add(QuantTensor(tensor, node.name, node.op_type, role, kind, dtype_name(etype) if etype else "?",
                             scale, zp, _axis(axis, scale, self.c.rank(tensor), False), None, s, z, note))

    # -- QDQ -----------------------------------------------------------------------------------
    def qdq(self, node: onnx.NodeProto) -> None:
        a = attrs_of(node)
        s, z = _input(node, 1), _input(node, 2)
        scale, zp = self.c.array(s), self.c.array(z)
        block = int(a.get("block_size", 0)) or None
        if node.op_type == "QuantizeLinear":
            tensor = node.output[0]
            etype = self.c.elem_type(z) or int(a.get("output_dtype", 0)) or onnx.TensorProto.UINT8
        else:
            tensor = node.input[0]
            etype = self.c.elem_type(tensor) or self.c.elem_type(z)
        role = ("bias" if etype == onnx.TensorProto.INT32 else "weight") if self.constant_source(node) else "activation"
        note = "" if scale is not None else f"scale {s!r} is computed at run time"
        rank = self.c.rank(node.input[0])
        self.add(QuantTensor(tensor, node.name, node.op_type, role, "QDQ", dtype_name(etype) if etype else "?",
                             scale, zp, _axis(int(a.get("axis", 1)), scale, rank, bool(block)), block, s, z, note))

    def constant_source(self, node: onnx.NodeProto) -> bool:
        """Whether a QuantizeLinear / DequantizeLinear quantizes a constant (an initializer or a Constant
        node's output): a DequantizeLinear of one, or a QuantizeLinear of a float one that onnxruntime
        quantizes at run time (its ``quantize_static`` does so for weights held in Constant nodes), and the
        DequantizeLinear after that QuantizeLinear."""
        x = _input(node, 0)
        if node.op_type == "DequantizeLinear" and x not in self.c.protos:
            prod = self.c.producer.get(x)
            x = _input(prod, 0) if prod is not None and prod.op_type == "QuantizeLinear" else ""
        return bool(x) and x in self.c.protos

    # -- QOperator ---------------------------------------------------------------------------
    def qoperator(self, node: onnx.NodeProto) -> None:
        op = node.op_type
        if op in _QUNARY:
            layout: tuple = ((0, 1, 2, "input"), ("out0", 3, 4, "output"))
        elif op == "QLinearConcat":
            n = (len(node.input) - 2) // 3
            layout = (("out0", 0, 1, "output"),) + tuple((2 + 3 * k, 3 + 3 * k, 4 + 3 * k, "input") for k in range(n))
        else:
            layout = _QOP.get(op, ())
        a = attrs_of(node)
        for t_idx, s_idx, z_idx, role in layout:
            tensor = node.output[0] if t_idx == "out0" else _input(node, t_idx)
            if not tensor:
                continue
            if role == "input" and tensor in self.c.protos:
                role = "weight"
            axis, note = None, ""
            if role == "weight":
                # the output channel: W's axis 0 of a conv, 1 of a transposed conv (C_in, C_out / group, k...)
                axis = 0 if op == "QLinearConv" else 1 if op == "QLinearConvTranspose" else \
                    (0 if op == "QGemm" and a.get("transB", 0) else -1)
                if op == "QLinearConvTranspose":
                    note = self.grouped_transpose_note(tensor, _input(node, s_idx), int(a.get("group", 1)))
            self.triple(node, tensor, _input(node, s_idx), _input(node, z_idx), role, "QOperator", axis, note)
            if role == "weight" and op in _QBIAS:  # the bias next, before the output
                self.qoperator_bias(node, *_QBIAS[op])

    def grouped_transpose_note(self, weight: str, scale_name: str, group: int) -> str:
        """The per-channel layout of a grouped QLinearConvTranspose's weight, said plainly ("" when ungrouped or
        per tensor): W is (C_in, C_out / group, k...) and its scale has C_out entries, one per output channel,
        so axis 1 holds one group's columns and W[i, j] takes scale[(i // (C_in / group)) * (C_out / group) + j]
        (onnxruntime's ContribOperators.md: the per-channel scale has C_out elements)."""
        scale, dims = self.c.array(scale_name), list(self.c.protos[weight].dims) if weight in self.c.protos else []
        if group <= 1 or scale is None or scale.size <= 1 or len(dims) < 2:
            return ""
        rows, cols = dims[0] // group, dims[1]
        if scale.size != group * cols:
            return (f"group {group}: {scale.size} scales do not match its {group} x {cols} output channels (W's axis 1 "
                    "holds one group's columns)")
        return (f"group {group}: {scale.size} scales, one per output channel; W's axis 1 holds the {cols} columns of "
                f"one group, so W[i, j] takes scale[(i // {rows}) * {cols} + j] ({dims[0]} input channels, {rows} "
                "per group)")

    def qoperator_bias(self, node: onnx.NodeProto, b_idx: int, scales: tuple[int, int]) -> None:
        """The int32 bias of a QLinearConv / QLinearConvTranspose / QGemm (none when the node has none): scale
        ``input_scale * weight_scale`` (float32; times QGemm's ``alpha``; 1-D with a per-channel weight scale, on
        the bias's last axis: 0 for a 1-D bias, 1 for QGemm's (1, N) C), zero point 0."""
        bias = _input(node, b_idx)
        if not bias:
            return
        x_name, w_name = (_input(node, i) for i in scales)
        x_scale, w_scale = self.c.array(x_name), self.c.array(w_name)
        etype = self.c.elem_type(bias)
        if x_scale is None or w_scale is None:
            scale, note = None, f"scale {x_name!r} x {w_name!r} is computed at run time"
        else:
            scale = (np.asarray(x_scale, np.float32) * np.asarray(w_scale, np.float32)).astype(np.float32)
            note = f"scale = input scale {x_name} * weight scale {w_name}, not stored in the file"
            alpha = float(attrs_of(node).get("alpha", 1.0)) if node.op_type == "QGemm" else 1.0
            if alpha != 1.0:  # QGemm computes alpha * (A B + C) in the integers: C's step carries alpha
                scale = (np.float32(alpha) * scale).astype(np.float32)
                note = f"scale = alpha {alpha:g} * input scale {x_name} * weight scale {w_name}, not stored in the file"
        zp = None if scale is None else np.zeros(scale.shape, np.int32)
        # the output channel is the bias's last axis: B of a conv is 1-D, QGemm's C may be (N,), (1, N) or (M, N)
        axis = max((self.c.rank(bias) or 1) - 1, 0) if scale is not None and scale.size > 1 else None
        self.add(QuantTensor(bias, node.name, node.op_type, "bias", "QOperator", dtype_name(etype) if etype else "?",
                             scale, zp, axis, None, "", "", note))

    # -- dynamic -----------------------------------------------------------------------------
    def dynamic(self, node: onnx.NodeProto) -> None:
        op = node.op_type
        if op == "DynamicQuantizeLinear":
            self.add(QuantTensor(node.output[0], node.name, op, "activation", "dynamic", "uint8", None, None,
                                 scale_name=node.output[1], zero_point_name=node.output[2],
                                 note="scale and zero point computed at run time (DynamicQuantizeLinear)"))
        elif op in _INTEGER_OPS:
            self._integer_op(node)
        elif op == "DynamicQuantizeMatMul":
            self.triple(node, _input(node, 1), _input(node, 2), _input(node, 3), "weight", "dynamic", -1)
        elif op == "MatMulIntegerToFloat":
            self.triple(node, _input(node, 0), _input(node, 2), _input(node, 4), "input", "dynamic")
            self.triple(node, _input(node, 1), _input(node, 3), _input(node, 5), "weight", "dynamic", -1)
        elif op == "DynamicQuantizeLSTM":  # W, R with per-direction (or per-direction-channel) scales
            for w, s, z in ((1, 8, 9), (2, 10, 11)):
                self.triple(node, _input(node, w), _input(node, s), _input(node, z), "weight", "dynamic", 0,
                            note=_lstm_scale_note(self.c.array(_input(node, s))))

    def _integer_op(self, node: onnx.NodeProto) -> None:
        x, w = _input(node, 0), _input(node, 1)
        xz, wz = _input(node, 2), _input(node, 3)
        x_scale = self._dynamic_scale_name(x)
        self.triple(node, x, x_scale, xz, "input", "dynamic",
                    note="scale and zero point computed at run time (DynamicQuantizeLinear)"
                    if self.c.array(xz) is None else "")
        ws = self._weight_scale(node, x_scale, w)
        axis = 0 if node.op_type == "ConvInteger" else -1
        self.triple(node, w, ws, wz, "weight", "dynamic", axis,
                    note="" if ws else "weight scale not found (no constant factor on the output)")

    def _dynamic_scale_name(self, x: str) -> str:
        prod = self.c.producer.get(x)
        if prod is not None and prod.op_type == "DynamicQuantizeLinear" and len(prod.output) > 1:
            return prod.output[1]
        return ""

    def _weight_scale(self, node: onnx.NodeProto, x_scale: str, w: str) -> str:
        """The constant factor ``weight_scale`` of the Mul that rescales the integer output."""
        frontier, seen = [node.output[0]], set()
        for _ in range(6):  # ConvInteger -> (Add bias) -> Cast -> Mul: a few steps at most
            nxt = []
            for t in frontier:
                for c in self.c.consumers.get(t, []):
                    if c.name in seen:
                        continue
                    seen.add(c.name)
                    if c.op_type == "Mul":
                        found = self._scale_factor(c, t, x_scale)
                        if found:
                            return found
                    elif c.op_type in ("Add", "Cast", "Reshape"):
                        nxt.extend(c.output)
            frontier = nxt
        guess = w[: -len("_quantized")] + "_scale" if w.endswith("_quantized") else ""
        return guess if self.c.array(guess) is not None else ""

    def _scale_factor(self, mul: onnx.NodeProto, t: str, x_scale: str) -> str:
        other = [i for i in mul.input if i != t]
        if not other:
            return ""
        prod = self.c.producer.get(other[0])
        if prod is not None and prod.op_type == "Mul" and x_scale in prod.input:
            const = [i for i in prod.input if i != x_scale and self.c.array(i) is not None]
            return const[0] if const else ""
        return ""

    # -- weight-only / QONNX ----------------------------------------------------------------------
    def weight_only(self, node: onnx.NodeProto) -> None:
        if node.op_type != "MatMulNBits":
            return
        a = attrs_of(node)
        bits, block = int(a.get("bits", 4)), int(a.get("block_size", 0)) or None
        n, k = int(a.get("N", 0)), int(a.get("K", 0))
        blocks = -(-k // block) if block and k else 0
        scale = _per_row(self.c.array(_input(node, 2)), n, blocks)
        zp_name = _input(node, 3)
        zp = self.c.array(zp_name)
        if zp is not None and zp.dtype == np.uint8 and bits < 8:
            zp = unpack_zero_points(zp, bits, n, blocks)
        else:
            zp = _per_row(zp, n, blocks)
        self.add(QuantTensor(_input(node, 1), node.name, node.op_type, "weight", "weight_only",
                             f"uint{bits}", scale, zp, 1, block, _input(node, 2), zp_name,
                             f"weight packed [N, K/block, block*{bits}/8]; scale and zero_point per [N, K/block], "
                             f"zero_point unpacked, {2 ** (bits - 1)} when absent"))

    def qonnx(self, node: onnx.NodeProto) -> None:
        consts = {n: self.c.array(n) for n in node.input if self.c.array(n) is not None}
        q = parse_node(node, consts)
        if q.kind == "int" and q.bits is not None:
            dtype = f"{'int' if q.signed else 'uint'}{int(q.bits)}"
        elif q.kind == "float":
            fp = q.float_params
            dtype = f"float e{fp.get('exponent_bits')}m{fp.get('mantissa_bits')}"
        else:
            dtype = q.kind
        role = ("bias" if dtype == "int32" else "weight") if q.x in self.c.protos else "activation"  # as for QDQ
        scale = None if q.scale is None else np.asarray(q.scale, np.float32)
        big = [i for i, d in enumerate(scale.shape) if d > 1] if scale is not None else []
        axis = big[0] if len(big) == 1 else None  # QONNX broadcasts: a (C, 1, ...) scale is per channel
        self.add(QuantTensor(q.x, node.name, node.op_type, role, "QONNX", dtype, scale, q.zero_point, axis,
                             scale_name=_input(node, 1), zero_point_name=_input(node, 2) if q.kind == "int" else "",
                             note="" if scale is not None else "scale is not a constant"))


def read_quant_params(proto: onnx.ModelProto) -> list[QuantTensor]:
    """Quantization parameters of every quantized tensor of ``proto`` (subgraphs included).

    Parameters
    ----------
    proto : onnx.ModelProto
        Any model (not modified); a float model gives an empty list.

    Returns
    -------
    list of QuantTensor
        One entry per quantized tensor, in graph order; a tensor read by several quantized
        nodes appears once with all of them in ``consumers``.
    """
    r = _Reader(proto)
    for g in iter_graphs(proto.graph):
        for node in g.node:
            kind = quantized_kind(node.op_type, node.domain)
            if kind == "QDQ":
                r.qdq(node)
            elif kind == "QOperator":
                r.qoperator(node)
            elif kind == "dynamic":
                r.dynamic(node)
            elif kind == "weight_only":
                r.weight_only(node)
            elif kind == "QONNX":
                r.qonnx(node)
    return list(r.out.values())


def params_by_node(params: list[QuantTensor]) -> dict[str, list[QuantTensor]]:
    """Node name -> the parameters of the quantized tensors it reads or writes."""
    out: dict[str, list[QuantTensor]] = {}
    for p in params:
        for n in p.consumers or [p.node]:
            out.setdefault(n, []).append(p)
    return out


def format_param(p: QuantTensor) -> str:
    """One line of text for a :class:`QuantTensor`."""
    return format_param_json(p.to_json(max_values=8))
