"""MSE weight ranges: per channel, the clip of the weight's own min / max whose rounding error is smallest.

What the writer uses for a weight whose spec names the ``mse`` observer (integer, per-tensor or
per-channel; the activation observer of that name works on histograms). For each channel ``c`` (or the
whole tensor) with values ``w_c`` it keeps

    f_c = argmin over f of  sum_k (DQ(Q(w_ck; qp(f * min w_c, f * max w_c))) - w_ck) ** 2

where ``qp`` is :func:`~workbench.core.formats.numerics.compute_qparams` and ``DQ(Q(.))`` rounds and
saturates as QuantizeLinear / DequantizeLinear do (int8 reaches -128 by clipped values;
:func:`~workbench.core.formats.numerics.int_squared_error`, which the histogram MSE observer uses too).
This is the MSE range setting, ``argmin ||W - W_hat||_F^2`` over the clip range, of Nagel et al. 2021,
"A White Paper on Neural Network Quantization" (section 3.1, "Quantization range setting"), with the
range restricted to fractions of MinMax. A weight is known exactly, so no histogram is needed: ``f``
runs over :data:`FRACTIONS` (1.0 first, then down to 0.2 in steps of 0.01), then :data:`REFINE` steps
around each channel's best. A tie keeps the larger range, so a channel MinMax already rounds best keeps
MinMax exactly. nudenet_320n's 64 Conv weights (int8 symmetric per-channel): squared rounding error
2.809 with MinMax, 2.758 with the histogram MSE observer this replaces for weights, 2.726 here, in about
a third of its time. ``observer_args`` (``bins``) are not read.

Results are kept per weight content and spec (:data:`_CACHE`), so the recipe choice, which writes the
same weights once per variant it scores, searches each weight once.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from workbench.core.formats.numerics import compute_qparams, int_squared_error
from workbench.core.formats.qparams import QParams
from workbench.core.io import digest
from workbench.core.recipe.spec import Granularity, QuantSpec

#: Candidate fractions of each channel's min / max, largest first (a tie keeps the larger) ...
FRACTIONS = np.round(np.arange(100, 19, -1) / 100.0, 2)
#: ... then these steps around each channel's best of them.
REFINE = np.array([-0.0075, -0.005, -0.0025, 0.0025, 0.005, 0.0075])
#: Elements fake-quantized at once (bounds the scratch memory of the search to a few tens of MB).
_CHUNK = 1 << 21
#: Searched weights kept: key -> QParams (small: one scale and zero point per channel).
_CACHE: OrderedDict[tuple, QParams] = OrderedDict()
_CACHE_SIZE = 4096


def mse_applies(spec: QuantSpec) -> bool:
    """True for the specs this search serves: integer dtypes, per-tensor or per-channel, no power-of-two
    scales (a power-of-two scale takes no fraction of a range)."""
    return (not spec.qtype.is_float and not spec.power_of_two
            and spec.granularity in (Granularity.per_tensor, Granularity.per_channel))


def mse_weight_qparams(w: np.ndarray, spec: QuantSpec) -> QParams:
    """Qparams of constant ``w`` for ``spec`` whose per-channel (``spec.axis``) or per-tensor range is the
    fraction of MinMax with the smallest rounding error (module docstring).

    Parameters
    ----------
    w : numpy.ndarray, float32, any shape
    spec : QuantSpec
        Integer dtype, per_tensor or per_channel (:func:`mse_applies`).

    Returns
    -------
    QParams
        As :func:`~workbench.core.writers.common.weight_qparams` returns for the chosen ranges: scale
        shape ``()`` or ``(w.shape[axis],)``.

    Raises
    ------
    ValueError
        ``spec`` is not one :func:`mse_applies` to.
    """
    if not mse_applies(spec):
        raise ValueError(f"MSE weight ranges take integer per-tensor or per-channel specs, not {spec}")
    w = np.asarray(w, dtype=np.float32)
    per_channel = spec.granularity == Granularity.per_channel and w.ndim > 0
    axis = (spec.axis or 0) if per_channel else None
    key = (digest.blake2b(np.ascontiguousarray(w).tobytes(), digest_size=16).digest(), w.shape, axis,
           spec.dtype, spec.symmetric, spec.reduce_range)
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    rows = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1) if axis is not None else w.reshape(1, -1)
    lo, hi = rows.min(axis=1), rows.max(axis=1)
    best = _best_fractions(rows, lo, hi, spec)
    kw = dict(symmetric=spec.symmetric, reduce_range=spec.reduce_range, power_of_two=False)
    if axis is None:
        qp = compute_qparams(float(lo[0] * best[0]), float(hi[0] * best[0]), spec.dtype, **kw)
    else:
        qp = compute_qparams((lo * best).astype(np.float32), (hi * best).astype(np.float32), spec.dtype,
                             axis=axis, **kw)
    _CACHE[key] = qp
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return qp


def _best_fractions(rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, spec: QuantSpec) -> np.ndarray:
    """Per row of ``rows`` ``(C, K)``, the fraction of MinMax with the smallest squared rounding error
    (float64 ``(C,)``): the best of :data:`FRACTIONS`, then of :data:`REFINE` steps around it."""
    best_err = np.full(rows.shape[0], np.inf)
    best = np.ones(rows.shape[0])
    for f in FRACTIONS:
        best, best_err = _keep_better(rows, lo, hi, spec, np.full(rows.shape[0], f), best, best_err)
    centre = best.copy()
    for d in REFINE:
        f = np.clip(centre + d, FRACTIONS[-1], 1.0)
        best, best_err = _keep_better(rows, lo, hi, spec, f, best, best_err)
    return best


def _keep_better(rows, lo, hi, spec: QuantSpec, f: np.ndarray, best: np.ndarray, best_err: np.ndarray):
    """``(best, best_err)`` with each row's fraction ``f`` taken where its error is strictly smaller."""
    qp = compute_qparams((lo * f).astype(np.float32), (hi * f).astype(np.float32), spec.dtype,
                         symmetric=spec.symmetric, reduce_range=spec.reduce_range)
    scale = np.asarray(qp.scale, np.float32).reshape(-1, 1)
    zp = np.asarray(qp.zero_point, np.float32).reshape(-1, 1)
    err = np.empty(rows.shape[0])
    step = max(1, _CHUNK // max(rows.shape[1], 1))
    for s in range(0, rows.shape[0], step):  # rounded and saturated as QuantizeLinear does (-128 with int8)
        err[s:s + step] = int_squared_error(rows[s:s + step], scale[s:s + step], zp[s:s + step],
                                            spec.qtype).sum(axis=1)
    better = err < best_err
    return np.where(better, f, best), np.where(better, err, best_err)
