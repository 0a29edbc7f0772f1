"""Quantized data types: storage dtype, integer range, ONNX type and the opset each needs.

Ranges follow the ONNX QuantizeLinear specification (saturation bounds per output type); the
float8 maxima are the largest finite values of the OCP 8-bit floating point formats
(E4M3FN: 448, E5M2: 57344).
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from onnx import TensorProto

from workbench.core.errors import RecipeError
from workbench.core.formats.mx_formats import MX_FORMATS, MX_MIN_OPSET


@dataclass(frozen=True)
class QType:
    """A quantized element type.

    Attributes
    ----------
    name : str
        Recipe name, e.g. ``"int8"``.
    onnx_type : int
        ``onnx.TensorProto`` data type of the quantized tensor and of its zero point.
    storage : numpy.dtype
        numpy dtype that holds quantized values (ml_dtypes for int4/uint4/float8).
    qmin, qmax : float
        Saturation bounds of QuantizeLinear for this type.
    bits : int
        Width of one element in bits.
    is_float : bool
        True for float8 formats (zero point is always 0, scale maps ``absmax`` to ``qmax``).
    min_opset : int
        Lowest default-domain opset whose QuantizeLinear/DequantizeLinear accept this type.
    qonnx_only : bool
        True for bit widths only QONNX can express (``int2``, ``int3``, ``int5``..``int7``, the
        same ``uint``, ``bipolar``); QDQ carries their constants in 8-bit storage but cannot clamp
        activations to them.
    """

    name: str
    onnx_type: int
    storage: np.dtype
    qmin: float
    qmax: float
    bits: int
    is_float: bool
    min_opset: int
    qonnx_only: bool = False

    @property
    def signed(self) -> bool:
        return self.qmin < 0


def _int(name: str, onnx_type: int, storage, bits: int, signed: bool, min_opset: int) -> QType:
    qmin = -(2 ** (bits - 1)) if signed else 0
    qmax = 2 ** (bits - 1) - 1 if signed else 2**bits - 1
    return QType(name, onnx_type, np.dtype(storage), float(qmin), float(qmax), bits, False, min_opset)


QTYPES: dict[str, QType] = {
    q.name: q
    for q in (
        _int("int8", TensorProto.INT8, np.int8, 8, True, 10),
        _int("uint8", TensorProto.UINT8, np.uint8, 8, False, 10),
        _int("int16", TensorProto.INT16, np.int16, 16, True, 21),
        _int("uint16", TensorProto.UINT16, np.uint16, 16, False, 21),
        _int("int4", TensorProto.INT4, ml_dtypes.int4, 4, True, 21),
        _int("uint4", TensorProto.UINT4, ml_dtypes.uint4, 4, False, 21),
        _int("int32", TensorProto.INT32, np.int32, 32, True, 10),
        QType("float8e4m3fn", TensorProto.FLOAT8E4M3FN, np.dtype(ml_dtypes.float8_e4m3fn),
              -448.0, 448.0, 8, True, 19),
        QType("float8e5m2", TensorProto.FLOAT8E5M2, np.dtype(ml_dtypes.float8_e5m2),
              -57344.0, 57344.0, 8, True, 19),
    )
}

#: MX block formats (OCP Microscaling v1.0, see workbench.core.formats.mx_formats / workbench.core.formats.mx): the
#: element type; each block of 32 shares a power-of-two E8M0 scale. Weights only, per_block.
QTYPES.update({f.name: QType(f.name, f.onnx_type, f.storage, -f.max_normal, f.max_normal, f.bits, not f.is_int,
                             MX_MIN_OPSET) for f in MX_FORMATS.values()})
MX_DTYPES = tuple(MX_FORMATS)

#: dtypes a recipe may choose for weights and activations (int32 is only for biases).
RECIPE_DTYPES = tuple(n for n in QTYPES if n != "int32")


def _qonnx_int(bits: int, signed: bool) -> QType:
    q = _int(f"{'int' if signed else 'uint'}{bits}", TensorProto.INT8 if signed else TensorProto.UINT8,
             np.int8 if signed else np.uint8, bits, signed, 10)
    return QType(**{**q.__dict__, "qonnx_only": True})


#: QONNX-only dtypes: Quant bit widths 2, 3, 5, 6, 7 (4 is a QDQ type) and "bipolar" (BipolarQuant,
#: values -1 / +1). A recipe may use them only with ``Recipe.target == "qonnx"``; storage int8 / uint8.
QONNX_TYPES: dict[str, QType] = {
    q.name: q
    for q in [_qonnx_int(b, s) for s in (True, False) for b in (2, 3, 5, 6, 7)]
    + [QType("bipolar", TensorProto.INT8, np.dtype(np.int8), -1.0, 1.0, 1, False, 10, True)]
}
QONNX_DTYPES = tuple(QONNX_TYPES)
QTYPES.update(QONNX_TYPES)


def get_qtype(name: str) -> QType:
    """Return the :class:`QType` called ``name``.

    Raises
    ------
    RecipeError
        If ``name`` is not a known quantized type.
    """
    try:
        return QTYPES[name]
    except KeyError:
        raise RecipeError(
            f"Unknown quantized dtype {name!r}.", hint=f"Use one of: {', '.join(RECIPE_DTYPES)}."
        ) from None


def qtype_of_onnx(onnx_type: int) -> QType | None:
    """The :class:`QType` whose ONNX element type is ``onnx_type``, or None."""
    for q in QTYPES.values():
        if q.onnx_type == onnx_type:
            return q
    return None
