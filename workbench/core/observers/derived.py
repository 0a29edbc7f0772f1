"""Derived observers: the statistics of ``y = F(x)`` for an element-wise function ``F``, from x's observer.

When ``y`` is a fixed element-wise function of a tensor ``x`` that calibration observes anyway
(an element-wise cone, :mod:`workbench.core.observers.cones`: Sigmoid, Relu, ``x * Sigmoid(x)``,
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
  ``min x`` to ``max x``, both ends included: it holds every value ``F`` takes between them up to
  the curvature at an interior extremum times (span / GRID)**2, so it can only be wider than the
  observed one, by the gap between ``F``'s dip and the observed value nearest to it
  (nudenet_320n's 57 SiLU outputs and minilm_l6_v2's GELUs: see tests/test_derived_cones.py);
* a histogram of ``y`` is pushed forward bin by bin (:mod:`~workbench.core.observers.pushforward`).

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

from workbench.core.errors import CalibrationError
from workbench.core.external import materialize
from workbench.core.observers.base import Observer
from workbench.core.observers.cones import MONOTONIC, find_cones
from workbench.core.observers.histogram import HistogramObserver, StreamingHistogram
from workbench.core.observers.minmax import MinMaxObserver
from workbench.core.observers.pushforward import push_forward
from workbench.core.recipe import Granularity, QuantSpec

log = logging.getLogger(__name__)
#: Points F is evaluated at between min x and max x for the MinMax range of a non-monotonic F.
GRID = 4097
__all__ = ["GRID", "MONOTONIC", "Derivation", "Deriver", "find_derivations"]


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
    from workbench.core.observers import OBSERVERS

    cls = OBSERVERS.get(spec.observer)
    if cls is None:
        return False
    if issubclass(cls, MinMaxObserver):
        return spec.observer_args.get("averaging_constant") is None
    return issubclass(cls, HistogramObserver)


def _is_histogram(spec: QuantSpec) -> bool:
    from workbench.core.observers import OBSERVERS

    cls = OBSERVERS.get(spec.observer)
    return cls is not None and issubclass(cls, HistogramObserver)


def _can_derive(y: QuantSpec, x: QuantSpec) -> bool:
    if Granularity(y.granularity) != Granularity.per_tensor or Granularity(x.granularity) != Granularity.per_tensor:
        return False
    if _is_histogram(y):
        return _is_histogram(x)
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
        if x in direct and x in specs and _can_derive(specs[y], specs[x]):
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
        types = {vi.name: vi.type.tensor_type.elem_type for vi in list(g.value_info) + list(g.input)
                 + list(g.output) if vi.type.HasField("tensor_type")}
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
        so.log_severity_level = 3
        return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])

    def apply(self, observers: dict[str, Observer]) -> None:
        """Fill ``observers[d.tensor]`` from ``observers[d.source]`` for every derivation (in place).

        Raises
        ------
        CalibrationError
            onnxruntime fails to evaluate the derived nodes (its reason is in the message).
        """
        if not self.derivations:
            return
        feed, mass = {}, {}
        for k, d in enumerate(self.derivations.values()):
            src, dst = observers[d.source], observers[d.tensor]
            dst.count, dst.nonfinite, dst.batches = src.count, src.nonfinite, src.batches
            pts, mass[d.tensor] = _points(src, isinstance(dst, HistogramObserver), d.sign)
            feed[f"x{k}"] = pts.astype(self._dtypes[d.tensor])
        try:
            values = self._session.run(None, feed)
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise CalibrationError(f"onnxruntime cannot evaluate the derived ranges: {str(exc).strip()[:400]}",
                                   hint="Set workbench.core.calibrate.DERIVE = False to observe every "
                                        "tensor directly.") from None
        for d, fy in zip(self.derivations.values(), values, strict=True):
            dst = observers[d.tensor]
            if dst.count == 0:
                continue
            big = float(np.finfo(np.float32).max)
            fy = np.nan_to_num(fy.astype(np.float64), nan=0.0, posinf=big, neginf=-big)
            _fill(dst, fy, mass[d.tensor], d.sign)


def _count(d: Derivation, observers: dict[str, Observer]) -> int:
    """How many points :func:`_points` gives for ``d`` once its source has seen data."""
    src, dst = observers[d.source], observers[d.tensor]
    if isinstance(dst, HistogramObserver):
        return src.num_bins + 1
    return GRID if d.sign == 0 else 2


def _fill(dst: Observer, fy: np.ndarray, mass: np.ndarray | None, sign: int) -> None:
    """Set ``dst``'s state from F at the points of :func:`_points`."""
    if sign == 1:
        # onnxruntime's saturating kernels (Sigmoid, Tanh) wiggle in the last ulp: keep F(vmin) and
        # F(vmax) as computed, make the points in between non-decreasing and inside them
        fy = np.clip(np.maximum.accumulate(fy), fy[0], max(fy[0], fy[-1]))
        if mass is None:
            dst._min, dst._max = float(fy[0]), float(fy[-1])
        else:
            dst.hists = [StreamingHistogram.from_cdf(fy, mass, dst.num_bins)]
    elif mass is None:
        dst._min, dst._max = float(fy.min()), float(fy.max())
    else:
        dst.hists = [push_forward(fy, mass, dst.num_bins)]


def _points(src: Observer, histogram: bool, sign: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Where to evaluate F, and the mass there for a histogram ``y``.

    A histogram ``y``: the source's bin edges clipped to its min / max, with the counts below each
    edge (``sign`` +1: mapped CDF) or per bin (otherwise: push-forward). A MinMax ``y``: the
    source's ``[min, max]``, or ``GRID`` points across it when F is not known to be monotonic.
    Empty sources: one dummy point.
    """
    if src.count == 0:
        return np.zeros(1), None
    if isinstance(src, HistogramObserver):
        h = src.hists[0]
        if histogram:
            edges = np.clip(h.edges, h.vmin, h.vmax)
            return edges, (np.concatenate([[0], np.cumsum(h.counts)]) if sign == 1 else h.counts)
        lo, hi = h.vmin, h.vmax
    else:
        lo, hi = (float(v) for v in src.compute_range())
    if sign == 0:
        return np.linspace(lo, hi, GRID), None
    return np.array([lo, hi]), None
