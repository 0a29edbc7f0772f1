"""Scale / zero_point from ranges, and quantize / dequantize in numpy for every dtype.

Affine quantization as defined by the ONNX QuantizeLinear / DequantizeLinear operators:

    q = saturate(round_half_even(x / scale) + zero_point)      (integer types)
    q = saturate_cast_fp8(x / scale)                           (float8 types, zero_point = 0)
    x' = (q - zero_point) * scale

Scale and zero point from a real range follow onnxruntime's ``compute_scale_zp`` (the range is
first widened to include 0; symmetric ranges use ``absmax``; computed in float64 and stored in
float32), so per-tensor MinMax parameters equal ``onnxruntime.quantization.quantize_static``'s.
"""

from __future__ import annotations

import numpy as np

from workbench.core.errors import RecipeError
from workbench.core.formats.error_sums import sqnr_sums
from workbench.core.formats.mx import mx_qparams, qparams_from_range
from workbench.core.formats.mx_formats import BLOCK_SIZE
from workbench.core.formats.qparams import QParams
from workbench.core.formats.qtypes import MX_DTYPES, QType, get_qtype


def qrange(qtype: str | QType, symmetric: bool = False, reduce_range: bool = False) -> tuple[float, float]:
    """Quantized range ``(qmin, qmax)`` used to derive scales.

    Follows onnxruntime's ``get_qmin_qmax_for_qType``: symmetric signed integer types drop the
    most negative value (int8 -> [-127, 127]) so that zero_point is exactly 0; ``reduce_range``
    uses 7 bits of an 8-bit type (uint8 -> [0, 127], int8 -> [-64, 64]) to avoid the u8 x s8
    saturation of VPMADDUBSW on CPUs without VNNI.
    """
    qt = get_qtype(qtype) if isinstance(qtype, str) else qtype
    if qt.is_float:
        return qt.qmin, qt.qmax
    if reduce_range:
        if qt.bits != 8:
            raise RecipeError(f"reduce_range applies to 8-bit types only, not {qt.name}.",
                              hint="Turn reduce_range off for this spec.")
        return (0.0, 127.0) if not qt.signed else (-64.0, 64.0)
    if symmetric and qt.signed:
        return -qt.qmax, qt.qmax
    return qt.qmin, qt.qmax


def compute_qparams(
    rmin: np.ndarray | float,
    rmax: np.ndarray | float,
    qtype: str,
    *,
    symmetric: bool = False,
    reduce_range: bool = False,
    power_of_two: bool = False,
    axis: int | None = None,
    block_size: int | None = None,
) -> QParams:
    """Scale and zero_point that map ``[rmin, rmax]`` onto the quantized range.

    Parameters
    ----------
    rmin, rmax : float or numpy.ndarray (float32)
        Real range, scalar per-tensor or one value per channel / block (any shape; it becomes the
        shape of ``scale``). Non-finite values raise.
    qtype : str
        Quantized dtype name.
    symmetric : bool
        Use ``[-absmax, absmax]``; the zero point is the middle of the range (0 for signed types).
    reduce_range : bool
        7-bit range for 8-bit types (see :func:`qrange`).
    power_of_two : bool
        Round each scale up to the next power of two (fixed-point hardware).
    axis, block_size : int or None
        Stored in the result; they do not change the arithmetic.

    Returns
    -------
    QParams
        ``scale`` float32 > 0 and finite; a zero range gives scale 1 and zero point 0 (as
        onnxruntime does), so an all-zero tensor is reproduced exactly.

    Raises
    ------
    RecipeError
        If the range is not finite.
    """
    qt = get_qtype(qtype)
    if qt.name in MX_DTYPES:  # OCP MX: power-of-two shared scale per block (workbench.core.formats.mx)
        return qparams_from_range(rmin, rmax, qt.name, axis=axis, block_size=block_size)
    rmin = np.asarray(rmin, dtype=np.float32)
    rmax = np.asarray(rmax, dtype=np.float32)
    if not (np.all(np.isfinite(rmin)) and np.all(np.isfinite(rmax))):
        raise RecipeError("Cannot derive a scale from a non-finite range.",
                          hint="Check the calibration data for NaN/Inf values.")
    rmin = np.minimum(rmin, np.float32(0))
    rmax = np.maximum(rmax, np.float32(0))
    if qt.is_float:
        absmax = np.maximum(np.abs(rmin), np.abs(rmax)).astype(np.float64)
        scale = absmax / np.float64(qt.qmax)
        zero = scale < np.finfo(np.float32).tiny
        scale = np.where(zero, 1.0, scale).astype(np.float32)
        if power_of_two:
            scale = _pow2_ceil(scale)
        return QParams(scale, np.zeros(scale.shape, qt.storage), qt.name, axis, block_size)
    qmin, qmax = qrange(qt, symmetric, reduce_range)
    if symmetric:
        absmax = np.maximum(np.abs(rmin), np.abs(rmax))
        rmin, rmax = -absmax, absmax
    dr = rmax.astype(np.float64) - rmin.astype(np.float64)
    scale64 = dr / (np.float64(qmax) - np.float64(qmin))
    zero = scale64 < np.finfo(np.float32).tiny
    scale64 = np.where(zero, 1.0, scale64)
    if power_of_two:
        scale64 = _pow2_ceil(scale64)
    if symmetric:
        zp = np.full(scale64.shape, np.round((qmin + qmax) / 2.0))
    else:
        zp = np.round(qmin - rmin.astype(np.float64) / scale64)
    zp = np.where(zero, 0.0 if qmin <= 0 <= qmax else qmin, zp)
    zp = np.clip(zp, qmin, qmax)
    return QParams(scale64.astype(np.float32), zp.astype(qt.storage), qt.name, axis, block_size)


def _pow2_ceil(scale: np.ndarray) -> np.ndarray:
    return np.exp2(np.ceil(np.log2(scale))).astype(scale.dtype)


def expand_param(p: np.ndarray, shape: tuple[int, ...], axis: int | None, block_size: int | None) -> np.ndarray:
    """Broadcast a scale or zero point to ``shape`` (the ONNX per-axis and blocked layouts).

    Per-axis: ``p`` has shape ``(shape[axis],)``. Blocked: ``p`` has ``shape`` with
    ``shape[axis]`` replaced by ``ceil(shape[axis] / block_size)``; each entry covers
    ``block_size`` consecutive elements along ``axis`` (ONNX QuantizeLinear-21).
    """
    if p.ndim == 0 or axis is None:
        return p
    axis = axis % len(shape)
    if block_size:
        rep = np.repeat(p, block_size, axis=axis)
        return np.take(rep, np.arange(shape[axis]), axis=axis)
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return p.reshape(view)


def quantize(x: np.ndarray, qp: QParams) -> np.ndarray:
    """ONNX QuantizeLinear of ``x`` (float32, any shape) -> array of ``qp.qtype``'s storage dtype.

    Bit-exact with ``onnx.reference``: division in float32, round half to even, saturation to the
    type's bounds (float8: saturating cast to the largest finite value). Saturation happens in
    float before the integer cast, so +-Inf and values beyond the int32 range saturate to
    qmax / qmin (as onnxruntime does); NaN maps to qmin (onnxruntime's CPU kernel does the same).
    """
    qt = qp.qt
    x = np.asarray(x, dtype=np.float32)
    scale = expand_param(qp.scale.astype(np.float32), x.shape, qp.axis, qp.block_size)
    zp = None if qt.is_float else expand_param(qp.zero_point.astype(np.float32), x.shape, qp.axis, qp.block_size)
    if x.ndim == 0 or x.size <= _CHUNK or x.shape[0] < 2:
        return _quantize(x, scale, zp, qt)
    # elementwise, so row blocks give identical bits; temporaries stay ~_CHUNK elements, not 4x x
    out = np.empty(x.shape, qt.storage)
    scale = np.broadcast_to(scale, x.shape)
    zp = None if zp is None else np.broadcast_to(zp, x.shape)
    rows = max(1, _CHUNK // max(1, x.size // x.shape[0]))
    for i in range(0, x.shape[0], rows):
        out[i:i + rows] = _quantize(x[i:i + rows], scale[i:i + rows], None if zp is None else zp[i:i + rows], qt)
    return out


#: Elements quantized per block by :func:`quantize` (bounds its float temporaries to ~64 MiB).
_CHUNK = 1 << 22


def _quantize(x: np.ndarray, scale: np.ndarray, zp: np.ndarray | None, qt) -> np.ndarray:
    """The steps of :func:`quantize` on one block, in place in one float32 temporary: the same bits as a
    temporary per step and a cast through int32, in 0.024-0.029 s of CPU instead of 0.037-0.040 s for
    minilm_l6_v2's MatMul weight shapes (12 of 384 x 1536 and 24 of 384 x 384, int8 per channel)."""
    y = x / scale
    if qt.is_float:
        return np.clip(y, qt.qmin, qt.qmax).astype(qt.storage)
    if isinstance(y, np.ndarray) and y.dtype == np.float32:  # :func:`quantize`'s blocks
        q = y
        np.rint(q, out=q)
        q += zp
    else:  # a 0-d result is a numpy scalar
        q = np.asarray(np.rint(y) + zp, dtype=np.float32)
    np.clip(q, qt.qmin, qt.qmax, out=q)
    nan = np.isnan(q)  # clipped, so NaN is all that is left to map (np.nan_to_num also scanned for +-Inf: 3x slower)
    if nan.any():
        q[nan] = qt.qmin
    # whole numbers within the storage type's range: cast directly (wider types through int32, as before)
    return q.astype(qt.storage) if np.dtype(qt.storage).itemsize <= 2 else q.astype(np.int32).astype(qt.storage)


def dequantize(q: np.ndarray, qp: QParams) -> np.ndarray:
    """ONNX DequantizeLinear: ``(q - zero_point) * scale`` in float32, same shape as ``q``."""
    qt = qp.qt
    scale = expand_param(qp.scale.astype(np.float32), q.shape, qp.axis, qp.block_size)
    if qt.is_float:
        return q.astype(np.float32) * scale
    zp = expand_param(qp.zero_point.astype(np.int32), q.shape, qp.axis, qp.block_size)
    return ((q.astype(np.int32) - zp).astype(np.float32) * scale).astype(np.float32)


def fake_quantize(x: np.ndarray, qp: QParams) -> np.ndarray:
    """``dequantize(quantize(x))``: the float32 values a QDQ pair produces (same shape as ``x``)."""
    return dequantize(quantize(x, qp), qp)


def int_squared_error(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, qt: QType) -> np.ndarray:
    """``(fake_quantize(x) - x) ** 2`` of each element of ``x`` on the grids ``scale`` / ``zero_point`` of an
    integer type ``qt`` of at most 16 bits, broadcast together: ``x`` ``(1, P)`` points against ``(K, 1)``
    candidate grids (the MSE observer), or ``(C, K)`` weight rows against ``(C, 1)`` channel grids (the MSE
    weight search).

    The float32 operations of :func:`fake_quantize`, so its values (ONNX QuantizeLinear then
    DequantizeLinear): ``x / scale``, round half to even, ``+ zero_point``, saturation to the type's bounds
    (int8 reaches -128), ``(q - zero_point) * scale`` (the integer difference is exact in float32 below
    2**24); then the difference with ``x`` and its square in float64. ``x`` is finite, so the NaN case of
    :func:`quantize` does not arise; ``x / scale`` beyond float32 saturates.

    Returns
    -------
    numpy.ndarray
        float64, the broadcast shape of ``x``, ``scale`` and ``zero_point``.
    """
    x = np.asarray(x, np.float32)
    s = np.asarray(scale, np.float32)
    z = np.asarray(zero_point, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        q = x / s
        np.rint(q, out=q)
        q += z
        np.clip(q, qt.qmin, qt.qmax, out=q)
        q -= z
        q *= s
    d = q.astype(np.float64)
    d -= x
    d *= d
    return d


def sqnr_db(reference: np.ndarray, approx: np.ndarray) -> float:
    """Signal-to-quantization-noise ratio ``10*log10(sum(ref^2) / sum((ref-approx)^2))`` in dB.

    Returns ``inf`` when the error is exactly zero and ``-inf`` when the reference is all zero
    but the error is not. The sums are float64, taken in cache-sized chunks
    (:func:`workbench.core.formats.error_sums.sqnr_sums`: no float64 copy of the whole arrays).
    A NaN or Inf among the values gives what the whole-array formula gives (NaN, or +-inf), not the
    finite pairs' figure; arrays of different sizes raise ``ValueError`` (a one-value array broadcasts).
    """
    sums = sqnr_sums(reference, approx)
    if sums is None or sums[5] != np.size(reference):  # empty, other sizes, or a NaN / Inf left out
        return _sqnr_db_whole(reference, approx)
    return _sqnr_from(sums[0], sums[1])


def _sqnr_db_whole(reference: np.ndarray, approx: np.ndarray) -> float:
    """:func:`sqnr_db` on the whole arrays widened to float64 (non-finite values carried through)."""
    ref = np.asarray(reference, dtype=np.float64).ravel()
    err = ref - np.asarray(approx, dtype=np.float64).ravel()
    with np.errstate(invalid="ignore", over="ignore"):
        return _sqnr_from(float(np.dot(ref, ref)), float(np.dot(err, err)))


def _sqnr_from(p_sig: float, p_err: float) -> float:
    if p_err == 0.0:
        return float("inf")
    if p_sig == 0.0:
        return float("-inf")
    with np.errstate(divide="ignore", invalid="ignore"):
        return 10.0 * float(np.log10(p_sig / p_err))


def mx_quantize(x: np.ndarray, qp: QParams) -> np.ndarray:
    """Elements ``P_i`` of ``x`` (float32) in the element dtype (ml_dtypes; int8 for MXINT8)."""
    return quantize(x, qp)


def mx_dequantize(q: np.ndarray, qp: QParams) -> np.ndarray:
    """``X * P_i`` in float32 (exact: a power of two times an element value)."""
    return dequantize(q, qp)


def mx_fake_quantize(x: np.ndarray, dtype: str, axis: int, block_size: int = BLOCK_SIZE) -> np.ndarray:
    """``x`` (float32) rounded to MX ``dtype`` with blocks along ``axis``; same shape, float32."""
    qp = mx_qparams(x, dtype, axis, block_size)
    return mx_dequantize(mx_quantize(x, qp), qp)


