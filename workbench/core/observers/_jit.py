"""numba-compiled loops behind :mod:`workbench.core.observers.kernels` (imported lazily from there).

Every function releases the GIL (``nogil``) and is cached on disk (``cache=True``): numba writes
the compiled code next to this file in ``__pycache__`` when that is writable, else under
``NUMBA_CACHE_DIR``, else in the user cache (``~/.cache/numba``; a frozen app keys it on the
executable), so only the first process pays the compilation (about 1 s of CPU in total).
"""

from __future__ import annotations

import numba
import numpy as np


def _jit(**kw):
    try:
        return numba.njit(nogil=True, cache=True, **kw)
    except RuntimeError:  # no writable cache location: compile per process
        return numba.njit(nogil=True, **kw)


@_jit(fastmath={"nnan", "ninf", "nsz"})
def minmax_nonfinite(x, bits, expo):
    """Min, max and the number of NaN / Inf of ``x`` (1-D, contiguous) in one pass.

    ``bits`` is ``x`` viewed as integers of the same width and ``expo`` the exponent mask: a
    value is non-finite when all its exponent bits are set (IEEE 754). The min / max are those
    of numpy only when the count is 0 (the fast-math reductions ignore NaN semantics);
    otherwise use :func:`finite_minmax`.
    """
    mn = x[0]
    mx = x[0]
    bad = 0
    for i in range(x.size):
        v = x[i]
        mn = min(mn, v)
        mx = max(mx, v)
        bad += (bits[i] & expo) == expo
    return mn, mx, bad


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
