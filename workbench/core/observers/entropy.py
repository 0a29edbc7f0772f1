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
Candidates are scanned with a stride (at most ~256 evaluations) and refined around the best.
"""

from __future__ import annotations

import numpy as np

from workbench.core.numerics import qrange
from workbench.core.observers.histogram import HistogramObserver, StreamingHistogram

_EPS = 1e-4
_MAX_CANDIDATES = 256


class EntropyObserver(HistogramObserver):
    """KL-divergence threshold calibration (see module docstring)."""

    name = "entropy"

    def _range_from(self, h: StreamingHistogram) -> tuple[float, float]:
        hist, bw = h.abs_histogram(h.bins)
        if h.vmax == h.vmin or hist.sum() == 0:
            return h.vmin, h.vmax
        nonneg = h.vmin >= 0.0
        level_of = self._level_fn(nonneg)
        t = kl_threshold(hist, bw, level_of)
        return max(h.vmin, -t), min(h.vmax, t)

    def _level_fn(self, nonneg: bool):
        """``f(values, threshold) -> int level ids`` of the target dtype for ``values >= 0``."""
        qt = self.spec.qtype
        if qt.is_float:
            def fp_level(v: np.ndarray, t: float) -> np.ndarray:
                y = np.clip(v * (qt.qmax / t), 0.0, qt.qmax).astype(np.float32)
                return y.astype(qt.storage).view(np.uint8).astype(np.int64)  # monotone for v >= 0
            return fp_level
        qmin, qmax = qrange(qt, self.spec.symmetric, self.spec.reduce_range)
        levels = (qmax - qmin) if (nonneg and not self.spec.symmetric) else np.floor((qmax - qmin) / 2)

        def int_level(v: np.ndarray, t: float) -> np.ndarray:
            return np.minimum(np.rint(v * (levels / t)), levels).astype(np.int64)
        int_level.levels = int(levels)  # type: ignore[attr-defined]
        return int_level


def kl_divergence_at(hist: np.ndarray, i: int, level_ids: np.ndarray, prefix=None) -> float:
    """``KL(P || Q)`` for clipping ``hist`` (float64, N bins) after bin ``i`` (Migacz 2017).

    ``level_ids`` (int, shape (i,)) is the non-decreasing quantized level of each kept bin.
    ``prefix`` optionally holds ``(cumsum(hist), cumsum(hist > 0))`` with a leading 0 (speed).
    """
    if prefix is None:
        prefix = _prefix(hist)
    cs, cnz = prefix
    ref = hist[:i]
    p = ref.copy()
    p[i - 1] += cs[-1] - cs[i]
    change = np.empty(i, bool)
    np.not_equal(level_ids[1:], level_ids[:-1], out=change[1:])
    change[: min(i, 2)] = True  # bin 0 (holds exact zeros, which quantize exactly) is its own group
    starts = np.flatnonzero(change)
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = i
    tot = cs[ends] - cs[starts]
    cnt = cnz[ends] - cnz[starts]
    share = np.repeat(tot / np.maximum(cnt, 1.0), ends - starts)
    q = np.where(ref > 0, share, 0.0)
    ps, qs = p.sum(), q.sum()
    if ps <= 0 or qs <= 0:
        return np.inf
    m = p > 0
    pm, qm = p[m] / ps, q[m] / qs
    qm = np.where(qm > 0, qm, _EPS / i)
    return float(np.dot(pm, np.log(pm / qm)))


def _prefix(hist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cs = np.concatenate([[0.0], np.cumsum(hist)])
    cnz = np.concatenate([[0.0], np.cumsum(hist > 0, dtype=np.float64)])
    return cs, cnz


def kl_threshold(hist: np.ndarray, bin_width: float, level_of) -> float:
    """Threshold (same unit as the data) that minimises the KL divergence; see the module docstring.

    Parameters
    ----------
    hist : numpy.ndarray, float64, shape (N,)
        Histogram of ``|x|``, bin ``j`` covering ``[j, j+1) * bin_width``.
    bin_width : float
    level_of : callable ``(values, threshold) -> int64 level ids``
    """
    n = hist.size
    centers = (np.arange(n) + 0.5) * bin_width
    start = max(2, min(getattr(level_of, "levels", 2), n))
    nonzero = np.flatnonzero(hist)
    last = int(nonzero[-1]) + 1 if nonzero.size else n
    if start >= last:
        return last * bin_width

    prefix = _prefix(hist)

    def score(i: int) -> float:
        return kl_divergence_at(hist, i, level_of(centers[:i], i * bin_width), prefix)

    stride = max(1, (last - start) // _MAX_CANDIDATES)
    cands = list(range(start, last + 1, stride))
    if cands[-1] != last:
        cands.append(last)
    scores = [score(i) for i in cands]
    best = cands[int(np.argmin(scores))]
    if stride > 1:
        fine = range(max(start, best - stride + 1), min(last, best + stride - 1) + 1)
        fs = [score(i) for i in fine]
        best = fine[int(np.argmin(fs))]
    return best * bin_width
