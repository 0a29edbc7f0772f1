"""Streaming fixed-memory histogram shared by the Percentile, Entropy and MSE observers.

The histogram has a fixed number of equal-width bins ``[lo + i*width, lo + (i+1)*width)``.
When a batch falls outside the covered range, the bins are widened by an integer factor ``k``
(and shifted left by a whole number of old bins), so every old bin lies inside exactly one new
bin and its count moves there unchanged: no information is invented, and memory does not grow
with the number of samples or the growth of the range. (onnxruntime's ``HistogramCollector``
keeps the bin width and appends bins, so its memory grows with the range; PyTorch's
``HistogramObserver`` spreads the old counts onto the new edges by interpolation.)

Bin index: ``trunc((x - lo32) * inv32)`` in float32 (``lo32`` the float32 at or below ``lo``,
``inv32 = float32(1/width)``), values past the last bin counted in it; ranges where float32 would
misplace bins use ``floor((x - lo) / width)`` in float64. With the compiled loops this is one pass
(:mod:`~workbench.core.calibration.observers.kernels`); the numpy path computes the same indices per 64 Ki
chunk and counts them with ``numpy.bincount`` (the fastest histogram numpy offers;
``np.histogram`` is ~2.5x slower).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from workbench.core.calibration.observers import kernels
from workbench.core.calibration.observers.base import Observer, as_f32
from workbench.core.errors import CalibrationError, RecipeError
from workbench.core.recipe.spec import BINS_RANGE, DEFAULT_BINS, Granularity

_CHUNK = 1 << 16
_DEFER_MAX = 4096  # per-tensor batches smaller than this are buffered ...
_DEFER_TOTAL = 16384  # ... and binned together once this many values are waiting
_scratch = threading.local()


def _as_float(values: np.ndarray) -> np.ndarray:
    """float32 view/copy for binning; float64 stays float64 (it may exceed the float32 range)."""
    if values.dtype == np.float32 or values.dtype == np.float64:
        return values
    return values.astype(np.float32)


def _buffers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-thread reusable float32 / intp scratch buffers of at least ``n`` elements."""
    f = getattr(_scratch, "f", None)
    if f is None or f.size < n:
        _scratch.f = f = np.empty(max(n, 1024), np.float32)
        _scratch.i = np.empty(max(n, 1024), np.intp)
    return f[:n], _scratch.i[:n]


def _f32_floor(v: float) -> np.float32:
    """Largest float32 that is <= ``v`` (so float32 offsets never push a value below bin 0)."""
    with np.errstate(over="ignore"):  # beyond float32 (float64 data): -inf, and the exact path is used
        f = np.float32(v)
    if float(f) > v:
        f = np.nextafter(f, np.float32(-np.inf))
    return f


class StreamingHistogram:
    """Equal-width histogram over a range that grows by power-of-two re-binning.

    Bin edges always lie on one lattice, ``origin + n * width`` (``origin``: the first value's
    minimum), and the width only ever doubles (a growth by ``2**j`` merges aligned groups of bins), so
    a value's bin and the final grid depend only on the first batch and the overall min / max, not on
    how the later rows were batched (calibration batch sizes, shards and the recipe choice's split
    pass give the same histogram). The price: bins up to twice as wide as an integer factor would give.

    Parameters
    ----------
    bins : int
        Number of bins (fixed for the life of the histogram), >= 8.

    Attributes
    ----------
    counts : numpy.ndarray, int64, shape (bins,)
        Number of values per bin.
    lo : float
        Left edge of bin 0 (float64), or None before the first value.
    width : float
        Bin width (float64, > 0).
    vmin, vmax : float
        Exact smallest / largest value added.
    """

    def __init__(self, bins: int = 2048):
        self.bins = int(bins)
        self.counts = np.zeros(self.bins, np.int64)
        self.lo: float | None = None
        self.width = 1.0
        #: the lattice: ``lo == origin + first * width`` (``first`` an int, exact)
        self.origin = 0.0
        self.first = 0
        self.vmin = math.inf
        self.vmax = -math.inf
        self._top = math.inf
        self._fast: tuple[np.float32, np.float32] | None = None

    # -- geometry -----------------------------------------------------------------------------
    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def edges(self) -> np.ndarray:
        """Bin edges, float64, shape (bins + 1,)."""
        lo = 0.0 if self.lo is None else self.lo
        return lo + self.width * np.arange(self.bins + 1, dtype=np.float64)

    def _init_range(self, mn: float, mx: float) -> None:
        span = mx - mn
        if span <= 0.0 or not math.isfinite(span):
            span = max(abs(mn), 1e-6) * 2.0**-10  # constant so far: any small positive width
        self.origin, self.first = float(mn), 0
        self.lo = mn
        self.width = span / (self.bins - 1)  # the maximum sits inside the last bin, with margin
        self._layout_changed()

    def _grow(self, mn: float, mx: float) -> None:
        """Double the bin width as often as needed so the values seen so far and ``[mn, mx]`` fit:
        bins merge in aligned groups of ``2**j`` and bin 0 moves to the coarser lattice point at or
        below the smallest value (bins outside that are empty and drop off); counts move exactly."""
        w, b, first = self.width, self.bins, self.first
        low, top = min(mn, self.vmin), max(mx, self.vmax)
        k = 1
        while True:
            start = self._floor_index(low, w * k)  # lattice index of the new bin 0, in units of w * k
            if self.origin + (start + b - 1) * (w * k) >= top:
                target = np.array([(first + j) // k - start for j in range(b)], dtype=object) \
                    if abs(first) + b >= 2**62 else (first + np.arange(b, dtype=np.int64)) // k - start
                target = np.asarray(target, dtype=np.int64)
                inside = (target >= 0) & (target < b)
                if not self.counts[~inside].any():
                    break
            k *= 2
        if k == 1 and start == first:
            return
        self.counts = np.bincount(target[inside], weights=self.counts[inside], minlength=b).astype(np.int64)
        self.first, self.width = start, w * k
        self.lo = self.origin + start * self.width
        self._layout_changed()

    def _floor_index(self, x: float, width: float) -> int:
        """The largest ``n`` with ``origin + n * width <= x`` (exact in float64 at the edges)."""
        n = math.floor((x - self.origin) / width)
        while self.origin + n * width > x:
            n -= 1
        while self.origin + (n + 1) * width <= x:
            n += 1
        return n

    # -- update -------------------------------------------------------------------------------
    def add(self, values: np.ndarray, mn: float, mx: float) -> None:
        """Add finite values.

        Parameters
        ----------
        values : numpy.ndarray, float32, 1-D, finite
            The values (not copied when already float32 and contiguous).
        mn, mx : float
            ``values.min()`` and ``values.max()`` (the caller computed them already).
        """
        if values.size == 0:
            return
        if self.lo is None:
            self._init_range(mn, mx)
        elif mn < self.lo or mx > self._top:
            self._grow(mn, mx)
        if mn < self.vmin:
            self.vmin = mn
        if mx > self.vmax:
            self.vmax = mx
        fast = self._fast
        k = kernels.for_array(values)
        if k is not None:  # same index arithmetic, one compiled pass
            if fast is not None and values.dtype == np.float32:
                k.bin_f32(values, fast[0], fast[1], self.counts)
            else:
                k.bin_f64(values, float(self.lo), float(self.width), self.counts)
            return
        if fast is None or values.dtype != np.float32:
            self._add_f64(values)
            return
        lo32, inv = fast
        for start in range(0, values.size, _CHUNK):
            chunk = values[start:start + _CHUNK]
            f, i = _buffers(chunk.size)
            np.subtract(chunk, lo32, out=f)
            np.multiply(f, inv, out=f)
            np.copyto(i, f, casting="unsafe")  # truncation; f >= 0 so this is floor
            self._fold_in(np.bincount(i, minlength=self.bins))

    def add_inside(self, k, values: np.ndarray) -> bool:
        """Add float32 values in one compiled pass when they are all finite and inside the bins (no growth);
        otherwise change nothing and return False (the caller scans them and calls :meth:`add`).

        Parameters
        ----------
        k : module
            The compiled loops (:func:`~workbench.core.calibration.observers.kernels.get`).
        values : numpy.ndarray, float32, 1-D, contiguous, non-empty
            Raw values (may hold NaN / Inf: then False).

        The same state as scanning the values (``kernels.scan``) and calling :meth:`add`: the same bin
        indices (``bin_f32``'s float32 arithmetic), ``vmin`` / ``vmax`` from the same order keys.
        """
        fast = self._fast
        if fast is None or self.lo is None:
            return False
        kmin, kmax, amax = k.bin_scan_f32(values, fast[0], fast[1], self.counts)
        mn, mx = kernels.key_floats(kmin, kmax, values.dtype)
        if amax >= kernels.EXPONENT_F32 or mn < self.lo or mx > self._top:
            k.bin_scan_f32(values, fast[0], fast[1], self.counts, -1)  # the same bins: taken out exactly
            return False
        if mn < self.vmin:
            self.vmin = mn
        if mx > self.vmax:
            self.vmax = mx
        return True

    def _layout_changed(self) -> None:
        """Cache the float32 offset / inverse width, or None when float32 would misplace bins."""
        self._top = self.lo + (self.bins - 1) * self.width
        lo32 = _f32_floor(self.lo)
        precise = (self.lo - float(lo32)) <= 1e-3 * self.width and 1.0 / self.width < 1e37
        self._fast = (lo32, np.float32(1.0 / self.width)) if precise else None

    def _add_f64(self, values: np.ndarray) -> None:
        """Slow exact path for ranges far from zero (float32 offsets would misplace bins)."""
        idx = np.floor((values.astype(np.float64) - self.lo) / self.width).astype(np.intp)
        np.clip(idx, 0, None, out=idx)
        self._fold_in(np.bincount(idx, minlength=self.bins))

    def _fold_in(self, c: np.ndarray) -> None:
        b = self.bins
        if c.size > b:  # float32 rounding of the very top values; they belong to the last bin
            c = c.copy()
            c[b - 1] += c[b:].sum()
        self.counts += c[:b]

    # -- merge / state --------------------------------------------------------------------------
    def merge(self, other: StreamingHistogram) -> None:
        """Add another histogram's counts.

        Aligned layouts (same width grid) merge exactly; otherwise each of ``other``'s bins is
        spread over this histogram's bins in proportion to the overlap (CDF interpolation,
        rounded so the total count is preserved exactly).
        """
        if other.lo is None:
            return
        if self.lo is None and other.bins == self.bins:
            self.lo, self.width, self.origin, self.first = other.lo, other.width, other.origin, other.first
            self.counts = other.counts.copy()
            self.vmin, self.vmax = other.vmin, other.vmax
            self._layout_changed()
            return
        if self.lo is None:  # another bin count: lay this histogram over other's range, then interpolate
            self._init_range(other.lo, other.lo + other.bins * other.width)
        o_top = other.lo + other.bins * other.width
        if other.lo < self.lo or o_top > self.lo + (self.bins - 1) * self.width:
            self._grow(min(other.lo, other.vmin), max(o_top, other.vmax))
        cdf_o = np.concatenate([[0.0], np.cumsum(other.counts, dtype=np.float64)])
        cdf_s = np.interp(self.edges, other.edges, cdf_o, left=0.0, right=cdf_o[-1])
        cdf_s = np.round(cdf_s).astype(np.int64)
        cdf_s[-1] = int(cdf_o[-1])
        self.counts += np.diff(cdf_s)
        self.vmin, self.vmax = min(self.vmin, other.vmin), max(self.vmax, other.vmax)

    def state(self) -> dict:
        """JSON-safe dict (ints and floats only)."""
        return {"bins": self.bins, "lo": self.lo, "width": self.width, "origin": self.origin, "first": self.first,
                "vmin": None if self.lo is None else self.vmin,
                "vmax": None if self.lo is None else self.vmax,
                "counts": self.counts.tolist()}

    def copy(self) -> StreamingHistogram:
        """``from_state(self.state())`` without the round trip through Python lists: the same fields, converted
        as :meth:`from_state` converts them, and a copy of the counts."""
        h = StreamingHistogram.__new__(StreamingHistogram)
        h.bins, h.counts = self.bins, self.counts.astype(np.int64, copy=True)
        h.lo = None if self.lo is None else float(self.lo)
        h.width, h.origin, h.first = float(self.width), float(self.origin), int(self.first)
        h.vmin = math.inf if self.lo is None else float(self.vmin)
        h.vmax = -math.inf if self.lo is None else float(self.vmax)
        h._top, h._fast = math.inf, None
        if h.lo is not None:
            h._layout_changed()
        return h

    @classmethod
    def from_state(cls, d: dict) -> StreamingHistogram:
        h = cls(int(d["bins"]))
        h.lo = None if d["lo"] is None else float(d["lo"])
        h.width = float(d["width"])
        # states written before the lattice was kept: the lattice starts at their bin 0
        h.origin = float(d.get("origin", h.lo if h.lo is not None else 0.0))
        h.first = int(d.get("first", 0))
        h.vmin = math.inf if d["vmin"] is None else float(d["vmin"])
        h.vmax = -math.inf if d["vmax"] is None else float(d["vmax"])
        h.counts = np.asarray(d["counts"], dtype=np.int64).reshape(h.bins)
        if h.lo is not None:
            h._layout_changed()
        return h

    @classmethod
    def from_cdf(cls, points: np.ndarray, cdf: np.ndarray, bins: int) -> StreamingHistogram:
        """Histogram of data known through its cumulative counts at sorted points.

        Parameters
        ----------
        points : numpy.ndarray, float64, shape (P,), non-decreasing
            ``points[0]`` is the smallest value, ``points[-1]`` the largest.
        cdf : numpy.ndarray, int, shape (P,), non-decreasing
            ``cdf[i]``: number of values below ``points[i]`` (``cdf[-1]`` = the total count).
        bins : int

        The bins span ``[points[0], points[-1]]`` as a first batch would. The count below every bin
        edge is interpolated linearly between the points; a run of equal points (a plateau of the
        map that produced them, e.g. Relu at 0 or a saturated Sigmoid) is a step: its values sit
        exactly at that point. Counts are rounded so the total is kept exactly.
        """
        h = cls(bins)
        pts = np.asarray(points, np.float64)
        c = np.asarray(cdf, np.float64)
        vmin, vmax = float(pts[0]), float(pts[-1])
        h._init_range(vmin, vmax)
        h.vmin, h.vmax = vmin, vmax
        step = pts[1:] > pts[:-1]
        first, last = np.concatenate([[True], step]), np.concatenate([step, [True]])
        xp = np.column_stack([pts[first], np.nextafter(pts[last], np.inf)]).ravel()
        fp = np.column_stack([c[first], c[last]]).ravel()
        below = np.round(np.interp(h.edges, xp, fp, left=0.0, right=c[-1])).astype(np.int64)
        below[0], below[-1] = 0, int(c[-1])
        h.counts = np.diff(below)
        return h

    # -- queries ------------------------------------------------------------------------------
    def cdf_at(self, t: np.ndarray) -> np.ndarray:
        """Number of values ``<= t`` (float64), linear within bins, clamped to the exact min/max."""
        e = np.clip(self.edges, self.vmin, self.vmax)  # no mass outside the exact min/max
        cdf = np.concatenate([[0.0], np.cumsum(self.counts, dtype=np.float64)])
        return np.interp(t, e, cdf, left=0.0, right=cdf[-1])

    def quantile(self, q: float) -> float:
        """The ``q`` quantile (0..1) with numpy's default ("linear") definition, within one bin.

        ``numpy.percentile`` interpolates between order statistics ``floor(r)`` and
        ``floor(r)+1`` with ``r = (N-1) q``; each order statistic is located in its bin (values
        assumed evenly spread inside a bin), so the result is within one bin width of numpy's.
        """
        return order_stat_quantile(self.counts, self.edges, q, self.vmin, self.vmax)

    def abs_quantile(self, q: float) -> float:
        """The ``q`` quantile of ``|x|`` (same definition as :meth:`quantile`), within one bin."""
        if self.vmin >= 0.0:
            return self.quantile(q)
        if self.vmax <= 0.0:
            return -self.quantile(1.0 - q)
        absmax = max(-self.vmin, self.vmax)
        # breakpoints: every original edge folded onto |x|; the folded CDF is linear between them
        ts = np.unique(np.clip(np.abs(self.edges), 0.0, absmax))
        ts = np.unique(np.concatenate([[0.0], ts, [absmax]]))
        mass = self.cdf_at(ts) - self.cdf_at(-ts)
        mass[0], mass[-1] = 0.0, self.total
        return order_stat_quantile(np.diff(mass), ts, q, 0.0, absmax)

    def abs_histogram(self, bins: int) -> tuple[np.ndarray, float]:
        """Histogram of ``|x|`` on ``bins`` equal bins over ``[0, absmax]`` (float64 counts).

        Folded from the signed histogram by CDF interpolation. Returns ``(counts, bin_width)``.
        """
        absmax = max(abs(self.vmin), abs(self.vmax), 0.0)
        if absmax == 0.0:
            h = np.zeros(bins)
            h[0] = self.total
            return h, 1.0
        ts = np.linspace(0.0, absmax, bins + 1)
        mass = self.cdf_at(ts) - self.cdf_at(-ts)
        mass[0], mass[-1] = 0.0, self.total
        h = np.diff(mass)
        return np.maximum(h, 0.0), absmax / bins



class HistogramObserver(Observer):
    """Base of the histogram observers: one :class:`StreamingHistogram` per tensor (or channel).

    ``observer_args["bins"]`` sets the bin count (default 2048). Per-channel keeps one histogram
    per channel (meant for weights: one update, C histograms); per-block is not supported.
    Subclasses implement :meth:`_range_from` (one histogram -> ``(rmin, rmax)``).
    """

    default_bins = DEFAULT_BINS

    def __init__(self, spec, *, axis=None, name="tensor"):
        super().__init__(spec, axis=axis, name=name)
        if self.granularity == Granularity.per_block:
            raise RecipeError(f"{name}: the {self.name} observer does not support per_block ranges.",
                              hint="Use the minmax observer for per_block (weight) quantization.")
        self.num_bins = int(spec.observer_args.get("bins", self.default_bins))
        lo, hi = BINS_RANGE
        if not lo <= self.num_bins <= hi:
            raise RecipeError(f"{name}: observer_args bins={self.num_bins} is out of range.",
                              hint=f"Use between {lo} and {hi} bins (default {DEFAULT_BINS}).")
        self._hists: list[StreamingHistogram] = (
            [StreamingHistogram(self.num_bins)] if self.granularity == Granularity.per_tensor else [])
        self._pending: list[np.ndarray] = []
        self._pending_n = 0
        self._pending_range = (math.inf, -math.inf)
        #: ``compute_range``'s last result (an MSE / Entropy range is a search over the bins; a job asks
        #: for it several times); dropped by every change of the histograms.
        self._range: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def hists(self) -> list[StreamingHistogram]:
        """The histograms (one per tensor, or per channel), with any buffered batches added."""
        self._flush()
        return self._hists

    @hists.setter
    def hists(self, value: list[StreamingHistogram]) -> None:
        self._flush()
        self._hists = value
        self._range = None

    def _observe(self, x: np.ndarray) -> None:
        self._range = None
        if self.granularity == Granularity.per_tensor:
            self._add_per_tensor(x)
            return
        ax = self._norm_axis(x.ndim)
        rows = np.moveaxis(x, ax, 0).reshape(x.shape[ax], -1)
        if not self._hists:
            self._hists = [StreamingHistogram(self.num_bins) for _ in range(rows.shape[0])]
        elif len(self._hists) != rows.shape[0]:
            raise CalibrationError(f"{self.tensor}: channel count changed between batches "
                                   f"({len(self._hists)} -> {rows.shape[0]}).",
                                   hint="Use per_tensor for tensors whose shape varies.")
        for h, row in zip(self._hists, rows, strict=True):
            got = self._finite_flat(row)
            if got is not None:
                h.add(_as_float(got[0]), got[1], got[2])

    def _add_per_tensor(self, x: np.ndarray) -> None:
        """Small batches are buffered (copied, at most ``_DEFER_TOTAL`` values) and binned together.

        Binning costs a dozen numpy calls whatever the size, so tiny tensors of small models
        would pay mostly call overhead; buffering keeps the order of the data (a large batch
        flushes the buffer first) and the memory bound. The first batch is never buffered: it sets
        the bin lattice, so the histogram's grid follows the first batch alone (calibration's first
        batch is sample 0 alone, its batch-size probe), not where buffering happened to stop,
        which moved with the batch size.
        """
        if x.size >= _DEFER_MAX and self._add_at_once(x):
            return
        got = self._finite_flat(x)
        if got is None:
            return
        flat, mn, mx = got
        flat = _as_float(flat)
        if flat.size >= _DEFER_MAX or self._hists[0].lo is None:
            self._flush()
            self._hists[0].add(flat, mn, mx)
            return
        self._pending.append(flat.copy())
        lo, hi = self._pending_range
        self._pending_range = (min(lo, mn), max(hi, mx))
        self._pending_n += flat.size
        if self._pending_n >= _DEFER_TOTAL:
            self._flush()

    def _add_at_once(self, x: np.ndarray) -> bool:
        """Scan and bin a large float32 batch in one compiled pass when the bins already cover it and it is all
        finite (:meth:`StreamingHistogram.add_inside`); False when it must take the usual path (scan, grow, bin),
        also while small batches wait in the buffer (the usual path decides when they are binned)."""
        flat = x.reshape(-1)
        if self._pending or flat.dtype != np.float32:
            return False
        k = kernels.for_array(flat)
        if k is None:
            return False
        if not self._hists[0].add_inside(k, flat):
            return False
        self.count += flat.size
        return True

    def _flush(self) -> None:
        if not self._pending:
            return
        vals = self._pending[0] if len(self._pending) == 1 else np.concatenate(self._pending)
        mn, mx = self._pending_range
        self._pending, self._pending_n, self._pending_range = [], 0, (math.inf, -math.inf)
        self._hists[0].add(vals, mn, mx)

    def compute_range(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.hists:
            return np.zeros((), np.float32), np.zeros((), np.float32)
        if self._range is None:
            pairs = [(0.0, 0.0) if h.lo is None else self._range_from(h) for h in self.hists]
            rmin = as_f32([p[0] for p in pairs])
            rmax = as_f32([p[1] for p in pairs])
            if self.granularity == Granularity.per_tensor:
                rmin, rmax = rmin.reshape(()), rmax.reshape(())
            self._range = (rmin, rmax)
        return self._range[0].copy(), self._range[1].copy()

    def _range_from(self, h: StreamingHistogram) -> tuple[float, float]:
        raise NotImplementedError

    def _merge(self, other: HistogramObserver) -> None:
        self._range = None
        if not other.hists:
            return
        if not self.hists:
            self.hists = [StreamingHistogram(self.num_bins) for _ in other.hists]
        if len(self.hists) != len(other.hists):
            raise CalibrationError(f"{self.tensor}: cannot merge observers with different channel counts.",
                                   hint="Merge only observers of the same tensor.")
        for a, b in zip(self.hists, other.hists, strict=True):
            a.merge(b)

    def _state(self) -> dict:
        return {"hists": [h.state() for h in self.hists]}

    def _keep_derived(self, source: Observer) -> None:
        self._range = source._range  # compute_range hands out copies, so the arrays can be shared

    def copy(self, spec=None) -> Observer:
        """:meth:`Observer.copy`; with the same spec, the histograms are copied directly instead of through
        :meth:`state` (2048 counts to a Python list and back, and the spec dumped and validated again): the
        recipe choice copies every observer of a variant for each model it scores (nudenet_320n: about 190 per
        write, 8 writes). The copy's state is the round trip's."""
        if spec is not None and spec != self.spec:
            return super().copy(spec)
        hists = self.hists  # buffered batches are binned first, as state() bins them
        twin = type(self)(self.spec, axis=self.axis, name=self.tensor)
        twin.count, twin.nonfinite, twin.batches = int(self.count), int(self.nonfinite), int(self.batches)
        twin._hists = [h.copy() for h in hists]
        twin._keep_derived(self)
        return twin

    def _load(self, data: dict) -> None:
        self.hists = [StreamingHistogram.from_state(d) for d in data["hists"]]


def order_stat_quantile(counts: np.ndarray, edges: np.ndarray, q: float, vmin: float, vmax: float) -> float:
    """``numpy.percentile``-style quantile from a histogram (counts may be fractional).

    Order statistic ``k`` (0-based) in bin ``j`` with ``m`` values before it in that bin is put at
    ``edges[j] + (m + 0.5) / n_j * (edges[j+1] - edges[j])``; the result interpolates order statistics ``floor(r)``
    and ``floor(r)+1``, ``r = (N-1) q``, and is clamped to ``[vmin, vmax]``.
    """
    cum = np.cumsum(counts, dtype=np.float64)
    n = cum[-1] if cum.size else 0.0
    if n <= 0:
        return 0.0
    r = (n - 1.0) * q if n >= 1 else 0.0
    k = np.floor(r)
    frac = r - k

    def stat(k: float) -> float:
        if k <= 0:
            return vmin
        if k >= n - 1:
            return vmax
        j = int(np.searchsorted(cum, k, side="right"))
        j = min(j, cum.size - 1)
        before = cum[j] - counts[j]
        pos = edges[j] + (k - before + 0.5) / max(counts[j], 1e-300) * (edges[j + 1] - edges[j])
        return float(min(max(pos, vmin), vmax))

    a = stat(k)
    return a if frac == 0 else a + frac * (stat(k + 1) - a)
