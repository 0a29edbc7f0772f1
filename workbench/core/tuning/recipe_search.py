"""Automatic recipe search: per activation tensor, the observer with the lowest local error.

The search runs before a static quantize and returns the recipe with its choices written in as
node overrides (``{"activation": {"observer": ...}}``), so the choice is an ordinary, editable
recipe: a saved project replays it without searching again.

1. The calibration rows are split: the last ``k`` rows (a quarter, 2..16) are held out.
2. One calibration pass over the other rows with histogram observers gives, per tensor, the range
   of every candidate observer (MinMax: the histogram's exact min / max; Percentile, MSE, Entropy:
   their rule on the same histogram), hence one set of qparams per candidate.
3. One float pass over the held-out rows measures each candidate's local error
   (:mod:`workbench.core.tuning.local_error`: the error of the compute nodes reading the tensor
   when only it is quantized).
4. Tensors are grouped by the node whose activation spec decides them (the producing unit, else
   the first reading unit); a group leaves MinMax only when another observer's summed local error
   is below ``MARGIN`` times MinMax's, so models where MinMax is already best are not changed.
5. An element-wise group (not Conv / MatMul / Gemm) whose chosen 8-bit local error is still above
   ``INT16_ABOVE`` (a local SQNR below 35 dB) and none of whose tensors a compute node reads gets
   int16 activations: 8 more bits cut the quantization noise by about 48 dB, and every Conv /
   MatMul / Gemm keeps 8-bit inputs.

Tensors whose observer the recipe sets explicitly (a rule or an override on the deciding node),
non-per-tensor or float-typed specs are not searched. Its cost (seconds, and the ratio to the
calibration pass) is in the :class:`SearchReport`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from workbench.core.calibration.calibrate import calibrate
from workbench.core.calibration.observers import HistogramObserver, Observer
from workbench.core.data.loader import open_data_source
from workbench.core.formats.numerics import compute_qparams
from workbench.core.formats.qparams import QParams
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.quantize import plan as make_plan
from workbench.core.planning.plan import QuantPlan, Role
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.recipe.recipe import Recipe, resolve_node
from workbench.core.recipe.spec import Granularity, NodeSettings, PartialSpec, PlanMode, QuantSpec
from workbench.core.runtime.session import add_outputs, make_session
from workbench.core.tuning.local_error import COMPUTE_OPS, LocalError, Reader

#: Observers the search chooses among (MinMax first: it is kept on ties).
CANDIDATES = ("minmax", "percentile", "mse", "entropy")
#: Another observer replaces MinMax only when its local error is below this share of MinMax's.
MARGIN = 0.8
#: An element-wise group whose best 8-bit local error is above this (local SQNR below 35 dB) gets int16
#: activations (with that observer) unless a compute unit (Conv, MatMul, Gemm) reads one of its tensors.
INT16_ABOVE = 10 ** -3.5
#: Held-out rows: a quarter of the calibration rows, at least ``MIN_HELD_OUT`` and at most ``MAX_HELD_OUT``.
MIN_HELD_OUT, MAX_HELD_OUT = 2, 8
#: Fewer calibration rows than this: no search (nothing left to hold out).
MIN_ROWS = 6
#: ``SearchReport.skipped`` of a dynamic or weight-only recipe.
SEARCH_NOT_STATIC = "not a static recipe"
#: Held-out samples per float-model run.
BATCH = 4


@dataclass
class SearchChoice:
    """The choice for the tensors one node's activation spec decides.

    ``errors``: candidate -> summed relative local error over ``tensors`` (see
    :mod:`workbench.core.tuning.local_error`); ``observer``: the one written into the recipe.
    """

    node: str
    tensors: list[str]
    observer: str
    errors: dict[str, float]
    dtype: str | None = None

    @property
    def gain_db(self) -> float:
        """Local-error reduction of the choice over MinMax, dB (0 when MinMax is kept)."""
        base, got = self.errors.get("minmax", 0.0), self.errors.get(self.observer, 0.0)
        return float(10 * np.log10(base / got)) if base > 0 and got > 0 else 0.0


@dataclass
class SearchReport:
    """What :func:`search_recipe` did.

    ``recipe``: the input recipe plus the choices as overrides (the input recipe itself when
    nothing changed); ``choices``: every group searched; ``seconds``: wall time of the search;
    ``calibration_seconds``: wall time of its calibration pass (over the non-held-out rows);
    ``held_out``: rows used to measure; ``skipped``: why the search did not run, else None.
    """

    recipe: Recipe
    choices: list[SearchChoice] = field(default_factory=list)
    seconds: float = 0.0
    calibration_seconds: float = 0.0
    held_out: int = 0
    skipped: str | None = None

    @property
    def changed(self) -> list[SearchChoice]:
        return [c for c in self.choices if c.observer != "minmax" or c.dtype]

    def summary(self) -> str:
        """One line for the CLI: what changed and what it cost."""
        if self.skipped:
            return f"recipe search skipped: {self.skipped}"
        counts: dict[str, int] = {}
        for c in self.changed:
            counts[c.observer] = counts.get(c.observer, 0) + 1
            if c.dtype:
                counts[c.dtype] = counts.get(c.dtype, 0) + 1
        what = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "MinMax kept everywhere"
        return (f"recipe search: {len(self.changed)} of {len(self.choices)} activation groups changed "
                f"({what}); {self.held_out} held-out rows, {self.seconds:.1f} s")


def search_recipe(model: PreparedModel, recipe: Recipe, data: Any, *, samples: int | None = None,
                  progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> SearchReport:
    """Choose each searchable activation tensor's observer by its local error (module docstring).

    Parameters
    ----------
    model : PreparedModel
        The float model (not modified).
    recipe : Recipe
        A static recipe; dynamic / weight-only recipes and SmoothQuant recipes are returned unchanged
        (``skipped`` says why).
    data : path, dict or DataSource
        The calibration data (the same rows quantize calibrates on).
    samples : int, optional
        Use at most this many rows (as quantize does).

    Raises
    ------
    DataError, CalibrationError, Cancelled
    """
    t0 = time.perf_counter()
    if recipe.preset_obj().mode != PlanMode.STATIC:
        return SearchReport(recipe, skipped=SEARCH_NOT_STATIC)
    if recipe.smoothquant is not None:
        return SearchReport(recipe, skipped="the recipe uses SmoothQuant (ranges depend on the rewritten model)")
    if data is None:
        return SearchReport(recipe, skipped="no calibration data")
    source = open_data_source(data, model)
    n = source.num_samples()
    n = min(n, samples) if n is not None and samples else (samples or n)
    if n is None or n < MIN_ROWS:
        return SearchReport(recipe, skipped=f"fewer than {MIN_ROWS} calibration rows")
    held = int(min(MAX_HELD_OUT, max(MIN_HELD_OUT, n // 4)))
    the_plan = make_plan(model, recipe, guard=True)
    groups = _groups(model, recipe, the_plan)
    if not groups:
        return SearchReport(recipe, skipped="no activation tensor to search", held_out=held)
    tensors = [t for ts in groups.values() for t in ts]
    hist_plan = replace(the_plan, activations={t: (s.model_copy(update={"observer": "mse", "observer_args": {}})
                                                   if t in tensors else s)
                                               for t, s in the_plan.activations.items()})
    cal = calibrate(model, hist_plan, source, samples=n - held, progress=progress, cancel=cancel)
    measures = _measures(model, the_plan, cal.observers, tensors)
    _held_out_pass(model, source, measures, n - held, n, progress, cancel)
    choices = []
    ops = {n.name: n.op_type for n in model.proto.graph.node}
    for node, ts in groups.items():
        errors = {c: sum(measures[t].relative()[c] for t in ts if t in measures) for c in CANDIDATES}
        best = min(CANDIDATES, key=lambda c: errors[c])
        pick = best if errors[best] < MARGIN * errors["minmax"] else "minmax"
        feeds_compute = any(measures[t].readers for t in ts if t in measures)
        wide = "int16" if errors[pick] > INT16_ABOVE and ops.get(node) not in COMPUTE_OPS and not feeds_compute \
            else None
        choices.append(SearchChoice(node, ts, pick, errors, wide))
    out = recipe
    changed = [c for c in choices if c.observer != "minmax" or c.dtype]
    if changed:
        overrides = dict(recipe.overrides)
        for c in changed:
            part = PartialSpec(observer=c.observer, dtype=c.dtype) if c.dtype else PartialSpec(observer=c.observer)
            overrides[c.node] = NodeSettings(activation=part)
        out = recipe.with_override_map(overrides)
    return SearchReport(out, choices, time.perf_counter() - t0, cal.seconds, held)


def _groups(model: PreparedModel, recipe: Recipe, the_plan: QuantPlan) -> dict[str, list[str]]:
    """Deciding node -> the searchable tensors its activation spec decides (module docstring)."""
    units = [u for u in the_plan.units.values() if not u.excluded and not u.graph]
    producer: dict[str, str] = {}
    reader: dict[str, str] = {}
    for u in units:
        for t in u.outputs:
            producer.setdefault(t, u.node)
        for qi in u.quant_inputs:
            if qi.role == Role.ACTIVATION:
                reader.setdefault(qi.tensor, u.node)
    ops = {n.name: n.op_type for n in model.proto.graph.node}
    out: dict[str, list[str]] = {}
    for t, spec in the_plan.activations.items():
        node = producer.get(t) or reader.get(t)
        if node is None or not _searchable(spec) or node in recipe.overrides or t in the_plan.aliases:
            continue
        if resolve_node(recipe, node, ops.get(node, "")).sources.get("activation", "").startswith("rule"):
            continue
        out.setdefault(node, []).append(t)
    return out


def _searchable(spec: QuantSpec) -> bool:
    return (spec.granularity == Granularity.per_tensor and not spec.qtype.is_float and spec.observer == "minmax"
            and not spec.observer_args)


def _candidates(obs: Observer, spec: QuantSpec) -> dict[str, QParams] | None:
    """Candidate -> qparams from one histogram observer (None when it holds no histogram)."""
    if not isinstance(obs, HistogramObserver) or not obs.hists or obs.hists[0].lo is None:
        return None
    h = obs.hists[0]
    out = {"minmax": compute_qparams(np.float32(min(h.vmin, 0.0)), np.float32(max(h.vmax, 0.0)), spec.dtype,
                                     symmetric=spec.symmetric, reduce_range=spec.reduce_range,
                                     power_of_two=spec.power_of_two)}
    state = obs.state()
    for c in CANDIDATES[1:]:
        other = Observer.from_state({**state, "observer": c, "spec": {**state["spec"], "observer": c}})
        out[c] = other.qparams()
    return out


def _measures(model: PreparedModel, the_plan: QuantPlan, observers: dict[str, Observer],
              tensors: list[str]) -> dict[str, LocalError]:
    nodes = list(model.proto.graph.node)
    readers: dict[str, Reader] = {}
    out = {}
    for t in tensors:
        qps = _candidates(observers[t], the_plan.activations[t]) if t in observers else None
        if qps is None:
            continue
        rs = []
        for n in nodes:
            if n.op_type in COMPUTE_OPS and t in n.input and n.output:
                if n.name not in readers:
                    readers[n.name] = Reader(model.proto, n)
                rs.append(readers[n.name])
        out[t] = LocalError(t, qps, rs)
    return out


def _held_out_pass(model: PreparedModel, source, measures: dict[str, LocalError], first: int, end: int,
                   progress: ProgressFn | None, cancel: CancelToken | None) -> None:
    """Run rows ``first..end-1`` through the float model and feed every measurement."""
    inputs = {i.name for i in model.proto.graph.input}
    inits = {i.name for i in model.proto.graph.initializer}
    needed = sorted({t for m in measures.values() for t in m.needs()} - inits)
    fetch = [t for t in needed if t not in inputs]
    session = make_session(add_outputs(model.proto, fetch))
    done = 0
    for idx, feed in source.indexed_batches(BATCH, end):
        keep = [i for i, k in enumerate(idx) if k >= first]
        if not keep:
            continue
        if len(keep) != len(idx):
            feed = {k: v[keep[0]:] for k, v in feed.items()}
        if cancel is not None:
            cancel.check()
        outs = session.run(fetch, feed) if fetch else []  # run([]) returns every graph output
        values = {**{k: v for k, v in feed.items() if k in inputs}, **dict(zip(fetch, outs, strict=True))}
        for m in measures.values():
            m.update(values)
        done += len(keep)
        if progress is not None:
            progress(done, end - first, f"Measuring local error of {len(measures)} tensors")
