"""numba-compiled loops behind bias correction's input means (:mod:`workbench.core.transforms.bias_correction`,
imported on first use from there, so ``import workbench.core`` does not pay for numba).

Each loop reads a slice of rows once and adds it into a float64 sum with the arithmetic of the numpy code it
replaces, element by element in the same order, so the sums are the same bits: :func:`add_rows` is
``part += row`` row after row (float32 -> float64, then one add); :func:`add_rounded` is ``_Table.sum_rows``
(QuantizeLinear's float32 division and round half to even, the saturation, NaN to the grid's minimum,
DequantizeLinear's float32 product) added into the sum, whose float64 adds are exact on such a grid in any
order. Compiled without fast-math, cached on disk like the observers' loops.
"""

from __future__ import annotations

import numba
import numpy as np


def _jit(**kw):
    try:
        return numba.njit(nogil=True, cache=True, **kw)
    except RuntimeError:  # no writable cache location: compile per process
        return numba.njit(nogil=True, **kw)


@_jit()
def add_rows(x, part):
    """``part[j] += x[r, j]`` for every row ``r`` in order; ``x``: float32 ``(rows, m)``, ``part``: float64 ``(m,)``."""
    for r in range(x.shape[0]):
        for j in range(x.shape[1]):
            part[j] += np.float64(x[r, j])


@_jit()
def add_rounded(x, part, scale, lo, hi, nan):
    """``part[j] += ((clip(rint(x[r, j] / scale), lo, hi)) * scale`` for every row, a NaN rounding to ``nan``
    (float32 arithmetic; ``lo`` / ``hi`` / ``nan``: the grid's bounds and NaN value less its zero point)."""
    for r in range(x.shape[0]):
        for j in range(x.shape[1]):
            y = np.rint(x[r, j] / scale)
            if y < lo:
                y = lo
            elif y > hi:
                y = hi
            elif y != y:
                y = nan
            part[j] += np.float64(y * scale)
