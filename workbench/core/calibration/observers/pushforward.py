"""The histogram of ``y = F(x)`` from the histogram of ``x``, for any continuous scalar ``F``.

Model: inside one bin ``[e_i, e_i+1)`` of x the ``c_i`` values are spread uniformly and F is
linear, so they land uniformly on ``[min(F(e_i), F(e_i+1)), max(...)]`` of y. The CDF of y is
then the sum of one linear ramp per bin (a step where F is flat over the bin), i.e. piecewise
linear with its breakpoints at the mapped edges; it is evaluated exactly at every breakpoint in
O(B log B) with prefix sums (``sum_k w_k * max(v - a_k, 0)`` = ``v * W(v) - WA(v)`` over the ramps
starting below v), and :meth:`StreamingHistogram.from_cdf` lays it onto y's own equal-width bins.
For a monotonic F this is the same interpolation as mapping x's cumulative counts through F; for a
non-monotonic one (SiLU, GELU) the values of the bins on both sides of the dip add up where
their images overlap, which a mapped CDF cannot express.
"""

from __future__ import annotations

import numpy as np

from workbench.core.calibration.observers.histogram import StreamingHistogram

#: Ramps narrower than this fraction of y's span are treated as steps (a point mass at their
#: centre): it bounds the weights ``count / width`` that the prefix sums cancel.
NARROW = 1e-9


def push_forward(fy: np.ndarray, counts: np.ndarray, bins: int) -> StreamingHistogram:
    """Histogram of y from F at x's bin edges and x's bin counts.

    Parameters
    ----------
    fy : numpy.ndarray, float64, shape (B + 1,)
        F at the edges of x's bins (clipped to x's exact min / max), finite.
    counts : numpy.ndarray, int, shape (B,)
        Values of x per bin.
    bins : int
        Bins of the result.

    Returns
    -------
    StreamingHistogram
        Over the range F takes on the occupied bins of x, with ``total == counts.sum()``.
    """
    fy = np.asarray(fy, np.float64)
    m = np.asarray(counts, np.float64)
    a, b = np.minimum(fy[:-1], fy[1:]), np.maximum(fy[:-1], fy[1:])
    keep = m > 0
    a, b, m = a[keep], b[keep], m[keep]
    total = float(m.sum())
    if total == 0.0:
        return StreamingHistogram.from_cdf(np.array([fy[0], fy[0]]), np.array([0.0, 0.0]), bins)
    lo, hi = float(a.min()), float(b.max())
    if hi <= lo:
        return StreamingHistogram.from_cdf(np.array([lo, lo]), np.array([0.0, total]), bins)
    a, b = a - lo, b - lo  # offsets from lo: smaller products in the prefix sums
    ramp = (b - a) > NARROW * (hi - lo)
    ra, rb, w = a[ramp], b[ramp], m[ramp] / (b[ramp] - a[ramp])
    steps, sm = 0.5 * (a[~ramp] + b[~ramp]), m[~ramp]
    v = np.unique(np.concatenate([[0.0, hi - lo], ra, rb, steps]))
    cont = _ramp_sum(v, ra, w) - _ramp_sum(v, rb, w)
    order = np.argsort(steps, kind="stable")
    sp, sc = steps[order], np.concatenate([[0.0], np.cumsum(sm[order])])
    below = cont + sc[np.searchsorted(sp, v, side="left")]
    upto = cont + sc[np.searchsorted(sp, v, side="right")]
    cdf = np.column_stack([below, upto]).ravel()
    cdf = np.clip(np.maximum.accumulate(cdf), 0.0, total)
    cdf[-1] = total
    return StreamingHistogram.from_cdf(np.repeat(v + lo, 2), cdf, bins)


def _ramp_sum(v: np.ndarray, starts: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_k w_k * max(v - starts_k, 0)`` at every ``v`` (float64)."""
    order = np.argsort(starts, kind="stable")
    s, ws = starts[order], w[order]
    cw = np.concatenate([[0.0], np.cumsum(ws)])
    cws = np.concatenate([[0.0], np.cumsum(ws * s)])
    k = np.searchsorted(s, v, side="left")
    return v * cw[k] - cws[k]
