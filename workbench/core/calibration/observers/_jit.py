"""numba-compiled loops behind :mod:`workbench.core.calibration.observers.kernels` (imported lazily from there).

Every function releases the GIL (``nogil``) and is cached on disk (``cache=True``): numba writes
the compiled code next to this file in ``__pycache__`` when that is writable, else under
``NUMBA_CACHE_DIR``, else in the user cache (``~/.cache/numba``; a frozen app keys it on the
executable), so only the first process pays the compilation (about 1 s of CPU in total).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import int32


def _jit(**kw):
    try:
        return numba.njit(nogil=True, cache=True, **kw)
    except RuntimeError:  # no writable cache location: compile per process
        return numba.njit(nogil=True, **kw)


@_jit()
def minmax_keys(bits, absmask, shift):
    """Smallest / largest order key and largest magnitude of the floats whose bits are ``bits``.

    ``bits``: a 1-D contiguous float array viewed as same-width signed integers; ``absmask`` clears
    the sign bit, ``shift`` is the width - 1. The key ``b ^ ((b >> shift) & absmask)`` orders
    finite floats like their values (the usual sign-magnitude to two's-complement flip), so the
    loop is integer min / max only and vectorizes; the float is ``key ^ ((key >> shift) & absmask)``.
    A largest magnitude at or above the exponent mask means NaN or Inf are present.
    """
    b = bits[0]
    kmin = b ^ ((b >> shift) & absmask)
    kmax = kmin
    amax = b & absmask
    for i in range(bits.size):
        b = bits[i]
        k = b ^ ((b >> shift) & absmask)
        kmin = min(kmin, k)
        kmax = max(kmax, k)
        amax = max(amax, b & absmask)
    return kmin, kmax, amax


@_jit()
def minmax_keys32(bits, absmask, shift):
    """:func:`minmax_keys` for float32 with every step cast back to int32 (numba widens int32
    arithmetic to int64, which would halve the vector width)."""
    b = bits[0]
    kmin = int32(b ^ ((b >> shift) & absmask))
    kmax = kmin
    amax = int32(b & absmask)
    for i in range(bits.size):
        b = bits[i]
        k = int32(b ^ int32(int32(b >> shift) & absmask))
        kmin = min(kmin, k)
        kmax = max(kmax, k)
        amax = max(amax, int32(b & absmask))
    return kmin, kmax, amax


@_jit()
def count_nonfinite(x):
    """Number of NaN / +-Inf in ``x`` (1-D)."""
    bad = 0
    for i in range(x.size):
        v = x[i]
        if not v - v == 0:
            bad += 1
    return bad


@_jit()
def finite_minmax(x):
    """Min and max of the finite values of ``x`` (1-D); ``(inf, -inf)`` when there are none."""
    mn = np.inf
    mx = -np.inf
    for i in range(x.size):
        v = x[i]
        if v - v == 0:  # NaN and +-Inf give NaN
            if v < mn:
                mn = v
            if v > mx:
                mx = v
    return mn, mx


@_jit()
def bin_f32(x, lo, inv, counts):
    """``counts[trunc((x - lo) * inv)] += 1`` in float32 arithmetic, indices clamped to the bins."""
    last = counts.size - 1
    for i in range(x.size):
        k = int((x[i] - lo) * inv)
        if k > last:
            k = last
        elif k < 0:
            k = 0
        counts[k] += 1


@_jit()
def bin_f64(x, lo, width, counts):
    """``counts[floor((float64(x) - lo) / width)] += 1``, indices clamped to the bins."""
    last = counts.size - 1
    for i in range(x.size):
        k = int(np.floor((np.float64(x[i]) - lo) / width))
        if k > last:
            k = last
        elif k < 0:
            k = 0
        counts[k] += 1
