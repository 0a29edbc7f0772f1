"""Automatic mixed precision: keep as much int8 as possible while a task metric holds.

Procedure (one calibration, then only quantize + evaluate runs, each reusing the cached ranges):

1. quantize with the recipe, measure the metric on the eval data against the float model;
2. rank units by the noise they add (:mod:`workbench.core.analysis.sensitivity`, one analysis pass); with
   ``rank="e2e"`` the first ``e2e_candidates`` of that order are re-ranked by the task metric measured
   with each one promoted alone (one quantize + evaluate run per candidate), since the local SQNR
   does not say which rounding the task metric notices;
3. promote the k most harmful units (to ``promote_to``: "float" excludes them, or a dtype such as
   "int16"/"uint16" for their activations), growing k geometrically until the target holds, then
   bisect k between the last failing and the first passing value;
4. return the recipe edit (overrides), the metric before/after, and the curve of metric against the
   fraction of units kept in 8 bits, the weight memory and the bit operations of each tried recipe
   (:class:`CurvePoint`; sizes from the plan with :mod:`workbench.core.analysis.cost`, no extra inference).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.analysis.cost import CostReport, bits_from_configs, model_cost
from workbench.core.analysis.executors import Executor, InlineExecutor
from workbench.core.analysis.metrics import REF_PREFIX, load_metric
from workbench.core.analysis.sensitivity import local_sensitivity
from workbench.core.calibration.calibrate import CalibrationResult
from workbench.core.data.loader import open_data_source
from workbench.core.errors import ModelError, RecipeError
from workbench.core.model.load import load_model
from workbench.core.pipeline.analyze import analyze
from workbench.core.pipeline.quantize import quantize
from workbench.core.progress import CancelToken, ProgressFn, no_progress
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import NodeSettings, PartialSpec
from workbench.core.runtime.session import make_session
from workbench.core.tuning.resolution import MetricResolution, Score, measure_resolution

log = logging.getLogger(__name__)

def load_score(metric: str, *, allow_code: bool = False) -> Score:
    """``score(quant_outputs, float_outputs, labels)`` from a metric of :mod:`workbench.core.analysis.metrics`.

    ``metric`` is a built-in name (top1, cosine, output_sqnr; ``sqnr`` is an alias) or a ``.py`` file
    defining ``metric(outputs, batch) -> float`` (only with ``allow_code``). The metric's ``batch``
    holds the labels (``gt_*``) and the float outputs under ``"ref:" + name``.

    Raises
    ------
    DataError
        Unknown metric, missing file, or a file without ``allow_code``.
    """
    fn = load_metric("output_sqnr" if metric == "sqnr" else metric, allow_code=allow_code)

    def score(q: dict, f: dict, labels: dict) -> float:
        batch = dict(labels)
        batch.update({REF_PREFIX + k: v for k, v in f.items()})
        return float(fn(q, batch))

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
    return {n: np.concatenate(v, axis=0) if v and v[0].ndim else np.stack(v) for n, v in parts.items()}


def make_eval_set(model, data: Any, samples: int | None = None) -> EvalSet:

    source = open_data_source(data, model)
    feeds = []
    for feed in source.batches(1):
        if samples and len(feeds) >= samples:
            break
        feeds.append(feed)
    labels: dict[str, np.ndarray] = {}
    path = data if isinstance(data, (str, Path)) else (data.get("path") if isinstance(data, dict) else None)
    if path and str(path).endswith(".npz"):
        with np.load(path) as z:
            labels = {k: z[k][: len(feeds)] for k in z.files if k.startswith("gt_")}
    return EvalSet(feeds, labels, run_outputs(model.proto, feeds))


@dataclass
class CurvePoint:
    """One tried recipe of :func:`autotune`.

    Unpacks (and indexes) as the former 3-tuple ``(promoted, metric, fraction_int8)``, so
    ``for k, m, frac in result.curve`` keeps working.

    Attributes
    ----------
    promoted : int
        Units promoted (the first ``promoted`` of the ranking).
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
        see :mod:`workbench.core.analysis.cost`), nodes with unknown shapes left out.
    """

    promoted: int
    metric: float
    fraction_int8: float
    weight_bytes: int | None = None
    bops: int | None = None

    def __iter__(self):
        return iter((self.promoted, self.metric, self.fraction_int8))

    def __getitem__(self, i):
        return (self.promoted, self.metric, self.fraction_int8)[i]

    def to_json(self) -> dict:
        return {"promoted": self.promoted, "metric": self.metric, "fraction_int8": self.fraction_int8,
                "weight_bytes": self.weight_bytes, "bops": self.bops}


def plan_cost(base: CostReport | None, plan) -> tuple[int | None, int | None]:
    """``(weight bytes, BOPs)`` of ``plan``'s bit widths applied to the float rows of ``base``.

    ``base`` is ``model_cost(model.proto)`` (all 32-bit), computed once; only the widths change per
    plan, so no shape inference is repeated. Excluded units count as float (32/32).
    """
    if base is None:
        return None, None
    bits = bits_from_configs({u.node: u.config for u in plan.units.values() if not u.excluded})
    rep = CostReport(rows=[replace(r, weight_bits=bits.get(r.node, (32, 32))[0],
                                   activation_bits=bits.get(r.node, (32, 32))[1]) for r in base.rows])
    return -(-rep.memory_bits // 8), rep.bops


@dataclass
class AutotuneResult:
    """Outcome of :func:`autotune`; ``curve`` holds one :class:`CurvePoint` per tried recipe, sorted by
    units promoted (each still unpacks as (units promoted, metric, fraction kept 8-bit))."""

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


def promote(recipe: Recipe, nodes: list[str], promote_to: str) -> Recipe:
    """A copy of ``recipe`` with ``nodes`` kept in float (``"float"``) or given wider activations."""
    if promote_to == "float":
        return recipe.with_excluded(nodes)
    return recipe.with_overrides(nodes, NodeSettings(activation=PartialSpec(dtype=promote_to)))


def autotune(model, recipe: Recipe, *, data: Any, eval_data: Any, metric: str | Score = "top1",
             max_drop: float | None = None, min_score: float | None = None, samples: int | None = None,
             eval_samples: int | None = None, promote_to: str = "float", allow_code: bool = False,
             guard: bool = True, bias_correction: bool = False, rank: str = "local", e2e_candidates: int = 12,
             executor: Executor | None = None, progress: ProgressFn | None = None,
             cancel: CancelToken | None = None,
             on_point: Callable[[CurvePoint, Recipe, float], None] | None = None) -> AutotuneResult:
    """Promote the most sensitive units until ``score >= min_score`` (or ``>= float - max_drop``).

    ``bias_correction`` is passed to every :func:`workbench.core.pipeline.quantize.quantize` run. ``rank`` is
    "local" (order of local SQNR) or "e2e" (see the module docstring; ``e2e_candidates`` runs more).
    ``executor`` (default: this process) runs the independent trials of the e2e ranking, one task per
    candidate (the model by path, the cached ranges as JSON); the result does not depend on it. The
    geometric search and the bisection stay in order: each step depends on the one before.
    ``on_point(point, recipe, metric_float)`` is called with each :class:`CurvePoint` as soon as it is
    measured (in the order tried, the all-quantized recipe first), the recipe that gave it and the
    float model's metric, so a front end can draw the curve and the target as they grow and apply
    any point.

    Raises
    ------
    RecipeError
        Neither ``max_drop`` nor ``min_score`` given, an unknown metric or an unknown ``rank``.
    """
    if rank not in ("local", "e2e"):
        raise RecipeError(f"Unknown autotune ranking {rank!r}.", hint="Use rank 'local' or 'e2e'.")

    progress = progress or no_progress
    score = load_score(metric, allow_code=allow_code) if isinstance(metric, str) else metric
    ev = make_eval_set(model, eval_data, eval_samples)
    m_float = score(ev.float_outputs, ev.float_outputs, ev.labels)
    if min_score is None:
        if max_drop is None:
            raise RecipeError("autotune needs a target.", hint="Pass --max-drop X or --min-score Y.")
        min_score = m_float - max_drop
    progress(0, 0, "Calibrating")
    base = quantize(model, recipe, data=data, samples=samples, cancel=cancel, guard=guard,
                        bias_correction=bias_correction)

    cached = {"calib": base.calibration}

    def measure(r: Recipe):
        # ranges already observed are reused; only tensors the edit newly exposes are calibrated
        res = quantize(model, r, data=data, samples=samples, calibration=cached["calib"], cancel=cancel,
                           guard=guard, bias_correction=bias_correction)
        cached["calib"] = res.calibration or cached["calib"]
        return res, score(run_outputs(res.proto, ev.feeds), ev.float_outputs, ev.labels)

    n_units = sum(1 for u in base.plan.units.values() if not u.excluded)
    try:
        float_cost: CostReport | None = model_cost(model.proto)
    except ModelError as exc:  # the curve then lacks sizes; the tuning itself does not need them
        log.warning("autotune curve without weight size / BOPs: %s", exc)
        float_cost = None
    q_base = run_outputs(base.proto, ev.feeds)
    m0 = score(q_base, ev.float_outputs, ev.labels)
    curve = [CurvePoint(0, m0, 1.0, *plan_cost(float_cost, base.plan))]
    res_m = measure_resolution(score, q_base, ev.float_outputs, ev.labels, len(ev.feeds))
    if on_point is not None:
        on_point(curve[0], recipe, m_float)
    if m0 >= min_score:
        return AutotuneResult(recipe, m_float, m0, m0, [], True, curve, base, res_m)
    if max_drop is not None and res_m.step is not None and 0 < max_drop < res_m.step:
        note = (f"--max-drop {max_drop:g} is below the metric's step on {res_m.rows} eval rows "
                f"(1/{res_m.rows} = {res_m.step:.4f}): it allows no lost row, so nothing was promoted. Pass "
                f"--max-drop 0 to ask for that, --max-drop {res_m.step:.4f} or more, or more eval rows.")
        return AutotuneResult(recipe, m_float, m0, m0, [], False, curve, base, res_m, [note])
    progress(0, 0, "Ranking units")
    rows = analyze(model, base, eval_data, samples=eval_samples or 32)
    ranked = [s.node for s in local_sensitivity(base.plan, rows)]
    if rank == "e2e":
        if _can_fan_out(executor, model, data, metric):
            trial = TrialSetup(str(model.path), data if isinstance(data, (str, dict)) else str(data), samples,
                               base.calibration.to_json() if base.calibration else None, ev, metric, allow_code,
                               guard, bias_correction)
            alone = _fanned_out(executor, trial, recipe, promote_to)
        else:
            alone = _one_by_one(lambda n: measure(promote(recipe, [n], promote_to))[1])
        ranked = _rank_end_to_end(ranked, e2e_candidates, alone, progress, cancel)
    cache: dict[int, tuple[Any, float]] = {}

    def at(k: int):
        if k not in cache:
            if cancel is not None:
                cancel.check()
            cache[k] = measure(promote(recipe, ranked[:k], promote_to))
            curve.append(CurvePoint(k, cache[k][1], 1.0 - k / max(n_units, 1),
                                    *plan_cost(float_cost, cache[k][0].plan)))
            if on_point is not None:
                on_point(curve[-1], promote(recipe, ranked[:k], promote_to), m_float)
            progress(len(cache), 0, f"{k} units promoted: metric {cache[k][1]:.4f}")
        return cache[k]

    lo, hi = 0, 1
    while hi < len(ranked) and at(hi)[1] < min_score:
        lo, hi = hi, min(hi * 2, len(ranked))
    if at(hi)[1] < min_score:
        tried = {0: (base, m0), **cache}
        best = _best_missed(tried)
        res, m = tried[best]
        curve.sort(key=lambda p: p.promoted)
        return AutotuneResult(promote(recipe, ranked[:best], promote_to), m_float, m0, m, ranked[:best], False,
                              curve, res, res_m)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid)[1] >= min_score:
            hi = mid
        else:
            lo = mid
    res, m = at(hi)
    curve.sort(key=lambda p: p.promoted)
    return AutotuneResult(promote(recipe, ranked[:hi], promote_to), m_float, m0, m, ranked[:hi], True, curve, res,
                          res_m)


def _best_missed(tried: dict[int, tuple[Any, float]]) -> int:
    """The number of promoted units to return when no tried point met the target: the best metric, and
    on a tie (or NaN) the fewest promoted units -- promoting more for no gain only makes the model bigger
    and slower. ``tried`` holds ``k -> (result, metric)`` with 0 the recipe as given."""
    def key(k: int) -> tuple[float, int]:
        m = tried[k][1]
        return (m if m == m else -np.inf, -k)
    return max(tried, key=key, default=0)


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


def run_trial(task: tuple[TrialSetup, str]) -> float:
    """Run in a worker: the metric of one recipe (``(setup, recipe JSON)``)."""
    setup, recipe_json = task
    model = load_model(setup.model_path)
    calib = CalibrationResult.from_json(setup.calibration) if setup.calibration else None
    res = quantize(model, Recipe.from_json(recipe_json), data=setup.data, samples=setup.samples, calibration=calib,
                   guard=setup.guard, bias_correction=setup.bias_correction)
    ev = setup.eval_set
    return load_score(setup.metric, allow_code=setup.allow_code)(run_outputs(res.proto, ev.feeds),
                                                                  ev.float_outputs, ev.labels)


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
