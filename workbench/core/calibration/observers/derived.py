"""Derived observers: the statistics of ``y = F(x)`` for an element-wise function ``F``, from x's observer.

When ``y`` is a fixed element-wise function of a tensor ``x`` that calibration observes anyway
(an element-wise cone, :mod:`workbench.core.calibration.observers.cones`: Sigmoid, Relu, ``x * Sigmoid(x)``,
the Erf GELU and each of its intermediates, ``x + c``, ...), ``y`` need not be fetched from
onnxruntime. For a non-decreasing ``F``:

* ``min(y) = F(min x)`` and ``max(y) = F(max x)``, so a MinMax range of ``y`` is exact;
* the distribution of ``y`` is that of ``x`` pushed through ``F``: the number of ``y`` values in
  ``[F(a), F(b))`` is the number of ``x`` values in ``[a, b)``. The histogram of ``y`` (its own
  equal-width bins over ``[F(vmin), F(vmax)]``) is interpolated from x's cumulative counts placed
  at ``F(edges of x)`` -- exact at every mapped edge, linear inside a mapped bin, the same CDF
  interpolation :meth:`StreamingHistogram.merge` uses for misaligned layouts. Percentiles then
  lie within about one bin of numpy's exact ones (on nudenet_320n closer than the directly
  observed ones: mean error 0.22 vs 0.46 of span/2048); Entropy / MSE thresholds can move where
  their error curve is flat (nudenet_320n: SQNR of the 57 derived tensors on their own values
  53.307 vs 53.310 dB on average, each within 0.17 dB).

For any other ``F`` (SiLU dips to -0.2785 at x = -1.2785, GELU to -0.1700 at x = -0.7518):

* a MinMax range of ``y`` is the smallest and largest ``F`` on a grid of ``GRID`` points from
  ``min x`` to ``max x``, both ends included, refined ``REFINE`` times around the extremes found
  (``ZOOM`` points between the grid neighbours each time, so a dip narrower than the grid spacing
  is not missed: Tanh(x)**2 over [-3000, 3000]). It holds every value ``F`` takes between them, so
  it can only be wider than the observed one, by the gap between ``F``'s dip and the observed
  value nearest to it (nudenet_320n's 57 SiLU outputs: within 5e-7 of the span);
* a histogram of ``y`` is pushed forward bin by bin (:mod:`~workbench.core.calibration.observers.pushforward`),
  with the bins holding a refined extreme split there, so its value is an edge.

Fetching ``y`` as an extra graph output is what costs: it keeps onnxruntime from fusing the
operators (Sigmoid * Mul -> QuickGelu, the Erf chain -> Gelu), and onnxruntime reorders every
fetched Conv-layout tensor out of its blocked NCHWc layout and hands it over: nudenet_320n spends
a fifth more kernel time with every tensor fetched. ``F`` is evaluated by onnxruntime itself (one
small session holding a copy of every derived cone, with its attributes and constant inputs), so
``F(min x)`` is the value the model's own kernels give for that element. One caveat: onnxruntime's
Sigmoid / Tanh kernels are not monotonic in the last ulp where they saturate (Tanh returns
-1.0000001 for some inputs and -1.0 for smaller ones), so there a derived MinMax bound can differ
from the directly observed one by an ulp or two; elsewhere it is identical (tests/test_derived.py).

Limits: only per-tensor float32 specs; a MinMax ``y`` needs an exact ``min``/``max`` of ``x``
(MinMax without averaging, or any histogram observer), a histogram ``y`` needs a histogram observer
on ``x``. Non-finite values of ``x`` are counted as non-finite in ``y`` too (``F(+-inf)`` is left
out of y's range even where it is finite, as x's infinities are left out of x's).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from workbench.core.calibration.observers import OBSERVERS
from workbench.core.calibration.observers.base import Observer
from workbench.core.calibration.observers.cones import MONOTONIC, find_cones
from workbench.core.calibration.observers.histogram import HistogramObserver, StreamingHistogram
from workbench.core.calibration.observers.minmax import MinMaxObserver
from workbench.core.calibration.observers.pushforward import push_forward
from workbench.core.errors import CalibrationError
from workbench.core.graph.index import elem_types
from workbench.core.io.external import materialize
from workbench.core.io.ort_session import QUIET_LOG
from workbench.core.recipe.spec import Granularity, QuantSpec

log = logging.getLogger(__name__)
#: Points F is evaluated at between min x and max x for the MinMax range of a non-monotonic F.
GRID = 4097
#: Zoom rounds around the smallest / largest F found, and points per round (see Deriver.apply).
REFINE, ZOOM = 3, 129
__all__ = ["GRID", "MONOTONIC", "Derivation", "Deriver", "can_derive", "exact_range", "find_derivations", "is_histogram"]


@dataclass(frozen=True)
class Derivation:
    """``tensor = F(source)`` through ``nodes`` (graph order); ``sign`` +1 / -1 when F is non-decreasing /
    non-increasing by the operator specs, 0 otherwise. The observer of ``tensor`` is built from ``source``'s."""

    tensor: str
    source: str
    nodes: tuple[onnx.NodeProto, ...]
    sign: int = 1


def _exact_extremes(spec: QuantSpec) -> bool:
    """True when the observer keeps the exact min / max of the data."""
    cls = OBSERVERS.get(spec.observer)
    if cls is None:
        return False
    if issubclass(cls, MinMaxObserver):
        return spec.observer_args.get("averaging_constant") is None
    return issubclass(cls, HistogramObserver)


def is_histogram(spec: QuantSpec) -> bool:
    """True when ``spec``'s observer keeps a histogram (percentile, entropy, mse, ...)."""
    cls = OBSERVERS.get(spec.observer)
    return cls is not None and issubclass(cls, HistogramObserver)


def can_derive(y: QuantSpec, x: QuantSpec) -> bool:
    """True when an observer of spec ``y`` can be built from one of spec ``x`` (derived or merged):
    both per-tensor; a histogram needs a histogram, a MinMax range exact extremes on both sides."""
    if Granularity(y.granularity) != Granularity.per_tensor or Granularity(x.granularity) != Granularity.per_tensor:
        return False
    if is_histogram(y):
        return is_histogram(x)
    return _exact_extremes(y) and _exact_extremes(x)


def find_derivations(proto: onnx.ModelProto, specs: dict[str, QuantSpec], direct: set[str]) -> dict[str, Derivation]:
    """Tensors of ``specs`` whose observer can be derived from a directly observed tensor.

    Parameters
    ----------
    proto : onnx.ModelProto
        The prepared model (main graph only; shape inference filled ``value_info``).
    specs : dict[str, QuantSpec]
        Tensor -> spec of every tensor calibration observes.
    direct : set of str
        Tensors that will be observed from their values (fetched or fed); sources must be among them.

    Returns
    -------
    dict[str, Derivation]
        Keyed by the derived tensor: its element-wise cone's root is observed with a compatible
        spec. A tensor that is a model output is never derived (fetching it costs nothing extra).
    """
    outputs = {o.name for o in proto.graph.output}
    out: dict[str, Derivation] = {}
    for y, cone in find_cones(proto, [t for t in specs if t not in outputs]).items():
        x = cone.root
        if x in direct and x in specs and can_derive(specs[y], specs[x]):
            out[y] = Derivation(y, x, cone.nodes, cone.sign)
    return out


class Deriver:
    """Builds derived observers at the end of calibration; its onnxruntime session is made up front.

    Parameters
    ----------
    proto : onnx.ModelProto
        The prepared model the derivations were found in.
    derivations : dict[str, Derivation]
        From :func:`find_derivations`. When onnxruntime refuses the small model of the derived
        nodes (an operator without a kernel for the tensor's dtype) or fails a trial run of it,
        :attr:`derivations` is emptied with a logged warning, so those tensors are fetched
        instead: calibration never fails at the end because of a derivation.
    observers : dict[str, Observer], optional
        The observers the derivations will read and fill: the trial run then uses the point
        counts :meth:`apply` will evaluate (2, ``GRID`` or the source's bins + 1).
    """

    def __init__(self, proto: onnx.ModelProto, derivations: dict[str, Derivation],
                 observers: dict[str, Observer] | None = None):
        self.derivations = dict(derivations)
        self._session: ort.InferenceSession | None = None
        self._dtypes: dict[str, np.dtype] = {}
        if not self.derivations:
            return
        try:
            self._session = self._build(proto)
            if observers is not None:
                self._session.run(None, {f"x{k}": np.zeros(_count(d, observers), self._dtypes[d.tensor])
                                         for k, d in enumerate(self.derivations.values())})
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            log.warning("Derived observers disabled (onnxruntime cannot run the derived nodes: %s); "
                        "their tensors are observed directly.", str(exc).strip()[:200])
            self.derivations = {}

    def _build(self, proto: onnx.ModelProto) -> ort.InferenceSession:
        """One model holding a copy of every derived cone, input ``x{k}`` / output ``y{k}`` of shape [P{k}].

        Each derivation has a dim name of its own: onnxruntime plans buffers as if equal symbolic
        dims were equal, and the point counts differ (2, a grid, bin edges).
        """
        g = proto.graph
        inits = {t.name: t for t in g.initializer}
        types = elem_types(g)
        nodes, ins, outs, consts = [], [], [], []
        for k, d in enumerate(self.derivations.values()):
            elem = types[d.source]
            names = {d.source: f"x{k}", d.tensor: f"y{k}"}
            for i, node in enumerate(d.nodes):
                n = onnx.NodeProto()
                n.CopyFrom(node)
                n.name = f"derived_{k}_{i}"
                del n.input[:], n.output[:]
                for j, name in enumerate(node.input):
                    if name in inits:  # small constants: inline, also when kept in the user's data file
                        t = onnx.TensorProto()
                        t.CopyFrom(materialize(inits[name]))
                        t.name = f"c{k}_{i}_{j}"
                        consts.append(t)
                        name = t.name
                    n.input.append(names.get(name, name) if name else "")
                names.setdefault(node.output[0], f"v{k}_{i}")
                n.output.append(names[node.output[0]])
                nodes.append(n)
            ins.append(helper.make_tensor_value_info(f"x{k}", elem, [f"P{k}"]))
            outs.append(helper.make_tensor_value_info(f"y{k}", elem, [f"P{k}"]))
            self._dtypes[d.tensor] = helper.tensor_dtype_to_np_dtype(elem)
        m = helper.make_model(helper.make_graph(nodes, "derived", ins, outs, consts),
                              opset_imports=list(proto.opset_import))
        m.ir_version = proto.ir_version
        so = ort.SessionOptions()
        so.log_severity_level = QUIET_LOG
        # one thread: the cones run once on a few points each; a pool's second thread only cost its start
        # and its spinning after the run (minilm_l6_v2: 0.008-0.017 s of CPU on other threads, for nothing)
        so.intra_op_num_threads = 1
        return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])

    def apply(self, observers: dict[str, Observer]) -> None:
        """Fill ``observers[d.tensor]`` from ``observers[d.source]`` for every derivation (in place).

        F is evaluated at the points of :func:`_points`; for an F not known to be monotonic (and for
        one that overflows float32 at the points) also around the smallest and largest value found,
        ``REFINE`` times zooming in (:meth:`_extremes`), so a dip or bump narrower than the grid
        spacing is not missed.

        Raises
        ------
        CalibrationError
            onnxruntime fails to evaluate the derived nodes (its reason is in the message).
        """
        if not self.derivations:
            return
        items = list(self.derivations.values())
        pts, counts, signs = [], [], []
        for d in items:
            src, dst = observers[d.source], observers[d.tensor]
            dst.count, dst.nonfinite, dst.batches = src.count, src.nonfinite, src.batches
            p, c = _points(src, isinstance(dst, HistogramObserver), d.sign)
            pts.append(p.astype(self._dtypes[d.tensor]))
            counts.append(c)
            signs.append(d.sign)
        fys = self._eval(pts)
        for k in range(len(items)):  # a MinMax y whose F overflows at [min, max]: look at a grid instead
            if counts[k] is None and signs[k] != 0 and not np.all(np.isfinite(fys[k])):
                signs[k] = 0
                pts[k] = np.linspace(pts[k][0], pts[k][-1], GRID).astype(pts[k].dtype)
        redo = [k for k in range(len(items)) if pts[k].size != fys[k].size]
        if redo:
            fresh = self._eval([pts[k] if k in redo else pts[k][:1] for k in range(len(items))])
            for k in redo:
                fys[k] = fresh[k]
        extremes = self._extremes(pts, fys, signs, [observers[d.tensor].count > 0 for d in items])
        for k, d in enumerate(items):
            dst = observers[d.tensor]
            if dst.count:
                _fill(dst, pts[k].astype(np.float64), fys[k], counts[k], signs[k], extremes.get(k))

    def _eval(self, pts: list[np.ndarray]) -> list[np.ndarray]:
        """F of every derivation at its points (flattened float64: a constant of shape [1, 1, 1] adds axes)."""
        try:
            values = self._session.run(None, {f"x{k}": p for k, p in enumerate(pts)})
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise CalibrationError(f"onnxruntime cannot evaluate the derived ranges: {str(exc).strip()[:400]}",
                                   hint="Set workbench.core.calibration.calibrate.DERIVE = False to observe every "
                                        "tensor directly.") from None
        return [np.asarray(v, np.float64).reshape(-1) for v in values]

    def _extremes(self, pts, fys, signs, active) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """``k -> (x, F(x))`` at the smallest and largest F found by zooming in ``REFINE`` times on the
        grid neighbours of the current extremes (``ZOOM`` points each), for every non-monotonic F."""
        todo = [k for k in range(len(pts)) if signs[k] == 0 and active[k] and pts[k].size > 2]
        best: dict[int, list[tuple[float, float, float, float]]] = {}  # per k: [(a, b, x, fx)] for min, max
        for k in todo:
            p, f = pts[k].astype(np.float64), np.where(np.isfinite(fys[k]), fys[k], np.nan)
            if np.all(np.isnan(f)):
                continue
            best[k] = [_bracket(p, i, f[i]) for i in (int(np.nanargmin(f)), int(np.nanargmax(f)))]
        for _ in range(REFINE):
            if not best:
                break
            feed = [pts[k][:1] for k in range(len(pts))]
            for k, brs in best.items():
                feed[k] = np.concatenate([np.linspace(a, b, ZOOM) for a, b, _x, _f in brs]).astype(pts[k].dtype)
            out = self._eval(feed)
            for k, brs in best.items():
                xs = feed[k].astype(np.float64)
                for j, (pick, better) in enumerate(((np.nanargmin, np.less), (np.nanargmax, np.greater))):
                    seg_x, seg_f = xs[j * ZOOM:(j + 1) * ZOOM], out[k][j * ZOOM:(j + 1) * ZOOM]
                    seg_f = np.where(np.isfinite(seg_f), seg_f, np.nan)
                    if np.all(np.isnan(seg_f)):
                        continue
                    i = int(pick(seg_f))
                    if better(seg_f[i], brs[j][3]):
                        brs[j] = _bracket(seg_x, i, seg_f[i])
        return {k: (np.array([b[2] for b in brs]), np.array([b[3] for b in brs])) for k, brs in best.items()}


def _bracket(p: np.ndarray, i: int, fx: float) -> tuple[float, float, float, float]:
    """``(left neighbour, right neighbour, x, F(x))`` of point ``i`` of the sorted points ``p``."""
    return float(p[max(i - 1, 0)]), float(p[min(i + 1, p.size - 1)]), float(p[i]), float(fx)


def _count(d: Derivation, observers: dict[str, Observer]) -> int:
    """How many points :func:`_points` gives for ``d`` once its source has seen data."""
    src, dst = observers[d.source], observers[d.tensor]
    if isinstance(dst, HistogramObserver):
        return src.num_bins + 1
    return GRID if d.sign == 0 else 2


def _fill(dst: Observer, x: np.ndarray, fy: np.ndarray, counts: np.ndarray | None, sign: int,
          extremes: tuple[np.ndarray, np.ndarray] | None) -> None:
    """Set ``dst``'s state from F at the points ``x`` of :func:`_points` (plus refined ``extremes``).

    Values F sends past the float32 range (it overflows, as ``x * x`` does for |x| > 1.8e19) are
    non-finite in the real tensor too: a histogram counts their bins as non-finite; a MinMax range
    keeps the finite values only.
    """
    finite = np.isfinite(fy)
    if not finite.all():
        log.warning("Calibration: %s overflows float32 for part of its input's range (inputs near 1e19 or "
                    "more?); its range is taken from the finite values. Check the calibration data, or set "
                    "workbench.core.calibration.calibrate.DERIVE = False to observe it directly.", dst.tensor)
    if sign == 1 and finite.all():
        # onnxruntime's saturating kernels (Sigmoid, Tanh) wiggle in the last ulp: keep F(vmin) and
        # F(vmax) as computed, make the points in between non-decreasing and inside them
        fy = np.clip(np.maximum.accumulate(fy), fy[0], max(fy[0], fy[-1]))
        if counts is None:
            dst._min, dst._max = float(fy[0]), float(fy[-1])
        else:
            dst.hists = [StreamingHistogram.from_cdf(fy, np.concatenate([[0], np.cumsum(counts)]), dst.num_bins)]
        return
    if counts is None:
        vals = fy[finite] if extremes is None else np.concatenate([fy[finite], extremes[1][np.isfinite(extremes[1])]])
        dst._min, dst._max = (float(vals.min()), float(vals.max())) if vals.size else (0.0, 0.0)
        return
    m = np.asarray(counts, np.float64)
    if extremes is not None:  # split the bins holding a dip / bump at it, so its value is an edge
        for xe, fe in zip(*extremes, strict=True):
            j = int(np.searchsorted(x, xe))
            if 0 < j < x.size and x[j - 1] < xe < x[j] and np.isfinite(fe):
                left = m[j - 1] * (xe - x[j - 1]) / (x[j] - x[j - 1])
                m = np.concatenate([m[:j - 1], [left, m[j - 1] - left], m[j:]])
                x, fy = np.insert(x, j, xe), np.insert(fy, j, fe)
    bad = ~(np.isfinite(fy[:-1]) & np.isfinite(fy[1:]))
    if bad.any():
        lost = int(round(float(m[bad].sum())))
        dst.nonfinite += lost
        dst.count -= lost
        m = np.where(bad, 0.0, m)
        fy = np.where(np.isfinite(fy), fy, 0.0)
    dst.hists = [push_forward(fy, m, dst.num_bins)]


def exact_range(obs: Observer) -> tuple[float, float]:
    """The exact smallest and largest value a per-tensor observer saw (a histogram's ``vmin`` /
    ``vmax``, a MinMax observer's range); meaningful for specs :func:`can_derive` accepts."""
    if isinstance(obs, HistogramObserver):
        h = obs.hists[0]
        return float(h.vmin), float(h.vmax)
    lo, hi = obs.compute_range()
    return float(lo), float(hi)


def _points(src: Observer, histogram: bool, sign: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Where to evaluate F, and the mass there for a histogram ``y``.

    A histogram ``y``: the source's bin edges clipped to its min / max, with its counts per bin. A MinMax ``y``: the
    source's ``[min, max]``, or ``GRID`` points across it when F is not known to be monotonic.
    Empty sources: one dummy point.
    """
    if src.count == 0:
        return np.zeros(1), None
    if histogram and isinstance(src, HistogramObserver):
        h = src.hists[0]
        return np.clip(h.edges, h.vmin, h.vmax), h.counts
    lo, hi = exact_range(src)
    if sign == 0:
        return np.linspace(lo, hi, GRID), None
    return np.array([lo, hi]), None
