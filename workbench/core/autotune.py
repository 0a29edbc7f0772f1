"""Automatic mixed precision: keep as much int8 as possible while a task metric holds.

Procedure (one calibration, then only quantize + evaluate runs, each reusing the cached ranges):

1. quantize with the recipe, measure the metric on the eval data against the float model;
2. rank units by the noise they add (:mod:`workbench.core.sensitivity`, one analysis pass);
3. promote the k most harmful units (to ``promote_to``: "float" excludes them, or a dtype such as
   "int16"/"uint16" for their activations), growing k geometrically until the target holds, then
   bisect k between the last failing and the first passing value;
4. return the recipe edit (overrides), the metric before/after, and the curve of metric against the
   fraction of units kept in 8 bits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.errors import DataError, RecipeError
from workbench.core.numerics import sqnr_db
from workbench.core.progress import CancelToken, ProgressFn, no_progress
from workbench.core.recipe import NodeSettings, PartialSpec, Recipe
from workbench.core.session import make_session

log = logging.getLogger(__name__)

Score = Callable[[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]], float]


def _first(d: dict[str, np.ndarray]) -> np.ndarray:
    return next(iter(d.values()))


def score_top1(q: dict, f: dict, labels: dict) -> float:
    """Top-1 accuracy of the first output's argmax (axis 1, or the last axis) against ``gt_label``."""
    if "gt_label" not in labels:
        raise DataError("The eval data has no 'gt_label' array, which the top1 metric needs.",
                        hint="Add gt_label to the eval .npz or use --metric cosine / sqnr.")
    logits = _first(q)
    pred = np.argmax(logits.reshape(len(labels["gt_label"]), -1), axis=1)
    return float(np.mean(pred == labels["gt_label"].ravel()))


def score_cosine(q: dict, f: dict, labels: dict) -> float:
    """Mean per-sample cosine similarity of the first output against the float model's."""
    a = _first(q).reshape(len(_first(q)), -1).astype(np.float64)
    b = _first(f).reshape(len(_first(f)), -1).astype(np.float64)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    cos = np.where(den > 0, np.sum(a * b, axis=1) / np.maximum(den, 1e-30), 1.0)
    return float(np.mean(cos))


def score_sqnr(q: dict, f: dict, labels: dict) -> float:
    """Worst per-output SQNR (dB) against the float model."""
    return min(sqnr_db(f[k], q[k]) for k in f)


BUILTIN_SCORES: dict[str, Score] = {"top1": score_top1, "cosine": score_cosine, "sqnr": score_sqnr}


def load_score(metric: str, *, allow_code: bool = False) -> Score:
    """A built-in score by name, or ``metric(outputs, batch) -> float`` from a Python file.

    Raises
    ------
    RecipeError
        Unknown metric, or a Python file without ``allow_code``.
    """
    if metric in BUILTIN_SCORES:
        return BUILTIN_SCORES[metric]
    path = Path(metric)
    if path.suffix != ".py":
        raise RecipeError(f"Unknown metric {metric!r}.", hint="Use top1, cosine, sqnr or a FILE.py.")
    if not allow_code:
        raise RecipeError(f"{path}: running a user metric executes its code.",
                          hint="Pass --allow-code to run it.")
    import runpy

    ns = runpy.run_path(str(path))
    fn = ns.get("metric")
    if not callable(fn):
        raise RecipeError(f"{path}: defines no function metric(outputs, batch).", hint="Add it.")
    return lambda q, f, labels: float(fn(q, labels))


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
    from workbench.core.api import open_data_source

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
class AutotuneResult:
    """Outcome of :func:`autotune`; ``curve`` rows are (units promoted, metric, fraction kept 8-bit)."""

    recipe: Recipe
    metric_float: float
    metric_before: float
    metric_after: float
    promoted: list[str]
    met: bool
    curve: list[tuple[int, float, float]] = field(default_factory=list)
    result: Any = None


def promote(recipe: Recipe, nodes: list[str], promote_to: str) -> Recipe:
    """A copy of ``recipe`` with ``nodes`` kept in float (``"float"``) or given wider activations."""
    overrides = dict(recipe.overrides)
    for n in nodes:
        if promote_to == "float":
            overrides[n] = NodeSettings(exclude=True)
        else:
            overrides[n] = NodeSettings(activation=PartialSpec(dtype=promote_to))
    return recipe.model_copy(update={"overrides": overrides})


def autotune(model, recipe: Recipe, *, data: Any, eval_data: Any, metric: str | Score = "top1",
             max_drop: float | None = None, min_score: float | None = None, samples: int | None = None,
             eval_samples: int | None = None, promote_to: str = "float", allow_code: bool = False,
             progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> AutotuneResult:
    """Promote the most sensitive units until ``score >= min_score`` (or ``>= float - max_drop``).

    Raises
    ------
    RecipeError
        Neither ``max_drop`` nor ``min_score`` given, or an unknown metric.
    """
    from workbench.core import api
    from workbench.core.sensitivity import local_sensitivity

    progress = progress or no_progress
    score = load_score(metric, allow_code=allow_code) if isinstance(metric, str) else metric
    ev = make_eval_set(model, eval_data, eval_samples)
    m_float = score(ev.float_outputs, ev.float_outputs, ev.labels)
    if min_score is None:
        if max_drop is None:
            raise RecipeError("autotune needs a target.", hint="Pass --max-drop X or --min-score Y.")
        min_score = m_float - max_drop
    progress(0, 0, "Calibrating")
    base = api.quantize(model, recipe, data=data, samples=samples, cancel=cancel)
    calib = base.calibration

    def measure(r: Recipe):
        res = api.quantize(model, r, calibration=calib, cancel=cancel)
        return res, score(run_outputs(res.proto, ev.feeds), ev.float_outputs, ev.labels)

    m0 = score(run_outputs(base.proto, ev.feeds), ev.float_outputs, ev.labels)
    n_units = sum(1 for u in base.plan.units.values() if not getattr(u, "excluded", False))
    curve = [(0, m0, 1.0)]
    if m0 >= min_score:
        return AutotuneResult(recipe, m_float, m0, m0, [], True, curve, base)
    progress(0, 0, "Ranking units")
    rows = api.analyze(model, base, eval_data, samples=eval_samples or 32)
    ranked = [s.node for s in local_sensitivity(base.plan, rows)]
    cache: dict[int, tuple[Any, float]] = {}

    def at(k: int):
        if k not in cache:
            if cancel is not None:
                cancel.check()
            cache[k] = measure(promote(recipe, ranked[:k], promote_to))
            curve.append((k, cache[k][1], 1.0 - k / max(n_units, 1)))
            progress(len(cache), 0, f"{k} units promoted: metric {cache[k][1]:.4f}")
        return cache[k]

    lo, hi = 0, 1
    while hi < len(ranked) and at(hi)[1] < min_score:
        lo, hi = hi, min(hi * 2, len(ranked))
    if at(hi)[1] < min_score:
        res, m = at(hi)
        curve.sort()
        return AutotuneResult(promote(recipe, ranked[:hi], promote_to), m_float, m0, m, ranked[:hi], False,
                              curve, res)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid)[1] >= min_score:
            hi = mid
        else:
            lo = mid
    res, m = at(hi)
    curve.sort()
    return AutotuneResult(promote(recipe, ranked[:hi], promote_to), m_float, m0, m, ranked[:hi], True, curve, res)
