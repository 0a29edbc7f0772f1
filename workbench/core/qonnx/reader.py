"""Reading QONNX: the quantization nodes, their numpy semantics, and the layout of their scales.

QONNX (Pappalardo et al., "QONNX: Representing Arbitrary-Precision Quantized Neural Networks",
2022; operator docs in the ``qonnx`` package, ``docs/qonnx-custom-ops``) keeps every tensor in
float and marks quantization with custom nodes in the domain ``qonnx.custom_op.general``:

* ``Quant`` / ``IntQuant`` (x, scale, zeropt, bitwidth; attributes signed, narrow, rounding_mode)::

      q = clip(round(x / scale + zeropt), qmin, qmax);  y = (q - zeropt) * scale

  with ``[qmin, qmax]`` = ``[-2^(b-1) + narrow, 2^(b-1) - 1]`` signed, ``[0, 2^b - 1 - narrow]``
  unsigned; the reference implementation clips before rounding, which is the same for integer
  bounds;
* ``BipolarQuant`` (x, scale): ``y = (x >= 0 ? 1 : -1) * scale``;
* ``FloatQuant`` (x, scale, exponent_bitwidth, mantissa_bitwidth, exponent_bias, max_val):
  round ``x / scale`` to a float with those widths (subnormals included), saturate to
  ``max_val``, multiply by ``scale``;
* ``Trunc`` (fixed-point truncation of accumulators), which QDQ cannot express.

All arithmetic here is float32 like the ``qonnx`` executor, so the integers computed for a
constant tensor equal what ``qonnx.core.onnx_exec`` produces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from workbench.core.errors import ModelError
from workbench.core.graph.index import attrs_of
from workbench.core.io.external import tensor_array
from workbench.core.model.reader import refuse_other_format
from workbench.core.model.tensor_check import check_tensors

DOMAIN = "qonnx.custom_op.general"
#: Domains qonnx reads as its general custom-op domain (Brevitas exports used "onnx.brevitas").
DOMAINS = frozenset({DOMAIN, "onnx.brevitas"})
INT_QUANT_OPS = frozenset({"Quant", "IntQuant"})
QONNX_OPS = INT_QUANT_OPS | {"BipolarQuant", "FloatQuant", "Trunc"}

_ROUNDING = {
    "ROUND": np.round, "HALF_EVEN": np.round, "CEIL": np.ceil, "FLOOR": np.floor, "DOWN": np.fix,
    "UP": lambda v: np.sign(v) * np.ceil(np.abs(v)),
    "HALF_UP": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5),
    "HALF_DOWN": lambda v: np.sign(v) * np.ceil(np.abs(v) - 0.5),
}
#: Rounding modes equal to QuantizeLinear's round half to even.
EVEN_ROUNDING = frozenset({"ROUND", "HALF_EVEN"})


def is_qonnx_node(node: onnx.NodeProto) -> bool:
    """True for a node of the QONNX general domain (or a domain-less Quant / BipolarQuant / Trunc)."""
    return node.domain in DOMAINS or (node.domain == "" and node.op_type in QONNX_OPS - {"FloatQuant"})


def int_bounds(bits: int, signed: bool, narrow: bool) -> tuple[int, int]:
    """``(qmin, qmax)`` of a QONNX Quant (see the module docstring)."""
    if signed:
        return -(2 ** (bits - 1)) + int(narrow), 2 ** (bits - 1) - 1
    return 0, 2**bits - 1 - int(narrow)


def int_quant_grid(x: np.ndarray, scale: np.ndarray, zeropt: np.ndarray, bits: int, signed: bool,
                   narrow: bool, rounding_mode: str = "ROUND") -> np.ndarray:
    """The integers ``q`` of a QONNX Quant, float32, same shape as ``x`` (broadcast with scale).

    Raises
    ------
    ValueError
        Unknown rounding mode.
    """
    f32 = np.float32
    y = np.asarray(x, f32) / np.asarray(scale, f32) + np.asarray(zeropt, f32)
    if bits == 1 and signed:
        return np.where(y >= 0, f32(1), f32(-1))
    lo, hi = int_bounds(bits, signed, narrow)
    y = np.clip(y, f32(lo), f32(hi))
    return _ROUNDING[rounding_mode.upper()](y).astype(f32)


def int_quant(x, scale, zeropt, bits, signed, narrow, rounding_mode="ROUND") -> np.ndarray:
    """Output of a QONNX Quant: ``(q - zeropt) * scale`` in float32."""
    q = int_quant_grid(x, scale, zeropt, bits, signed, narrow, rounding_mode)
    return ((q - np.asarray(zeropt, np.float32)) * np.asarray(scale, np.float32)).astype(np.float32)


def bipolar_grid(x: np.ndarray) -> np.ndarray:
    """``+1`` where ``x >= 0`` else ``-1`` (float32): BipolarQuant's grid (the sign of x, 0 -> +1)."""
    return np.where(np.asarray(x) >= 0, np.float32(1), np.float32(-1))


def float_grid(x: np.ndarray, exponent_bits: int, mantissa_bits: int, exponent_bias: int,
               max_val: float, rounding_mode: str = "ROUND") -> np.ndarray:
    """``x`` (already divided by the scale) rounded to a minifloat and saturated, float32.

    The exponent of each value picks the rounding step ``2^(e - mantissa_bits)``, never below the
    subnormal step ``2^(1 - bias - mantissa_bits)`` (Brevitas / qonnx ``float_quant``).
    """
    x = np.asarray(x, np.float32)
    eps = np.finfo(np.float32).tiny
    step = np.floor(np.log2(np.abs(x) + eps)) - mantissa_bits
    step = np.exp2(np.maximum(step, 1.0 - exponent_bias - mantissa_bits)).astype(np.float32)
    y = (step * _ROUNDING[rounding_mode.upper()](x / step)).astype(np.float32)
    max_exp = 2.0**exponent_bits - 1.0 - exponent_bias
    top = float(np.sum(2.0 ** np.arange(0, -mantissa_bits - 1.0, -1.0)) * 2.0**max_exp)
    top = min(top, float(max_val))
    return np.clip(y, np.float32(-top), np.float32(top))


@dataclass
class QonnxNode:
    """One parsed QONNX quantization node.

    ``kind``: "int" (Quant / IntQuant), "bipolar", "float", "trunc" or "other". Constant inputs
    (``scale``, ``zero_point``, ``bits``, float parameters) are numpy arrays, None when not constant.
    """

    node: onnx.NodeProto
    kind: str
    x: str
    out: str
    scale: np.ndarray | None = None
    zero_point: np.ndarray | None = None
    bits: float | None = None
    signed: bool = True
    narrow: bool = False
    rounding_mode: str = "ROUND"
    float_params: dict = field(default_factory=dict)


def _const(consts: dict[str, np.ndarray], node: onnx.NodeProto, i: int) -> np.ndarray | None:
    if len(node.input) <= i or not node.input[i]:
        return None
    return consts.get(node.input[i])


def parse_node(node: onnx.NodeProto, consts: dict[str, np.ndarray]) -> QonnxNode:
    """Read a QONNX node's constant parameters and attributes (``consts``: name -> array)."""
    a = attrs_of(node)
    out = QonnxNode(node, "other", node.input[0] if node.input else "", node.output[0] if node.output else "")
    if node.op_type in INT_QUANT_OPS:
        bits = _const(consts, node, 3)
        out.kind = "int"
        out.bits = float(bits.reshape(-1)[0]) if bits is not None and bits.size == 1 else None
        out.signed, out.narrow = bool(a.get("signed", 1)), bool(a.get("narrow", 0))
    elif node.op_type == "BipolarQuant":
        out.kind = "bipolar"
    elif node.op_type == "FloatQuant":
        out.kind = "float"
        vals = [_const(consts, node, i) for i in (2, 3, 4, 5)]
        keys = ("exponent_bits", "mantissa_bits", "exponent_bias", "max_val")
        out.float_params = {k: (float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None)
                            for k, v in zip(keys, vals, strict=True)}
        out.float_params.update({k: int(a.get(k, d)) for k, d in
                                 (("has_inf", 0), ("has_nan", 0), ("has_subnormal", 0), ("saturation", 1))})
    elif node.op_type == "Trunc":
        out.kind = "trunc"
    rm = a.get("rounding_mode", "ROUND")
    out.rounding_mode = (rm.decode() if isinstance(rm, bytes) else str(rm)).upper()
    out.scale = _const(consts, node, 1)
    if out.kind == "int":
        out.zero_point = _const(consts, node, 2)
    return out


def constants(graph: onnx.GraphProto, outer: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Initializers and Constant-node values of ``graph`` (plus ``outer``), as numpy arrays."""
    out = dict(outer or {})
    for init in graph.initializer:
        out[init.name] = tensor_array(init)  # memory-mapped if kept on disk
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value":
                    out[node.output[0]] = numpy_helper.to_array(attr.t)
    return out


@dataclass
class ScaleLayout:
    """How a broadcast scale maps onto QDQ: ``kind`` "tensor", "axis" or "block".

    ``values``: scalar ``()``, ``(shape[axis],)`` or the blocked shape (``shape`` with
    ``shape[axis]`` replaced by ``ceil(shape[axis] / block_size)``).
    """

    kind: str
    values: np.ndarray
    axis: int | None = None
    block_size: int | None = None


def _full(p: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    p = np.asarray(p)
    if p.ndim > len(shape):
        if any(d != 1 for d in p.shape[: p.ndim - len(shape)]):
            return None
        p = p.reshape(p.shape[p.ndim - len(shape):])
    try:
        return np.broadcast_to(p, shape)
    except ValueError:
        return None


def scale_layout(scale: np.ndarray, shape: tuple[int, ...]) -> ScaleLayout | None:
    """Express a scale broadcast over a tensor of ``shape`` as per-tensor, per-axis or blocked.

    Returns None if the scale does not broadcast to ``shape`` or varies along more than one
    axis in a way no single blocked axis reproduces.
    """
    scale = np.asarray(scale, np.float32)
    if scale.size == 1:
        return ScaleLayout("tensor", scale.reshape(()))
    full = _full(scale, tuple(shape))
    if full is None:
        return None
    varying = [a for a in range(full.ndim) if not np.array_equal(full, np.take(full, [0] * full.shape[a], axis=a))]
    if not varying:
        return ScaleLayout("tensor", full.reshape(-1)[:1].reshape(()))
    if len(varying) == 1:
        a = varying[0]
        return ScaleLayout("axis", np.ascontiguousarray(np.moveaxis(full, a, 0).reshape(full.shape[a], -1)[:, 0]), a)
    best = None
    for a in range(full.ndim):
        n = full.shape[a]
        diff = np.any(np.diff(np.moveaxis(full, a, 0), axis=0).reshape(n - 1, -1) != 0, axis=1) if n > 1 else []
        starts = [k + 1 for k in np.nonzero(diff)[0]]
        block = math.gcd(*starts) if starts else n
        blocked = np.take(full, np.arange(0, n, block), axis=a)
        if np.array_equal(np.take(np.repeat(blocked, block, axis=a), np.arange(n), axis=a), full):
            if best is None or block > best.block_size:
                best = ScaleLayout("block", np.ascontiguousarray(blocked), a, block)
    return best


def reduce_like(p: np.ndarray, shape: tuple[int, ...], layout: ScaleLayout) -> np.ndarray | None:
    """``p`` (a zero point broadcast over ``shape``) in ``layout``'s shape, or None if it does not fit."""
    full = _full(np.asarray(p), tuple(shape))
    if full is None:
        return None
    if layout.kind == "tensor":
        v = full.reshape(-1)[:1].reshape(())
        return v if np.all(full == v) else None
    if layout.kind == "axis":
        a = layout.axis
        v = np.moveaxis(full, a, 0).reshape(full.shape[a], -1)[:, 0]
        view = [1] * full.ndim
        view[a] = full.shape[a]
        return v if np.array_equal(np.broadcast_to(v.reshape(view), full.shape), full) else None
    a, b = layout.axis, layout.block_size
    v = np.take(full, np.arange(0, full.shape[a], b), axis=a)
    back = np.take(np.repeat(v, b, axis=a), np.arange(full.shape[a]), axis=a)
    return np.ascontiguousarray(v) if np.array_equal(back, full) else None


def read_qonnx(path: str | Path) -> onnx.ModelProto:
    """Load a (QONNX or QDQ) model file without preparing it.

    Raises
    ------
    ModelError
        The file is missing or not an ONNX model, or a stored tensor's data does not match its
        dims and data type (names the file and the tensor).
    """
    path = Path(path)
    try:
        proto = onnx.load(str(path))
    except FileNotFoundError:
        raise ModelError(f"{path}: no such file.", hint="Check the path.") from None
    except IsADirectoryError:
        raise ModelError(f"{path}: is a folder, not a model file.", hint="Pass the path of an .onnx file.") from None
    except PermissionError as exc:
        raise ModelError(f"{path}: cannot be read ({exc.strerror}).", hint="Check the file permissions.") from None
    except Exception as exc:  # noqa: BLE001 - protobuf raises several types
        if path.is_file() and path.stat().st_size < 1 << 28:
            refuse_other_format(path, path.read_bytes())  # a project, a zip archive: say what it is
        raise ModelError(f"{path}: not a readable ONNX model ({exc.__class__.__name__}).",
                         hint="Pass an .onnx file written by an ONNX exporter or by Workbench.") from None
    check_tensors(proto, path, loaded=True)  # a 4-bit weight with short raw_data, negative dims, ...
    return proto
