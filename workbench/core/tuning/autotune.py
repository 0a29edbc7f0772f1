"""Automatic mixed precision: keep as much int8 as possible while a task metric holds.

Procedure (one calibration, then only quantize + evaluate runs, each reusing the cached ranges):

1. quantize with the recipe, measure the metric on the eval data against the float model;
2. rank units by the noise they add (:mod:`workbench.core.analysis.sensitivity`, one analysis pass); with
   ``rank="e2e"`` the first ``e2e_candidates`` of that order are re-ranked by the task metric measured
   with each one promoted alone (one quantize + evaluate run per candidate), since the local SQNR
   does not say which rounding the task metric notices;
3. walk the ladder of levels (``promote_to``, default int16 activations, then float) over that order,
   accepting a promotion only when the metric does not fall below the best point so far
   (:mod:`workbench.core.tuning.walk`), so the accepted path never gets worse as it promotes (a
   level below the last is first measured on every unit at once, and once the target holds the
   promotions it does not need are undone while it still holds);
   a SmoothQuant recipe is re-smoothed per trial from ranges measured once, units in float unsmoothed
   (:mod:`workbench.core.tuning.smoothing`);
4. quantize the tuned recipe once more with ranges calibrated for it alone, the model ``quantize --recipe``
   writes (byte for byte: the cached ranges were fetched beside other recipes' tensors, and onnxruntime fuses
   the float model by which tensors are fetched, so on digits_transformer 3 of 29 int16 scales of the cached
   model differed by one float32 ulp), and score it (the metric after: 45.6684 there, its trial 45.6674);
5. return the recipe edit (overrides, exclusions), the metric before/after, and every measured point
   with its weight memory and bit operations (:class:`CurvePoint`; sizes from the plan with
   :mod:`workbench.core.analysis.cost`, no extra inference), those on the walk's path and those on the
   Pareto front of metric against weight bytes and BOPs (:mod:`workbench.core.tuning.front`; BOPs at
   the widths the written file reads each input at, 16 x 8 for int16 activations with 8-bit weights, or
   measured latency with ``latency=True``);
6. with ``speed_check``, time the pick against the float model and prefer a point within target that is
   faster (:mod:`workbench.core.tuning.speed`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from workbench.core.analysis.cost import (
    CostReport,
    data_sample,
    model_cost,
    plan_bits,
    with_bits,
)
from workbench.core.analysis.evaluate import check_metric_data, concat_rows, fmt_metric
from workbench.core.analysis.executors import Executor, InlineExecutor
from workbench.core.analysis.metrics import METRICS, REF_PREFIX, load_metric
from workbench.core.analysis.sensitivity import local_sensitivity
from workbench.core.calibration.calibrate import CalibrationResult
from workbench.core.data.finite import finite_rows
from workbench.core.data.loader import open_data_source
from workbench.core.errors import DataError, ModelError, RecipeError, WorkbenchError
from workbench.core.model.load import load_model
from workbench.core.pipeline.analyze import analyze
from workbench.core.pipeline.latency_check import MIN_FLOAT_S
from workbench.core.pipeline.quantize import quantize
from workbench.core.progress import CancelToken, ProgressFn, no_progress
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import NodeSettings, PartialSpec
from workbench.core.runtime.latency import LatencyComparison, compare
from workbench.core.runtime.session import make_session
from workbench.core.tuning.front import front_cost, pareto_indices
from workbench.core.tuning.resolution import MetricResolution, Score, below_resolution, measure_resolution
from workbench.core.tuning.smoothing import SmoothedTrials, without_smoothing
from workbench.core.tuning.speed import SpeedCheck, check_speed
from workbench.core.tuning.walk import demote, walk
from workbench.core.wording import count

log = logging.getLogger(__name__)

def load_score(metric: str, *, allow_code: bool = False, output: str | None = None) -> Score:
    """``score(quant_outputs, float_outputs, labels)`` from a metric of :mod:`workbench.core.analysis.metrics`.

    ``metric`` is a built-in name (top1, cosine, output_sqnr; ``sqnr`` is an alias) or a ``.py`` file
    defining ``metric(outputs, batch) -> float`` (only with ``allow_code``). The metric's ``batch``
    holds the labels (``gt_*``) and the float outputs under ``"ref:" + name``. ``output``: the model
    output the built-in metrics read (they read the first one; this one is put first), default the
    first output.

    Raises
    ------
    DataError
        Unknown metric, missing file, or a file without ``allow_code``.
    """
    fn = load_metric(metric, allow_code=allow_code)

    def score(q: dict, f: dict, labels: dict) -> float:
        if output is not None and output in q:
            q = {output: q[output], **q}
        batch = dict(labels)
        batch.update({REF_PREFIX + k: v for k, v in f.items()})
        try:
            return float(fn(q, batch))
        except DataError:
            raise
        except Exception as exc:  # noqa: BLE001 - user metric code
            raise DataError(f"The metric failed ({exc.__class__.__name__}: {exc}).",
                            hint="Fix the metric function; it gets (outputs dict, batch dict) and returns a "
                                 "number.") from None

    return score


@dataclass
class EvalSet:
    """Eval feeds, labels (``gt_*`` arrays) and the float model's outputs, computed once."""

    feeds: list[dict[str, np.ndarray]]
    labels: dict[str, np.ndarray]
    float_outputs: dict[str, np.ndarray]


def run_outputs(proto, feeds: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Run ``proto`` on every feed; outputs concatenated along axis 0 by output name."""
    sess = make_session(proto)
    names = [o.name for o in sess.get_outputs()]
    parts: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for feed in feeds:
        for n, v in zip(names, sess.run(names, feed), strict=True):
            parts[n].append(np.asarray(v))
    hint = ("autotune scores a task metric over the whole eval set: give eval rows of one shape (pad the "
            "sequences); `analyze` and `sweep` rank the units on rows of any shape.")
    return {n: concat_rows(f"output {n!r}", v, hint) for n, v in parts.items()}


def make_eval_set(model, data: Any, samples: int | None = None, metric: str | Score | None = None,
                  output: str | None = None) -> EvalSet:
    """The eval rows (batches of one row, NaN / Inf rows left out, at most ``samples``), their ``gt_*``
    labels and the float model's outputs.

    ``metric``: a built-in metric name (top1, cosine, output_sqnr, sqnr) whose labels are checked first
    (:func:`workbench.core.analysis.evaluate.check_metric_data`: a ``gt_label`` missing, of another
    length than the input rows, or not class indices; ``output``, the model output the metric reads, its
    first when None); a function or None is not checked.

    Raises
    ------
    DataError
        The data does not fit the model, or its labels cannot be scored by ``metric`` (one line naming
        the file and the array), before the float model runs.
    """
    opened = open_data_source(data, model)
    if isinstance(metric, str) and (metric in METRICS or metric == "sqnr"):
        check_metric_data(metric, model, opened, output=output)  # a short gt_label was paired with the first rows
    source = finite_rows(opened)  # samples with NaN / Inf inputs are left out
    feeds, kept = [], []
    for idx, feed in source.indexed_batches(1, samples):
        feeds.append(feed)
        kept += idx
    if source.note():
        log.warning("%s", source.note())
    n_all = source.num_samples()
    labels = {k: np.asarray(v)[kept] if len(v) == n_all else np.asarray(v)[:len(feeds)]
              for k, v in source.labels().items() if k.startswith("gt_")}
    return EvalSet(feeds, labels, run_outputs(model.proto, feeds))


@dataclass
class CurvePoint:
    """One measured recipe of :func:`autotune`.

    Unpacks (and indexes) as the former 3-tuple ``(promoted, metric, fraction_int8)``, so
    ``for k, m, frac in result.curve`` keeps working.

    Attributes
    ----------
    promoted : int
        Units changed from the recipe as given (promoted to wider activations or to float, or given
        int4 weights).
    metric : float
        Task metric of that recipe on the eval data.
    fraction_int8 : float
        Fraction of the plan's quantized units left in 8 bits, ``1 - promoted / units``.
    weight_bytes : int | None
        Constant weight + bias memory of the Conv/ConvTranspose/MatMul/Gemm nodes in bytes (rounded up),
        from :func:`workbench.core.analysis.cost.model_cost`: weights at the plan's weight bits, biases at 32,
        float nodes at 32. None when the cost could not be computed.
    bops : int | None
        Bit operations ``sum(MACs * b_weight * b_activation)`` of the same nodes (Baskin et al. 2018;
        see :mod:`workbench.core.analysis.cost`) at the widths the written file reads each input at
        (:func:`plan_cost`: a16w8 16 x 8, float 32 x 32, each input on its tensor's grid; ``cost`` of the
        written file counts the same), nodes with unknown shapes left out; the Pareto front's cost when
        ``latency`` is not measured.
    latency : float | None
        With ``autotune(latency=True)``: this recipe's model / the float model, a low percentile of alternating
        runs in onnxruntime at 1 thread on the first eval row (:func:`workbench.core.runtime.latency.compare`,
        onnxruntime's default optimisations, so QDQ pairs run as integer kernels; below 1.0 it is
        faster). None when not measured.
    levels : dict[str, str]
        Each promoted unit (node name) and its level ("int16" / "uint16" activations, or "float").
    accepted : bool
        On the walk's path (:mod:`workbench.core.tuning.walk`): its metric is not below any earlier path point.
    pareto : bool
        On the Pareto front of metric against weight bytes and latency (BOPs when not measured;
        :mod:`workbench.core.tuning.front`).
    trial : int
        Order of measurement, 0 for the recipe as given.
    step : str
        What the walk tried there ("ceiling: 120 units to int16", "8 units to float", "trim: 4 of 8 units
        to float", "2 units back to int16"; :mod:`workbench.core.tuning.walk`); "" when not from a walk.
    """

    promoted: int
    metric: float
    fraction_int8: float
    weight_bytes: int | None = None
    bops: int | None = None
    levels: dict[str, str] = field(default_factory=dict)
    accepted: bool = True
    pareto: bool = False
    trial: int = 0
    latency: float | None = None
    step: str = ""

    def __iter__(self):
        return iter((self.promoted, self.metric, self.fraction_int8))

    def __getitem__(self, i):
        return (self.promoted, self.metric, self.fraction_int8)[i]

    def count(self, level: str) -> int:
        """Units promoted to ``level``."""
        return sum(1 for lv in self.levels.values() if lv == level)

    def to_json(self) -> dict:
        return {"trial": self.trial, "step": self.step, "promoted": self.promoted, "metric": self.metric,
                "fraction_int8": self.fraction_int8, "weight_bytes": self.weight_bytes, "bops": self.bops,
                "latency": self.latency, "accepted": self.accepted, "pareto": self.pareto,
                "levels": {lv: sorted(n for n, v in self.levels.items() if v == lv)
                           for lv in dict.fromkeys(self.levels.values())}}


def _float_cost(model, data: Any) -> CostReport | None:
    """The float model's cost rows at the shapes of the first calibration sample (symbolic height and
    width at 1 would price a detector's convolutions at one pixel); at the model's own shapes when the
    data gives none; None (a curve without sizes) when shape inference fails."""
    try:
        sample = data_sample(model, data)
    except WorkbenchError as exc:
        log.warning("autotune curve at the model's declared shapes: %s", exc)
        sample = None
    try:
        return model_cost(model.proto, input_values=sample)
    except ModelError as exc:  # the curve then lacks sizes; the tuning itself does not need them
        log.warning("autotune curve without weight size / BOPs: %s", exc)
        return None


def plan_cost(base: CostReport | None, plan,
              graph: onnx.GraphProto | None = None) -> tuple[int | None, int | None]:
    """``(weight bytes, BOPs)`` of ``plan``'s bit widths applied to the float rows of ``base``.

    BOPs are ``MACs x weight bits x activation bits`` per node as ``cost`` counts the file the plan writes
    (:func:`workbench.core.analysis.cost.plan_bits`, ``CostReport.bops``): each input at the bits of the grid
    the writer gives it, so an 8-bit unit 8 x 8, int16 activations with 8-bit weights 16 x 8, a MatMul of two
    int16 activations 16 x 16, a float unit 32 x 32 except on inputs that stay dequantized from a grid (a
    float MatMul reading an int16 pair: 32 x 16), and a unit set to int16 reads a tensor an 8-bit unit writes
    at 8 bits. Promoting one unit can therefore change what its neighbours read. (Counted as onnxruntime runs
    them, a16w8 Conv cost the 32 x 32 of float and an int16 MatMul with an int8 weight the 8 x 8 of
    MatMulNBits: a point with units in float then counted more than every unit at int16 while int16 and float
    looked alike; latency itself is measured, ``latency=True``.) ``base`` is ``model_cost(model.proto)`` (all
    32-bit), computed once; only the widths change per plan, so no shape inference is repeated. ``graph``: the
    float model's main graph (the float nodes' inputs); without it float nodes count 32 x 32. SmoothQuant's
    renamed weights count under their node, so a smoothed plan costs what the unsmoothed one does.
    """
    if base is None:
        return None, None
    rep = CostReport(rows=with_bits(base.rows, plan_bits(plan, graph)))
    return -(-rep.memory_bits // 8), rep.bops


@dataclass
class AutotuneResult:
    """Outcome of :func:`autotune`; ``curve`` holds one :class:`CurvePoint` per measured recipe in the
    order measured (each still unpacks as (units promoted, metric, fraction kept 8-bit)); ``front`` the
    points of ``curve`` on the Pareto front, by weight bytes; ``levels`` the chosen unit -> level.
    ``resolution`` is the bootstrap interval of ``metric_before`` (the recipe as given) minus float,
    ``resolution_after`` that of ``metric_after`` (the tuned recipe's model); ``metric_output`` the model
    output the built-in metrics read (of ``outputs``, the model's outputs in order)."""

    recipe: Recipe
    metric_float: float
    metric_before: float
    metric_after: float
    promoted: list[str]
    met: bool
    curve: list[CurvePoint] = field(default_factory=list)
    result: Any = None
    resolution: MetricResolution | None = None
    notes: list[str] = field(default_factory=list)
    levels: dict[str, str] = field(default_factory=dict)
    resolution_after: MetricResolution | None = None
    metric_output: str | None = None
    outputs: list[str] = field(default_factory=list)
    latency_after: LatencyComparison | None = None
    faster: bool | None = None

    @property
    def front(self) -> list[CurvePoint]:
        pts = [p for p in self.curve if p.pareto]
        return sorted(pts, key=lambda p: (p.weight_bytes or 0, p.latency if p.latency is not None else (p.bops or 0),
                                          -p.metric))


def promote(recipe: Recipe, nodes: list[str], promote_to: str) -> Recipe:
    """A copy of ``recipe`` with ``nodes`` kept in float (``"float"``), given wider activations
    (``"int16"`` / ``"uint16"``) or int4 weights (:data:`INT4`, activations as the recipe has them)."""
    if promote_to == INT4:
        return recipe.with_overrides(nodes, NodeSettings(weight=PartialSpec(dtype="int4")))
    if promote_to == "float":
        return without_smoothing(recipe.with_excluded(nodes), list(nodes))
    return recipe.with_overrides(nodes, NodeSettings(activation=PartialSpec(dtype=promote_to)))


def apply_levels(recipe: Recipe, levels: dict[str, str]) -> Recipe:
    """``recipe`` with each unit of ``levels`` promoted to its level (see :func:`promote`)."""
    for level in dict.fromkeys(levels.values()):
        recipe = promote(recipe, [n for n, lv in levels.items() if lv == level], level)
    return recipe


def parse_ladder(promote_to: str | tuple[str, ...]) -> tuple[str, ...]:
    """``"int16,float"`` -> ``("int16", "float")``: the promotion levels, cheapest first.

    Raises
    ------
    RecipeError
        An empty ladder, a repeated level, a level that is not "float" or a 16-bit integer dtype, or
        "float" before the end.
    """
    ladder = tuple(s.strip() for s in (promote_to.split(",") if isinstance(promote_to, str) else promote_to))
    bad = [lv for lv in ladder if lv not in LEVELS]
    if not ladder or bad or len(set(ladder)) != len(ladder) or "float" in ladder[:-1]:
        raise RecipeError(f"promote_to {','.join(ladder)!r}: expected distinct levels among "
                          f"{', '.join(LEVELS)}, float last.", hint="Use e.g. --promote-to int16,float.")
    return ladder


#: Promotion levels: 16-bit activations (weights stay as the recipe has them, a16w8) or float.
LEVELS = ("int16", "uint16", "float")
#: The level of a unit whose weights go down to int4 (per the recipe's granularity; opset 21).
INT4 = "int4-weights"


#: Seconds of alternating float / quantized runs per measured point (``autotune(latency=True)``).
LATENCY_BUDGET_S = 1.0


def _latency_compare(model, feeds: list[dict]) -> Callable[[Any], LatencyComparison]:
    """A function of a quantize result -> its model's latency against the float model's (1 thread, the
    first eval row; :func:`workbench.core.runtime.latency.compare`, cached per pair of models)."""
    float_bytes = model.proto.SerializeToString()
    feed = _one_run_feed(model, feeds[0])

    def timed(res) -> LatencyComparison:
        return compare(float_bytes, res.proto.SerializeToString(), feed, budget_s=LATENCY_BUDGET_S)

    return timed


def _one_run_feed(model, first: dict) -> dict:
    """The rows of the first eval feed one run takes: its first row, or as many as a fixed leading dimension of
    the model's input asks (a model declaring batch 2 refused one row: onnxruntime's INVALID_ARGUMENT)."""
    fixed = {}
    for vi in model.proto.graph.input:
        dims = vi.type.tensor_type.shape.dim
        if dims and dims[0].HasField("dim_value"):
            fixed[vi.name] = int(dims[0].dim_value)
    return {k: np.asarray(v)[:fixed.get(k, 1)] if np.ndim(v) else v for k, v in first.items()}


def _latency_timer(model, feeds: list[dict]) -> Callable[[Any], float]:
    """A function of a quantize result -> its model's latency / the float model's (:func:`_latency_compare`)."""
    cmp = _latency_compare(model, feeds)
    return lambda res: cmp(res).ratio


def autotune(model, recipe: Recipe, *, data: Any, eval_data: Any, metric: str | Score = "top1",
             max_drop: float | None = None, min_score: float | None = None, samples: int | None = None,
             eval_samples: int | None = None, promote_to: str | tuple[str, ...] = "int16,float",
             allow_code: bool = False, guard: bool = True, bias_correction: bool = False, rank: str = "local",
             e2e_candidates: int = 12, rank_samples: int | None = None, max_trials: int = 32,
             int4_weights: bool = False, latency: bool = False, metric_output: str | None = None,
             speed_check: bool = False, executor: Executor | None = None, progress: ProgressFn | None = None,
             cancel: CancelToken | None = None,
             on_point: Callable[[CurvePoint, Recipe, float], None] | None = None) -> AutotuneResult:
    """Promote the most sensitive units until ``score >= min_score`` (or ``>= float - max_drop``).

    ``promote_to`` is the ladder of levels each unit may climb, cheapest first (``"int16,float"``:
    int16 activations are tried before float; see :mod:`workbench.core.tuning.walk`, which also
    says why the metric of the accepted points never decreases while it promotes). ``max_trials`` bounds the quantize +
    evaluate runs of the walk. ``bias_correction`` is passed to every
    :func:`workbench.core.pipeline.quantize.quantize` run. ``rank`` is "local" (order of local SQNR
    over ``rank_samples`` eval rows, default ``eval_samples`` or 32) or "e2e" (see the module
    docstring; ``e2e_candidates`` runs more, each unit promoted alone to the ladder's first level).
    ``executor`` (default: this process) runs the independent trials of the e2e ranking; the result
    does not depend on it. With ``int4_weights``, once the target holds, units with an 8-bit constant
    weight (Conv, MatMul, Gemm) that were not promoted get int4 weights, least sensitive first, while the
    target still holds (:func:`workbench.core.tuning.walk.demote`, up to ``max_trials`` more runs);
    onnxruntime runs such a unit as DequantizeLinear + a float kernel, which BOPs do not see; with
    ``latency`` every point's model is timed against the float model (``CurvePoint.latency``, about
    :data:`LATENCY_BUDGET_S` seconds per point, cached per pair of models) and the Pareto front is
    metric against weight bytes and that latency instead of BOPs.
    ``on_point(point, recipe, metric_float)`` is called with each :class:`CurvePoint` as soon as it is
    measured (in the order tried, the recipe as given first), the recipe that gave it and the float
    model's metric, so a front end can draw the curve and the target as they grow and apply any point
    (``accepted`` / ``pareto`` are final only in the result). A SmoothQuant recipe is smoothed once per trial from ranges measured once
    (:mod:`workbench.core.tuning.smoothing`). ``metric_output`` names the model output a metric
    given by name reads (default the first; the output SQNR tie-break reads the same one).
    With ``speed_check``, a met target's pick is timed against the float model (as ``latency``) and, when
    it is not faster, the other points on target, cheapest first, until one is
    (:func:`workbench.core.tuning.speed.check_speed`): that one is returned instead, with a note; when none
    is, the pick is returned with ``faster`` False and a ``warning:`` note saying so and what to try
    (``latency_after`` holds the pick's measurement; ``faster`` None when not checked, or when the float
    model runs under 0.5 ms, where only the pick is timed and a ``warning:`` says quantization does not pay).

    Raises
    ------
    RecipeError
        Neither ``max_drop`` nor ``min_score`` given, a negative ``max_drop``, an unknown metric, ladder or ``rank``, or a
        ``min_score`` above the float model's score on a metric it tops (:func:`check_target`).
    DataError
        The eval data does not fit the model, or a built-in metric cannot score its labels (``top1``: a
        ``gt_label`` missing, of another length than the input rows, or not class indices), before any
        quantization (:func:`make_eval_set`); a ``metric_output`` the model does not have.
    """
    if max_drop is not None and not max_drop >= 0:
        raise RecipeError(f"max_drop {max_drop}: a drop from the float model's metric is 0 or more.",
                          hint="Pass --max-drop 0 (no drop) or more, or --min-score for an absolute target.")
    if rank not in ("local", "e2e"):
        raise RecipeError(f"Unknown autotune ranking {rank!r}.", hint="Use rank 'local' or 'e2e'.")
    ladder = parse_ladder(promote_to)

    progress = progress or no_progress
    outputs = [o.name for o in model.proto.graph.output]
    if metric_output is not None and metric_output not in outputs:
        raise DataError(f"--metric-output {metric_output}: {model.path or 'the model'} has no output "
                        f"{metric_output!r} (outputs: {', '.join(outputs) or 'none'}).",
                        hint="Name one of the model's outputs.")
    score = load_score(metric, allow_code=allow_code, output=metric_output) if isinstance(metric, str) else metric
    tie_break = load_score("output_sqnr", output=metric_output)  # closer to float's outputs, when the metric ties
    ev = make_eval_set(model, eval_data, eval_samples, metric, metric_output)
    m_float = score(ev.float_outputs, ev.float_outputs, ev.labels)
    if min_score is None:
        if max_drop is None:
            raise RecipeError("autotune needs a target.", hint="Pass --max-drop X or --min-score Y.")
        min_score = m_float - max_drop
    target_notes = check_target(metric, min_score, m_float)
    progress(0, 0, "Calibrating")
    smooth = SmoothedTrials(model, recipe, data, samples, cancel)
    cached: dict[str, Any] = {"calib": None}

    def run(levels: dict[str, str]):
        # ranges already observed are reused; only tensors the edit newly exposes are calibrated
        floats = [n for n, lv in levels.items() if lv == "float"]
        m_t, r_t = smooth.trial(apply_levels(recipe, levels), floats)
        res = quantize(m_t, r_t, data=data, samples=samples, calibration=cached["calib"], cancel=cancel,
                       guard=guard, bias_correction=bias_correction)
        cached["calib"] = res.calibration or cached["calib"]
        return res

    base = run({})
    n_units = sum(1 for u in base.plan.units.values() if not u.excluded)
    float_cost = _float_cost(model, data)
    timer = _latency_timer(model, ev.feeds) if latency else None
    q_base = run_outputs(base.proto, ev.feeds)
    m0 = score(q_base, ev.float_outputs, ev.labels)
    curve = [CurvePoint(0, m0, 1.0, *plan_cost(float_cost, base.plan, model.proto.graph),
                        latency=timer(base) if timer else None,
                        step="recipe as given")]
    res_m = measure_resolution(score, q_base, ev.float_outputs, ev.labels, len(ev.feeds))
    if on_point is not None:
        on_point(curve[0], recipe, m_float)

    def tuned_model(levels: dict[str, str], fresh: bool = False):
        # fresh: calibrated for this recipe alone, as `quantize --recipe` does. The cached ranges were fetched
        # beside other tensors, which changes the fusions onnxruntime applies to the float model, so a few of
        # them differ by a float32 ulp (digits_transformer, 18 units float: 3 of 29 int16 scales)
        if not levels:
            return base
        return quantize(model, apply_levels(recipe, levels), data=data, samples=samples,
                        calibration=None if fresh else cached["calib"], cancel=cancel, guard=guard,
                        bias_correction=bias_correction)

    def done(levels: dict[str, str], met: bool, notes: list[str]) -> AutotuneResult:
        _mark_front(curve)
        final = next(p for p in curve if p.levels == levels)
        built: dict[int, Any] = {}
        speed = None
        if met and speed_check:
            progress(0, 0, "Timing the tuned model against float")
            timed = _latency_compare(model, ev.feeds)

            def measure_point(p: CurvePoint) -> LatencyComparison:
                model_p = built.get(p.trial) or tuned_model(p.levels)
                built.clear()  # one model held at a time (the one check_speed may pick last)
                built[p.trial] = model_p
                return timed(model_p)

            on = sorted((p for p in curve if p.metric >= min_score),
                        key=lambda p: (p.weight_bytes or 0, p.bops or 0, -p.metric, p.promoted))
            try:
                speed = check_speed(final, on, measure_point)
            except Exception as exc:  # an optional measurement: onnxruntime raises its own Exception subclasses
                notes = notes + [f"latency not measured ({str(exc).splitlines()[0][:200]}); the pick is kept"]
            else:
                notes = notes + _speed_notes(speed, final, on)
                final, levels = speed.pick, dict(speed.pick.levels)
        tuned = apply_levels(recipe, levels)
        res, res_after, m_after = base, res_m, final.metric
        if levels:  # the model the tuned recipe itself gives (calibrated afresh: the bytes `quantize` writes)
            res = tuned_model(levels, fresh=True)
            outs = run_outputs(res.proto, ev.feeds)
            m_after = score(outs, ev.float_outputs, ev.labels)
            res_after = measure_resolution(score, outs, ev.float_outputs, ev.labels, len(ev.feeds))
            notes = notes + _fresh_notes(final, m_after, min_score)
        ranked_levels = [n for n in ranked_nodes if n in levels] + [n for n in levels if n not in ranked_nodes]
        return AutotuneResult(tuned, m_float, m0, m_after, ranked_levels, met, curve, res, res_m,
                              target_notes + notes, dict(levels), res_after,
                              metric_output or (outputs[0] if outputs else None), outputs,
                              speed.latency if speed else None,
                              speed.faster if speed and not speed.small else None)

    ranked_nodes: list[str] = []
    if m0 >= min_score and not int4_weights:
        return done({}, True, [])
    note = below_resolution(max_drop, m_float, m0, res_m)
    if m0 < min_score and note:
        return done({}, False, [note])

    def measure(levels: dict[str, str], record: bool = True) -> tuple[float, float]:
        # the e2e ranking's trials are not recorded: the curve is the same whichever executor ran them
        if cancel is not None:
            cancel.check()
        res = run(levels)  # not kept: a model per trial would hold the model's size in memory each
        outs = run_outputs(res.proto, ev.feeds)
        m = score(outs, ev.float_outputs, ev.labels)
        k = len(levels)
        if not record:
            return m, 0.0
        curve.append(CurvePoint(k, m, 1.0 - k / max(n_units, 1),
                                *plan_cost(float_cost, res.plan, model.proto.graph),
                                levels=dict(levels), accepted=False, trial=len(curve),
                                latency=timer(res) if timer else None))
        if on_point is not None:
            on_point(curve[-1], apply_levels(recipe, levels), m_float)
        progress(len(curve) - 1, 0, f"{count(k, 'unit')} promoted ({describe_levels(levels)}): metric {m:.4f}")
        return m, tie_break(outs, ev.float_outputs, ev.labels)

    progress(0, 0, "Ranking units")
    # the derived local SQNR, as the ranking was tuned (no run of the units on float inputs)
    rows = analyze(model, base, eval_data, samples=rank_samples or eval_samples or 32, own_noise=False)
    ranked_nodes = [s.node for s in local_sensitivity(base.plan, rows)]
    # units the analysis cannot rank (inside If / Loop bodies: case 20's two MatMuls) come last, in plan order
    ranked_nodes += [u.node for u in base.plan.units.values() if not u.excluded and u.node not in ranked_nodes]
    if rank == "e2e":
        if _can_fan_out(executor, model, data, metric):
            trial = TrialSetup(str(model.path), data if isinstance(data, (str, dict)) else str(data), samples,
                               base.calibration.to_json() if base.calibration else None, ev, metric, allow_code,
                               guard, bias_correction, metric_output)
            alone = _fanned_out(executor, trial, recipe, ladder[0])
        else:
            alone = _one_by_one(lambda n: measure({n: ladder[0]}, record=False)[0])
        ranked_nodes = _rank_end_to_end(ranked_nodes, e2e_candidates, alone, progress, cancel)

    start = len(curve)
    w = walk(ranked_nodes, ladder, measure, (m0, tie_break(q_base, ev.float_outputs, ev.labels)), min_score,
             max_trials)
    walked = [curve[0], *curve[start:]]
    for pt, st in zip(walked, w.steps, strict=True):  # one curve point per walk step
        pt.accepted, pt.step = st.accepted, st.note
    _cheapest_on_target(walked, w, min_score)
    notes = []
    if w.budget_spent:
        notes.append(f"stopped after {max_trials} trials (--max-trials) before the target was met")
    if w.final.metric >= min_score:
        if int4_weights:
            wide = _int4_candidates(base.plan, ranked_nodes)
            start = len(curve)
            demote(w, wide, INT4, measure, min_score, max_trials)
            for pt, st in zip(curve[start:], w.steps[len(w.steps) - (len(curve) - start):], strict=True):
                pt.accepted, pt.step = st.accepted, st.note
        return done(w.final.levels, True, notes)
    path = [p for p in curve if p.accepted]
    best = max(path, key=lambda p: (p.metric if p.metric == p.metric else -np.inf, -p.promoted))
    return done(best.levels, False, notes)


def _fresh_notes(pick: CurvePoint, written: float, min_score: float) -> list[str]:
    """The note when the tuned model, calibrated afresh for its recipe, scores other than its trial did (the
    trial reused ranges calibrated for earlier recipes; onnxruntime's fusions of the float model depend on
    which tensors a calibration fetches, so a few ranges differ in their last float32 digit)."""
    if written == pick.metric or (written != written and pick.metric != pick.metric):  # equal, or both NaN
        return []
    below = f", below the target {fmt_metric(min_score)}" if written < min_score <= pick.metric else ""
    return [f"{'warning' if below else 'note'}: the tuned model written (its recipe calibrated afresh, as `quantize "
            f"--recipe` does) scores {fmt_metric(written)}{below}; its trial {pick.trial}, on ranges cached from "
            f"earlier trials, scored {fmt_metric(pick.metric)}"]


def _speed_notes(speed: SpeedCheck, pick: CurvePoint, on_target: Sequence[CurvePoint] = ()) -> list[str]:
    """What :func:`check_speed` found, one line: the tuned model's latency against float, the faster point
    chosen instead of the cheapest on target, or a ``warning:`` that nothing within target was faster, with
    what to try. ``on_target``: the curve's points within target, whose ``latency`` ``--latency`` measured
    (a tiny model's warning names their range instead of saying they were not timed)."""
    lat = speed.latency
    ms = f"{lat.timed_quant_s * 1e3:.2f} ms against float's {lat.timed_float_s * 1e3:.2f} ms, 1 thread, the first eval row"
    if speed.faster and speed.pick is pick:
        return [f"latency: the tuned model runs at {lat.ratio:.2f}x float's ({ms})"]
    if speed.small:
        return [f"warning: the tuned model runs at {lat.ratio:.2f}x float's latency ({ms}): under "
                f"{MIN_FLOAT_S * 1e3:.1f} ms per float run the input Q and output DQ alone outweigh 8-bit kernels, "
                f"so quantization does not pay at this size ({_others_timed(on_target)})"]
    first = speed.tried[0][1]
    if speed.faster:
        return [f"latency: trial {pick.trial}, the cheapest point within target, measured {first.ratio:.2f}x float's, "
                f"not faster; trial {speed.pick.trial}, also within target, runs at {lat.ratio:.2f}x ({ms}): "
                "it is the tuned recipe"]
    others = len(speed.tried) - 1
    if others == 1:
        searched = "; the other point within target, timed too, was not faster either"
    elif others:
        searched = f"; none of the {others} other points within target timed was faster either"
    else:
        searched = "; no other point met the target"
    wide = ("16-bit activations run as DequantizeLinear + a float kernel in onnxruntime, no faster than float; "
            if any(lv in ("int16", "uint16") for lv in speed.pick.levels.values()) else "")
    hint = (f"{wide}try `quantize` (its latency check keeps float the islands that run slower), --promote-to float, "
            "a lower target, or keep the float model")
    return [f"warning: target met, but the tuned model is NOT faster than float: {lat.ratio:.2f}x float's latency "
            f"({ms}){searched}. {hint[0].upper()}{hint[1:]}"]


def _others_timed(on_target: Sequence[CurvePoint]) -> str:
    """'other points within target were not timed', or, when ``--latency`` timed them on the curve, how many
    and their range of latency ratios (quantized / float)."""
    ratios = sorted(p.latency for p in on_target if p.latency is not None)
    if not ratios:
        return "other points within target were not timed"
    span = f"{ratios[0]:.2f}x" if f"{ratios[0]:.2f}" == f"{ratios[-1]:.2f}" else f"{ratios[0]:.2f}-{ratios[-1]:.2f}x"
    return f"--latency timed the {count(len(ratios), 'point')} within target on the curve: {span} float's"


#: Built-in metrics that compare with the float model's outputs, so the float model scores the most.
FLOAT_CEILING = frozenset({"cosine", "output_sqnr", "sqnr", "detection_scores"})


def check_target(metric: str | Score, min_score: float, m_float: float) -> list[str]:
    """Refuse a ``min_score`` no quantized model can reach; notes for one that is merely unlikely.

    On a metric of :data:`FLOAT_CEILING` (cosine 1.0, SQNR inf, detection_scores 0.0 for the float
    model itself) a target above the float model's score cannot be met, so autotune stops before
    calibrating. On others (top1, a metric file) a quantized model can beat float by chance, so a
    target above float's score only gets a note.

    Raises
    ------
    RecipeError
        ``min_score`` above the float model's score on a :data:`FLOAT_CEILING` metric.
    """
    if not min_score > m_float:  # NaN float score: nothing to compare
        return []
    name = metric if isinstance(metric, str) else "the given metric"
    if isinstance(metric, str) and metric in FLOAT_CEILING:
        raise RecipeError(f"--min-score {min_score:g} is above the float model's {name} ({m_float:.4f}), the "
                          "most any quantized model can score on it.",
                          hint=f"Pass --min-score {m_float:.4f} or lower, or --max-drop X.")
    return [f"warning: --min-score {min_score:g} is above the float model's {name} ({m_float:.4f}); "
            "the target is likely out of reach"]


def _cheapest_on_target(walked: list[CurvePoint], w, min_score: float) -> None:
    """Make the walk end on its cheapest point that meets the target -- smallest weight bytes, then
    the front's cost (the measured latency with ``latency=True``, else BOPs), then the best metric,
    then the fewest units promoted -- so the chosen recipe is on the Pareto front (the bisection of the
    last group counts units, which bytes and BOPs may not tell apart). Every such point is above every
    earlier path point, so the path stays monotone. The path ends there: the walk's last point and every
    point after the pick leave it (settling may have accepted several points on target after the
    cheapest one)."""
    on = [i for i, p in enumerate(walked) if p.metric >= min_score]
    if not on:
        return
    pick = min(on, key=lambda i: (walked[i].weight_bytes or 0, front_cost(walked[i]) or 0, -walked[i].metric,
                                  walked[i].promoted))
    last = max(i for i, p in enumerate(walked) if p.accepted)
    if pick != last:
        for i in (last, *range(pick + 1, len(walked))):
            walked[i].accepted = w.steps[i].accepted = False
        walked[pick].accepted = w.steps[pick].accepted = True


def _int4_candidates(plan, ranked: list[str]) -> list[str]:
    """Units of ``ranked`` with an 8-bit constant weight, least sensitive first (a MatMul of two
    activations has a weight setting but no weight: int4 would change nothing there)."""
    def eight_bit(u) -> bool:
        return (not u.excluded and u.weight is not None and u.config.weight is not None
                and u.config.weight.dtype in ("int8", "uint8") and u.op_type in ("Conv", "MatMul", "Gemm"))
    return [n for n in reversed(ranked) if n in plan.units and eight_bit(plan.units[n])]


def describe_levels(levels: dict[str, str]) -> str:
    """How many units ``levels`` (node -> level) holds at each level, float first, then the others by name
    ("3 float, 33 int16"): the same order in every progress line, whichever unit was promoted first."""
    order = sorted(set(levels.values()), key=lambda lv: (lv != "float", lv))
    return ", ".join(f"{sum(1 for v in levels.values() if v == lv)} {lv}" for lv in order)


def _mark_front(curve: list[CurvePoint]) -> None:
    for i in pareto_indices(curve):
        curve[i].pareto = True


@dataclass(frozen=True)
class TrialSetup:
    """What a trial task needs besides its recipe: the model's path, the calibration data and cached
    ranges, the eval set (feeds, labels, float outputs) and the metric's name."""

    model_path: str
    data: Any
    samples: int | None
    calibration: dict | None
    eval_set: EvalSet
    metric: str
    allow_code: bool
    guard: bool
    bias_correction: bool
    metric_output: str | None = None


def run_trial(task: tuple[TrialSetup, str]) -> float:
    """Run in a worker: the metric of one recipe (``(setup, recipe JSON)``)."""
    setup, recipe_json = task
    model = load_model(setup.model_path)
    calib = CalibrationResult.from_json(setup.calibration) if setup.calibration else None
    res = quantize(model, Recipe.from_json(recipe_json), data=setup.data, samples=setup.samples, calibration=calib,
                   guard=setup.guard, bias_correction=setup.bias_correction)
    ev = setup.eval_set
    score = load_score(setup.metric, allow_code=setup.allow_code, output=setup.metric_output)
    return score(run_outputs(res.proto, ev.feeds), ev.float_outputs, ev.labels)


def _can_fan_out(executor: Executor | None, model, data: Any, metric: Any) -> bool:
    """Trials can leave this process when there is a real executor, a model file, data given by path
    or spec, and a metric given by name (a Python callable may not be picklable)."""
    return (executor is not None and not isinstance(executor, InlineExecutor) and bool(model.path)
            and isinstance(data, (str, Path, dict)) and isinstance(metric, str))


def _one_by_one(metric_alone: Callable[[str], float]) -> Callable[[list[str]], Iterator[float]]:
    def scores(nodes: list[str]) -> Iterator[float]:
        for node in nodes:
            yield metric_alone(node)
    return scores


def _fanned_out(executor: Executor, setup: TrialSetup, recipe: Recipe,
                promote_to: str) -> Callable[[list[str]], Iterator[float]]:
    def scores(nodes: list[str]) -> Iterator[float]:
        tasks = [(setup, promote(recipe, [n], promote_to).to_json()) for n in nodes]
        return executor.map(run_trial, tasks)
    return scores


def _rank_end_to_end(ranked: list[str], candidates: int, metric_alone: Callable[[list[str]], Iterator[float]],
                     progress: ProgressFn, cancel: CancelToken | None) -> list[str]:
    """``ranked[:candidates]`` sorted by the metric with each unit promoted alone (best first, stable),
    followed by the rest of ``ranked`` in its order. ``metric_alone(nodes)`` yields those metrics in
    order (one trial per node, in this process or through an executor)."""
    head = ranked[:max(candidates, 0)]
    scores: dict[str, float] = {}
    results = metric_alone(head)
    try:
        for i, (node, value) in enumerate(zip(head, results, strict=True)):
            if cancel is not None:
                cancel.check()
            scores[node] = value
            progress(i + 1, len(head), f"{node} promoted alone: metric {scores[node]:.4f}")
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
    log.info("end-to-end ranking: %s", ", ".join(f"{n} {v:.4f}" for n, v in scores.items()))
    return sorted(head, key=lambda n: -scores[n]) + ranked[len(head):]
