"""The MX block formats of the OCP Microscaling (MX) Formats Specification v1.0 (a leaf table).

Each MX format is a block of ``k = 32`` elements that share one 8-bit power-of-two scale
(E8M0, bias 127, range 2^-127 .. 2^127; spec section 5.4). The element formats and the exponent
of their largest normal number ``emax_elem`` (spec table 1 and section 5.3):

========== ======= ========= ===========================================================
name       element emax_elem largest element magnitude
========== ======= ========= ===========================================================
mxfp8e4m3  E4M3    8         448
mxfp8e5m2  E5M2    15        57344
mxfp6e2m3  E2M3    2         7.5
mxfp6e3m2  E3M2    4         28
mxfp4      E2M1    2         6
mxint8     INT8    0         127/64 (two's complement with an implicit scale of 2^-6)
========== ======= ========= ===========================================================

ONNX has no 6-bit float type, so MXFP6 elements are stored in a FLOAT8E4M3FN container: every
E2M3 and E3M2 value is exactly representable in E4M3FN (3 >= mantissa bits, and the E4M3FN
exponent range 2^-9 .. 2^8 covers both), so the stored model dequantizes to the same values.
MXINT8 is stored as INT8 with the implicit 2^-6 folded into the E8M0 scale. The symmetric
int8 range [-127, 127] follows the reference implementation (microsoft/microxcaling), which
clamps to +-127/64.

This module imports nothing from Workbench so :mod:`workbench.core.formats.qtypes` can register it.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from onnx import TensorProto

BLOCK_SIZE = 32
#: ONNX opset whose DequantizeLinear accepts float8e8m0 scales (and float4e2m1 elements, 23).
MX_MIN_OPSET = 24


@dataclass(frozen=True)
class MxFormat:
    """One MX format.

    Attributes
    ----------
    name : str
        Recipe dtype name.
    element : str
        Element format name in the spec (``"E4M3"``, ``"INT8"``, ...).
    storage : numpy.dtype
        ml_dtypes element dtype used for simulation (int8 for MXINT8).
    onnx_type : int
        ``TensorProto`` type the exported weight is stored in (a container for FP6).
    container : numpy.dtype
        numpy dtype matching ``onnx_type``.
    emax : int
        ``emax_elem``: exponent of the largest normal element (spec section 6.3).
    max_normal : float
        Largest element magnitude (saturation bound, in element units).
    bits : int
        Element width in bits (the shared scale adds 8 / 32 bits per element).
    implicit_exp : int
        Power of two the integer element is multiplied by (-6 for MXINT8, else 0).
    """

    name: str
    element: str
    storage: np.dtype
    onnx_type: int
    container: np.dtype
    emax: int
    max_normal: float
    bits: int
    implicit_exp: int = 0

    @property
    def is_int(self) -> bool:
        return self.element == "INT8"


def _fp(name: str, element: str, dt, onnx_type: int, container, bits: int) -> MxFormat:
    fi = ml_dtypes.finfo(dt)
    max_normal = float(fi.max)
    emax = int(np.floor(np.log2(max_normal)))
    return MxFormat(name, element, np.dtype(dt), onnx_type, np.dtype(container), emax, max_normal, bits)


MX_FORMATS: dict[str, MxFormat] = {f.name: f for f in (
    _fp("mxfp8e4m3", "E4M3", ml_dtypes.float8_e4m3fn, TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn, 8),
    _fp("mxfp8e5m2", "E5M2", ml_dtypes.float8_e5m2, TensorProto.FLOAT8E5M2, ml_dtypes.float8_e5m2, 8),
    _fp("mxfp6e2m3", "E2M3", ml_dtypes.float6_e2m3fn, TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn, 6),
    _fp("mxfp6e3m2", "E3M2", ml_dtypes.float6_e3m2fn, TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn, 6),
    _fp("mxfp4", "E2M1", ml_dtypes.float4_e2m1fn, TensorProto.FLOAT4E2M1, ml_dtypes.float4_e2m1fn, 4),
    MxFormat("mxint8", "INT8", np.dtype(np.int8), TensorProto.INT8, np.dtype(np.int8), 0, 127.0, 8, -6),
)}
