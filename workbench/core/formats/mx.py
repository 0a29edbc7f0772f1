"""MX block formats (OCP Microscaling v1.0): shared exponents, qparams and numpy simulation.

For a block of ``k`` values ``V_i`` (spec section 6.3, "Conversion from vector of FP32 to MX"):

    shared_exp = floor(log2(max_i |V_i|)) - emax_elem          (clamped to the E8M0 range)
    X          = 2 ** shared_exp
    P_i        = quantize_to_element_format(V_i / X)           (round half to even, saturating)

and the value a block holds is ``X * P_i``. A block of zeros gets the smallest scale 2^-127.
MXINT8 elements carry an implicit 2^-6 (spec section 5.3.3), folded here into the scale so that
ONNX ``DequantizeLinear(int8, float8e8m0)`` gives the same value: ``scale = 2 ** (shared_exp - 6)``.

Here the scale is kept as a float32 power of two in :class:`~workbench.core.formats.numerics.QParams`
(``qtype`` = the MX dtype, ``axis`` = the reduction axis, ``block_size`` = 32), so
:func:`workbench.core.formats.numerics.quantize` / ``dequantize`` simulate MX exactly: dividing by a
power of two is exact in float32, the element cast is a saturating round-half-even cast
(ml_dtypes), and the dequantize product is exact. :func:`e8m0_bits` gives the stored scale byte.
"""

from __future__ import annotations

import numpy as np

from workbench.core.errors import RecipeError
from workbench.core.formats.mx_formats import BLOCK_SIZE, MX_FORMATS, MxFormat
from workbench.core.formats.qparams import QParams

E8M0_MIN_EXP, E8M0_MAX_EXP = -127, 127


def is_mx(dtype: str | None) -> bool:
    """True when ``dtype`` names an MX block format."""
    return dtype in MX_FORMATS


def mx_format(dtype: str) -> MxFormat:
    """The :class:`MxFormat` called ``dtype``.

    Raises
    ------
    RecipeError
        If ``dtype`` is not an MX format.
    """
    try:
        return MX_FORMATS[dtype]
    except KeyError:
        raise RecipeError(f"{dtype!r} is not an MX block format.",
                          hint=f"Use one of: {', '.join(MX_FORMATS)}.") from None


def shared_exponent(absmax: np.ndarray, dtype: str) -> np.ndarray:
    """Shared exponent ``floor(log2(absmax)) - emax_elem`` per block (OCP MX v1.0, section 6.3).

    Parameters
    ----------
    absmax : numpy.ndarray, float32, any shape
        Largest magnitude of each block (finite, >= 0).
    dtype : str
        MX dtype name.

    Returns
    -------
    numpy.ndarray, int32, same shape
        Clamped to the E8M0 range [-127, 127]; 0 blocks get -127. ``floor(log2)`` is taken from
        ``numpy.frexp`` so it is exact for every float32, subnormals included.
    """
    fmt = mx_format(dtype)
    a = np.asarray(absmax, np.float32)
    _, e = np.frexp(a)  # a = m * 2**e with m in [0.5, 1): floor(log2(a)) = e - 1
    exp = (e.astype(np.int32) - 1) - fmt.emax
    exp = np.where(a > 0, exp, E8M0_MIN_EXP)
    return np.clip(exp, E8M0_MIN_EXP, E8M0_MAX_EXP).astype(np.int32)


def qparams_from_range(rmin: np.ndarray, rmax: np.ndarray, dtype: str, *, axis: int | None = None,
                       block_size: int | None = None) -> QParams:
    """MX qparams from per-block ranges (the MX path of :func:`~workbench.core.formats.numerics.compute_qparams`).

    Parameters
    ----------
    rmin, rmax : numpy.ndarray, float32
        Per-block minimum and maximum (blocked shape, or any shape for per-tensor / per-channel
        use); only ``max(|rmin|, |rmax|)`` matters. Non-finite values raise.
    dtype : str
        MX dtype name.
    axis, block_size : int or None
        Stored in the result.

    Returns
    -------
    QParams
        ``scale`` float32 powers of two ``2 ** (shared_exp + implicit_exp)``, zero point 0.

    Raises
    ------
    RecipeError
        If the range is not finite.
    """
    fmt = mx_format(dtype)
    lo, hi = np.asarray(rmin, np.float32), np.asarray(rmax, np.float32)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise RecipeError("Cannot derive an MX shared exponent from a non-finite range.",
                          hint="Check the weights / calibration data for NaN or Inf.")
    absmax = np.maximum(np.abs(lo), np.abs(hi))
    # MXINT8 folds its implicit 2^-6 into the stored scale, which must stay inside E8M0: blocks with
    # absmax < 2^-121 (far below any weight) get 2^-127 instead of 2^(shared_exp - 6).
    exp = np.clip(shared_exponent(absmax, dtype) + fmt.implicit_exp, E8M0_MIN_EXP, E8M0_MAX_EXP)
    scale = np.ldexp(np.float32(1), exp).astype(np.float32)
    return QParams(scale, np.zeros(scale.shape, fmt.storage), dtype, axis, block_size)


def block_absmax(x: np.ndarray, axis: int, block_size: int = BLOCK_SIZE) -> np.ndarray:
    """Largest magnitude of each block of ``block_size`` along ``axis`` (the last block may be short).

    Returns
    -------
    numpy.ndarray, float32
        ``x.shape`` with ``shape[axis]`` replaced by ``ceil(shape[axis] / block_size)``.
    """
    x = np.abs(np.asarray(x, np.float32))
    axis %= x.ndim
    n = x.shape[axis]
    nb = -(-n // block_size)
    moved = np.moveaxis(x, axis, 0)
    if nb * block_size != n:  # pad with zeros: they do not change a block's absmax
        pad = np.zeros((nb * block_size - n,) + moved.shape[1:], np.float32)
        moved = np.concatenate([moved, pad], axis=0)
    blocks = moved.reshape((nb, block_size) + moved.shape[1:]).max(axis=1)
    return np.moveaxis(blocks, 0, axis)


def mx_qparams(x: np.ndarray, dtype: str, axis: int, block_size: int = BLOCK_SIZE) -> QParams:
    """MX qparams of a constant tensor: one shared scale per block of ``block_size`` along ``axis``.

    Parameters
    ----------
    x : numpy.ndarray, float32
        The tensor (e.g. a weight; ``axis`` should be its reduction axis).
    dtype : str
        MX dtype name.
    axis : int
        Block axis.
    block_size : int
        32 for spec-conformant MX.
    """
    a = block_absmax(x, axis, block_size)
    return qparams_from_range(-a, a, dtype, axis=axis % np.ndim(x), block_size=block_size)








def e8m0_bits(scale: np.ndarray) -> np.ndarray:
    """The E8M0 byte of each power-of-two scale: ``log2(scale) + 127`` (uint8, same shape).

    Raises
    ------
    RecipeError
        If a scale is not a power of two inside 2^-127 .. 2^127.
    """
    s = np.asarray(scale, np.float32)
    m, e = np.frexp(s)
    exp = e.astype(np.int32) - 1
    if np.any(m != 0.5) or np.any(exp < E8M0_MIN_EXP) or np.any(exp > E8M0_MAX_EXP):
        raise RecipeError("An MX scale is not a power of two in the E8M0 range 2^-127 .. 2^127.",
                          hint="Derive MX scales with workbench.core.formats.mx.mx_qparams.")
    return (exp + 127).astype(np.uint8)


