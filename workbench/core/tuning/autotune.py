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
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.analysis.cost import CostReport, bits_from_configs, model_cost
from workbench.core.analysis.metrics import REF_PREFIX, load_metric
from workbench.core.analysis.sensitivity import local_sensitivity
from workbench.core.data.loader import open_data_source
from workbench.core.errors import ModelError, RecipeError
from workbench.core.pipeline.analyze import analyze
from workbench.core.pipeline.quantize import quantize
from workbench.core.progress import CancelToken, ProgressFn, no_progress
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import NodeSettings, PartialSpec
from workbench.core.runtime.session import make_session

log = logging.getLogger(__name__)

Score = Callable[[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]], float]


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


def promote(recipe: Recipe, nodes: list[str], promote_to: str) -> Recipe:
    """A copy of ``recipe`` with ``nodes`` kept in float (``"float"``) or given wider activations."""
    if promote_to == "float":
        return recipe.with_excluded(nodes)
    return recipe.with_overrides(nodes, NodeSettings(activation=PartialSpec(dtype=promote_to)))


def autotune(model, recipe: Recipe, *, data: Any, eval_data: Any, metric: str | Score = "top1",
             max_drop: float | None = None, min_score: float | None = None, samples: int | None = None,
             eval_samples: int | None = None, promote_to: str = "float", allow_code: bool = False,
             guard: bool = True, bias_correction: bool = False, rank: str = "local", e2e_candidates: int = 12,
             progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> AutotuneResult:
    """Promote the most sensitive units until ``score >= min_score`` (or ``>= float - max_drop``).

    ``bias_correction`` is passed to every :func:`workbench.core.pipeline.quantize.quantize` run. ``rank`` is
    "local" (order of local SQNR) or "e2e" (see the module docstring; ``e2e_candidates`` runs more).

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

    m0 = score(run_outputs(base.proto, ev.feeds), ev.float_outputs, ev.labels)
    n_units = sum(1 for u in base.plan.units.values() if not u.excluded)
    try:
        float_cost: CostReport | None = model_cost(model.proto)
    except ModelError as exc:  # the curve then lacks sizes; the tuning itself does not need them
        log.warning("autotune curve without weight size / BOPs: %s", exc)
        float_cost = None
    curve = [CurvePoint(0, m0, 1.0, *plan_cost(float_cost, base.plan))]
    if m0 >= min_score:
        return AutotuneResult(recipe, m_float, m0, m0, [], True, curve, base)
    progress(0, 0, "Ranking units")
    rows = analyze(model, base, eval_data, samples=eval_samples or 32)
    ranked = [s.node for s in local_sensitivity(base.plan, rows)]
    if rank == "e2e":
        ranked = _rank_end_to_end(ranked, e2e_candidates, lambda n: measure(promote(recipe, [n], promote_to))[1],
                                  progress, cancel)
    cache: dict[int, tuple[Any, float]] = {}

    def at(k: int):
        if k not in cache:
            if cancel is not None:
                cancel.check()
            cache[k] = measure(promote(recipe, ranked[:k], promote_to))
            curve.append(CurvePoint(k, cache[k][1], 1.0 - k / max(n_units, 1),
                                    *plan_cost(float_cost, cache[k][0].plan)))
            progress(len(cache), 0, f"{k} units promoted: metric {cache[k][1]:.4f}")
        return cache[k]

    lo, hi = 0, 1
    while hi < len(ranked) and at(hi)[1] < min_score:
        lo, hi = hi, min(hi * 2, len(ranked))
    if at(hi)[1] < min_score:
        res, m = at(hi)
        curve.sort(key=lambda p: p.promoted)
        return AutotuneResult(promote(recipe, ranked[:hi], promote_to), m_float, m0, m, ranked[:hi], False,
                              curve, res)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid)[1] >= min_score:
            hi = mid
        else:
            lo = mid
    res, m = at(hi)
    curve.sort(key=lambda p: p.promoted)
    return AutotuneResult(promote(recipe, ranked[:hi], promote_to), m_float, m0, m, ranked[:hi], True, curve, res)


def _rank_end_to_end(ranked: list[str], candidates: int, metric_alone: Callable[[str], float],
                     progress: ProgressFn, cancel: CancelToken | None) -> list[str]:
    """``ranked[:candidates]`` sorted by the metric with each unit promoted alone (best first, stable),
    followed by the rest of ``ranked`` in its order."""
    head = ranked[:max(candidates, 0)]
    scores: dict[str, float] = {}
    for i, node in enumerate(head):
        if cancel is not None:
            cancel.check()
        scores[node] = metric_alone(node)
        progress(i + 1, len(head), f"{node} promoted alone: metric {scores[node]:.4f}")
    log.info("end-to-end ranking: %s", ", ".join(f"{n} {v:.4f}" for n, v in scores.items()))
    return sorted(head, key=lambda n: -scores[n]) + ranked[len(head):]
