"""Entropy (KL divergence) observer: TensorRT-style threshold search over the |x| histogram.

Algorithm of Migacz 2017, "8-bit Inference with TensorRT" (GTC talk, slides 29-39):

1. Histogram ``|x|`` into N bins over ``[0, absmax]`` (here folded from the signed streaming
   histogram, N = its bin count).
2. For each candidate threshold bin ``i``: the reference distribution ``P`` is ``hist[:i]`` with
   the clipped outliers ``sum(hist[i:])`` added to ``P[i-1]``; the candidate ``Q`` merges
   ``hist[:i]`` into the quantization levels and expands each level back over its non-empty
   bins (equal share).
3. Choose the ``i`` with the smallest ``KL(P || Q)``; the threshold is ``i * bin_width``.

Generalisation: instead of TensorRT's fixed 128 equal groups, bins are grouped by the quantized
level that the candidate scale actually assigns to each bin centre, so the search is right for
every target dtype (int4 has 8 positive levels, uint8 on non-negative data 256, float8 its
non-uniform grid), and the first bin (which holds the exact zeros of e.g. ReLU outputs; zero is
exactly representable, so its spike is never spread) is a group of its own. Zero entries of ``Q`` where ``P > 0`` get a small epsilon (the smoothing
used by MXNet's and onnxruntime's implementations). The range is ``[-t, t]`` intersected with
the data range (so non-negative tensors keep ``rmin = 0``, as in onnxruntime's calibrator).
All candidate thresholds are scored at once in closed form from prefix sums of the histogram
(``sum p log p`` and ``sum_g T_g log(T_g / (n_g Q))`` per level group ``g``), so the search costs
a few milliseconds; :func:`kl_divergence_at` is the direct per-candidate definition it is tested
against. Candidates are scanned with a stride (about 128 of them), then every candidate within
one stride of the best is scored.

With fewer than ``MIN_PER_LEVEL`` values per quantization level the histogram is too sparse for the
KL estimate to mean anything (a few hundred values give a threshold that clips real peaks), so the
observer keeps the full observed range until it has seen enough data.
"""

from __future__ import annotations

import numpy as np

from workbench.core.calibration.observers.histogram import HistogramObserver, StreamingHistogram
from workbench.core.formats.numerics import qrange

_EPS = 1e-4
_CHUNK = 1024
_COARSE = 128
#: values needed per quantization level before the KL threshold is trusted (else: full range)
MIN_PER_LEVEL = 8


class EntropyObserver(HistogramObserver):
    """KL-divergence threshold calibration (see module docstring)."""

    name = "entropy"

    def _range_from(self, h: StreamingHistogram) -> tuple[float, float]:
        hist, bw = h.abs_histogram(h.bins)
        if h.vmax == h.vmin or hist.sum() == 0:
            return h.vmin, h.vmax
        mids, grid_max = self.level_grid(nonneg=h.vmin >= 0.0)
        if hist.sum() < MIN_PER_LEVEL * len(mids):
            return h.vmin, h.vmax
        t = kl_threshold(hist, bw, mids, grid_max)
        return max(h.vmin, -t), min(h.vmax, t)

    def level_grid(self, nonneg: bool) -> tuple[np.ndarray, float]:
        """Rounding boundaries of the target dtype's non-negative levels, in grid units.

        Returns ``(mids, grid_max)``: a value ``v`` (in units where the threshold is
        ``grid_max``) lies in level ``k`` when ``mids[k-1] <= v < mids[k]``. Integers: ``L``
        levels of width 1 (``L = qmax - qmin`` for non-negative data with an asymmetric spec,
        else half of it), ``mids = k - 0.5``. Float8: midpoints between neighbouring
        non-negative finite values, ``grid_max`` the largest finite value.
        """
        qt = self.spec.qtype
        if qt.is_float:
            vals = np.arange(256, dtype=np.uint8).view(qt.storage).astype(np.float64)
            vals = np.unique(vals[np.isfinite(vals) & (vals >= 0)])
            return (vals[:-1] + vals[1:]) / 2.0, float(vals[-1])
        qmin, qmax = qrange(qt, self.spec.symmetric, self.spec.reduce_range)
        levels = (qmax - qmin) if (nonneg and not self.spec.symmetric) else np.floor((qmax - qmin) / 2)
        return np.arange(1, int(levels) + 1) - 0.5, float(levels)


def level_starts(i: np.ndarray, mids: np.ndarray, grid_max: float) -> np.ndarray:
    """First bin of every level ``k >= 1`` for thresholds at the upper edge of bin ``i-1``.

    Bin ``j``'s centre is ``(j + 0.5) * grid_max / i`` in grid units; it is in level ``>= k``
    when that is ``>= mids[k-1]``, i.e. ``j >= ceil(mids[k-1] * i / grid_max - 0.5)``.
    Returns int64 of shape ``(len(i), len(mids))``, clipped to ``[1, i]`` (bin 0 is its own group).
    """
    i = np.asarray(i, np.int64).reshape(-1, 1)
    b = np.ceil(mids[None, :] * i.astype(np.float64) / grid_max - 0.5).astype(np.int64)
    return np.clip(b, 1, i)


def level_ids(i: int, mids: np.ndarray, grid_max: float) -> np.ndarray:
    """Level of each of the first ``i`` bins (same rounding as :func:`level_starts`)."""
    return np.searchsorted(level_starts(np.array([i]), mids, grid_max)[0], np.arange(i), side="right")


def kl_divergence_at(hist: np.ndarray, i: int, ids: np.ndarray) -> float:
    """``KL(P || Q)`` for clipping ``hist`` (float64, N bins) after bin ``i`` (Migacz 2017).

    ``ids`` (int, shape (i,)) is the non-decreasing quantized level of each kept bin. Direct
    definition, one candidate at a time (reference for :func:`kl_scores`).
    """
    ref = hist[:i]
    p = ref.copy()
    p[i - 1] += hist[i:].sum()
    change = np.empty(i, bool)
    np.not_equal(ids[1:], ids[:-1], out=change[1:])
    change[: min(i, 2)] = True  # bin 0 (holds exact zeros, which quantize exactly) is its own group
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], i)
    cs = np.concatenate([[0.0], np.cumsum(ref)])
    cnz = np.concatenate([[0.0], np.cumsum(ref > 0, dtype=np.float64)])
    tot, cnt = cs[ends] - cs[starts], cnz[ends] - cnz[starts]
    q = np.where(ref > 0, np.repeat(tot / np.maximum(cnt, 1.0), ends - starts), 0.0)
    ps, qs = p.sum(), q.sum()
    if ps <= 0 or qs <= 0:
        return np.inf
    m = p > 0
    pm, qm = p[m] / ps, q[m] / qs
    qm = np.where(qm > 0, qm, _EPS / i)
    return float(np.dot(pm, np.log(pm / qm)))


def kl_scores(hist: np.ndarray, cands: np.ndarray, mids: np.ndarray, grid_max: float) -> np.ndarray:
    """``KL(P || Q)`` of every candidate ``i`` in ``cands`` at once (same value as :func:`kl_divergence_at`).

    With ``P_tot`` the total count, ``Q_i = sum(hist[:i])`` and level groups ``g`` (sum ``T_g``,
    ``n_g`` non-empty bins): ``KL = sum_j p_j log p_j - sum_g (T_g/P_tot) log(T_g / (n_g Q_i))``
    plus the correction for the outliers folded into bin ``i-1``; every sum comes from prefix
    sums, so the cost is ``O(len(cands) * len(mids))``.
    """
    h = hist.astype(np.float64)
    total = h.sum()
    hl = np.where(h > 0, h * np.log(np.where(h > 0, h, 1.0)), 0.0)
    cs = np.concatenate([[0.0], np.cumsum(h)])
    cnz = np.concatenate([[0.0], np.cumsum(h > 0, dtype=np.float64)])
    chl = np.concatenate([[0.0], np.cumsum(hl)])
    i = cands.astype(np.int64)
    fi = i.astype(np.float64)
    # group boundaries: 0, 1 (bin 0 alone), first bin of every level >= 1, i
    col = i[:, None]
    bounds = np.concatenate([np.zeros_like(col), np.ones_like(col), level_starts(i, mids, grid_max), col], axis=1)
    t_g = cs[bounds[:, 1:]] - cs[bounds[:, :-1]]
    n_g = cnz[bounds[:, 1:]] - cnz[bounds[:, :-1]]
    q_i = cs[i]
    with np.errstate(divide="ignore", invalid="ignore"):
        grp = np.where(t_g > 0, t_g * np.log(t_g / (np.maximum(n_g, 1.0) * q_i[:, None])), 0.0).sum(axis=1)
        # q of bin i-1 (normalised): its group's share if the bin is non-empty, else epsilon
        starts = bounds[:, :-1]
        last_start = np.where(starts <= col - 1, starts, 0).max(axis=1)  # group holding bin i-1
        t_last = cs[i] - cs[last_start]
        n_last = cnz[i] - cnz[last_start]
        h_last = h[i - 1]
        q_last = np.where(h_last > 0, t_last / (np.maximum(n_last, 1.0) * q_i), _EPS / fi)
        outl = total - cs[i]
        p_last = (h_last + outl) / total
        # sum_j p_j log p_j, bin i-1 carrying the outliers
        plogp = (chl[i - 1] - np.log(total) * cs[i - 1]) / total
        plogp += np.where(p_last > 0, p_last * np.log(np.where(p_last > 0, p_last, 1.0)), 0.0)
        # sum_j p_j log q_j: groups as if bin i-1 had only h_last, then move its mass to p_last
        plogq = grp / total
        plogq += np.where(h_last > 0, -(h_last / total) * np.log(np.where(h_last > 0, q_last, 1.0)), 0.0)
        plogq += np.where(p_last > 0, p_last * np.log(q_last), 0.0)
        kl = plogp - plogq
    return np.where(q_i > 0, kl, np.inf)


def kl_threshold(hist: np.ndarray, bin_width: float, mids: np.ndarray, grid_max: float) -> float:
    """Threshold (same unit as the data) with the smallest KL divergence; see the module docstring.

    Parameters
    ----------
    hist : numpy.ndarray, float64, shape (N,)
        Histogram of ``|x|``, bin ``j`` covering ``[j, j+1) * bin_width``.
    bin_width : float
    mids, grid_max :
        The target dtype's level boundaries (:meth:`EntropyObserver.level_grid`).
    """
    n = hist.size
    nonzero = np.flatnonzero(hist)
    last = int(nonzero[-1]) + 1 if nonzero.size else n
    start = max(2, min(mids.size, n))
    if start >= last:  # at least as many levels as occupied bins: nothing to gain by clipping
        return last * bin_width
    cands = np.arange(start, last + 1)
    stride = max(1, cands.size // _COARSE)
    coarse = cands[::stride]
    best = int(coarse[int(np.argmin(_scores(hist, coarse, mids, grid_max)))])
    if stride > 1:  # every candidate within one stride of the coarse optimum
        fine = np.arange(max(start, best - stride + 1), min(last, best + stride - 1) + 1)
        best = int(fine[int(np.argmin(_scores(hist, fine, mids, grid_max)))])
    return best * bin_width


def _scores(hist: np.ndarray, cands: np.ndarray, mids: np.ndarray, grid_max: float) -> np.ndarray:
    return np.concatenate([kl_scores(hist, cands[k:k + _CHUNK], mids, grid_max)
                           for k in range(0, cands.size, _CHUNK)])
