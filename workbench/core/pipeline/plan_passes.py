"""Plan passes: resolve the recipe into a plan, and the guards that keep units float.

Each guard keeps units float by adding them to the recipe's exclusions and resolving the plan
again, so the plan always says exactly what the written model holds; every unit it keeps float is
reported with the guard's :class:`~workbench.core.issues.IssueCode`.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.core.errors import ModelError, RecipeError, WorkbenchError
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.calibrate_pass import calibrate
from workbench.core.pipeline.passes import Job, PassResult
from workbench.core.pipeline.size_probe import changing_with_size
from workbench.core.planning.island_guard import float_islands
from workbench.core.planning.opset_fit import fit_opset
from workbench.core.planning.plan import GraphFacts, QuantPlan, build_plan
from workbench.core.planning.range_guard import disparate_concats, sentinel_units
from workbench.core.planning.shape_guard import size_derived_units
from workbench.core.planning.stats_guard import infinite_tensors
from workbench.core.planning.weight_dq_guard import weight_only_units
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import PlanMode
from workbench.core.wording import count


def resolve_plan(model: PreparedModel, recipe: Recipe, facts: GraphFacts | None = None) -> QuantPlan:
    """``recipe`` resolved against ``model``, with units whose dtypes need an opset the model
    cannot reach excluded and reported (:mod:`workbench.core.planning.opset_fit`). ``facts``: the
    graph analyses of an earlier plan of ``model`` (see :class:`~workbench.core.planning.plan.GraphFacts`)."""
    facts = facts if facts is not None and facts.proto is model.proto else GraphFacts(model.proto)
    return fit_opset(model, recipe, build_plan(model, recipe, facts), lambda m, r: build_plan(m, r, facts),
                     facts.opset_conversions)


def job_facts(job: Job) -> GraphFacts:
    """The job's :class:`~workbench.core.planning.plan.GraphFacts`, made once per (unchanged) model."""
    if job.graph_facts is None or job.graph_facts.proto is not job.model.proto:
        job.graph_facts = GraphFacts(job.model.proto)
    return job.graph_facts


class Plan:
    """Resolve the recipe into a :class:`~workbench.core.planning.plan.QuantPlan`."""

    name = "plan"

    def applies(self, job: Job) -> bool:
        return True

    def run(self, job: Job) -> PassResult:
        job.plan = resolve_plan(job.model, job.recipe, job_facts(job))
        job.guard_recipe = job.recipe
        refuse_nonfinite_weights(job.model, job.plan, job_facts(job).extremes)
        return PassResult(True)


def refuse_nonfinite_weights(model: PreparedModel, the_plan: QuantPlan,
                             extremes: dict[str, tuple[float, float]] | None = None) -> None:
    """Refuse, before any calibration, a planned weight holding NaN / Inf (no scale holds it).
    ``extremes``: (min, max) of main-graph float weights already read (a weight found there
    with finite extremes is not read again).

    Raises
    ------
    RecipeError
        Naming the weight and how many values are not finite.
    """
    for unit in the_plan.units.values():
        if unit.excluded:
            continue
        for q in unit.quant_inputs:
            if q.role != "weight":
                continue
            known = (extremes or {}).get(q.tensor)
            if known is not None and math.isfinite(known[0]) and math.isfinite(known[1]):
                continue
            w = np.asarray(model.initializer(q.tensor))
            # min / max: NaN and +-Inf both show there, and no temporary array the size of the weight
            if w.dtype.kind == "f" and w.size and not (np.isfinite(w.min()) and np.isfinite(w.max())):
                raise RecipeError(f"weight {q.tensor!r} holds {count(int(w.size - np.isfinite(w).sum()), 'NaN/Inf value')}; "
                                  "it cannot be quantized.", hint=f"Fix the weight in the model, or keep its node "
                                                                  f"float with --exclude {unit.node}.")


class RefuseFloat16Only:
    """Stop when nothing can be quantized because the model computes in float16 (case 17): a
    "quantized" model identical to the input would only look like success."""

    name = "refuse-float16-only"

    def applies(self, job: Job) -> bool:
        return not job.plan.quantizes_any()

    def run(self, job: Job) -> PassResult:
        fp16 = sorted({i.node for i in job.plan.issues if i.code == IssueCode.FLOAT16})
        if fp16:
            raise ModelError(f"{job.model.name}: nothing can be quantized because the model computes in 16-bit "
                             f"float (nodes {', '.join(fp16[:5])}{' ...' if len(fp16) > 5 else ''}).",
                             hint="Convert the model to fp32 first (e.g. onnxconverter-common's float16 -> float32 "
                                  "conversion, or re-export in fp32), then quantize the fp32 model.")
        return PassResult(False)


def island_issues(found: dict[str, list[str]]) -> list[PlanIssue]:
    return [PlanIssue(node, "info", "kept in float: it reaches no quantized Conv/MatMul/Gemm"
                      + (f" (nor do {', '.join(repr(o) for o in others[:3])})" if others else "")
                      + ", so onnxruntime gains no integer kernel and quantizing would only add rounding; "
                      "name the node in an override to quantize it anyway", code=IssueCode.FLOAT_ISLAND)
            for node, others in found.items()]


def weight_only_issues(nodes: list[str]) -> list[PlanIssue]:
    return [PlanIssue(node, "info", "kept in float: no activation of it is quantized, so onnxruntime would run "
                      "its weight DequantizeLinear in float on every inference (slower than float, no integer "
                      "kernel); name the node in an override to store its weight as int8 anyway",
                      code=IssueCode.WEIGHT_DQ_ONLY) for node in nodes]


def guard_islands(model: PreparedModel, recipe: Recipe, the_plan: QuantPlan, facts: GraphFacts | None = None):
    """``(plan, recipe, issues)`` with element-wise units that reach no quantized Conv / MatMul /
    Gemm kept float (:mod:`workbench.core.planning.island_guard`), and compute units that would
    quantize only their weight (:mod:`workbench.core.planning.weight_dq_guard`)."""
    found = float_islands(the_plan)
    weight_only = [n for n in weight_only_units(the_plan) if n not in found]
    if not found and not weight_only:
        return the_plan, recipe, []
    guarded = recipe.with_excluded(list(found) + weight_only)
    return resolve_plan(model, guarded, facts), guarded, island_issues(found) + weight_only_issues(weight_only)


def infinite_units(the_plan: QuantPlan, infinite: set[str]) -> dict[str, str]:
    """Units with an activation or constant input / output in ``infinite``: node -> that tensor
    (weights are not looked at: a non-finite weight is refused by the writer, naming it)."""
    found = {}
    for name, unit in the_plan.units.items():
        if unit.excluded:
            continue
        touched = [q.tensor for q in unit.quant_inputs if q.role in ("activation", "const")] + list(unit.outputs)
        hit = next((t for t in touched if t in infinite), None)
        if hit is not None:
            found[name] = hit
    return found


class NonFiniteGuard:
    """Keep units float whose tensors hold +-inf by construction (a ``-inf`` causal mask added to
    attention scores): no scale holds them, so they keep their unit float, reported by name, and
    the rest of the model is quantized (before calibration; ``finfo.min`` fills, which are finite,
    are found from their calibrated range by :class:`SentinelGuard`)."""

    name = "non-finite-guard"

    def applies(self, job: Job) -> bool:
        return job.guard and job.plan.mode == PlanMode.STATIC

    def run(self, job: Job) -> PassResult:
        facts = job_facts(job)
        infinite = infinite_tensors(facts.ix, facts.extremes)
        found = infinite_units(job.plan, infinite) if infinite else {}
        if not found:
            return PassResult(False)
        job.guard_recipe = job.guard_recipe.with_excluded(found)
        job.plan = resolve_plan(job.model, job.guard_recipe, job_facts(job))
        return PassResult(True, [PlanIssue(node, "warning", f"kept in float: tensor {t!r} holds +-inf by "
                                           "construction (e.g. a -inf attention mask); no integer grid holds "
                                           "infinity, so this unit computes in float", code=IssueCode.NONFINITE_TENSOR)
                                 for node, t in found.items()])


class SizeGuard:
    """Keep units float that would quantize a tensor computed from a dynamic input size only (an
    anchor grid from ``Shape(x)``, positions from ``Range(seq_len)``;
    :mod:`workbench.core.planning.shape_guard`): its range calibrated at one size does not hold
    at another. Before calibration; one warning for all of them."""

    name = "size-guard"

    def applies(self, job: Job) -> bool:
        return job.guard and job.plan.mode == PlanMode.STATIC

    def run(self, job: Job) -> PassResult:
        tensors = job_facts(job).size_derived
        found = size_derived_units(job.plan, tensors) if tensors else {}
        if found:  # the graph's answer, checked on the float model at two sizes (size_probe)
            found = size_derived_units(job.plan, changing_with_size(job.model, job.data, tensors,
                                                                    memo=job_facts(job).size_probes))
        if not found:
            return PassResult(False)
        job.guard_recipe = job.guard_recipe.with_excluded(found)
        job.plan = resolve_plan(job.model, job.guard_recipe, job_facts(job))
        first, t = next(iter(found.items()))
        return PassResult(True, [PlanIssue(first, "warning", f"kept in float: {count(len(found), 'unit')} "
                                           f"quantizing tensors computed from the input's size (first: {t!r}); "
                                           "ranges calibrated at one size do not hold at another",
                                           code=IssueCode.SIZE_DERIVED, units=tuple(found))])


class IslandGuard:
    """Keep element-wise islands float (before calibration, so they are never calibrated)."""

    name = "island-guard"

    def applies(self, job: Job) -> bool:
        return job.guard

    def run(self, job: Job) -> PassResult:
        job.plan, job.guard_recipe, issues = guard_islands(job.model, job.guard_recipe, job.plan, job_facts(job))
        return PassResult(bool(issues), issues)


class SentinelGuard:
    """Keep units float whose tensors reach a mask / sentinel value (in the calibrated range, or by
    construction from a huge constant of the graph), whose tensors the model makes
    NaN / Inf from finite data, and Concats joining ranges 32x apart
    (:mod:`workbench.core.planning.range_guard`); needs the calibrated ranges, and calibrates the
    tensors the new plan adds."""

    name = "sentinel-guard"

    def applies(self, job: Job) -> bool:
        return job.guard and job.calibration is not None

    def run(self, job: Job) -> PassResult:
        found = sentinel_units(job.plan, job.qparams, masks=job_facts(job).mask_values)
        computed = {n: t for n, t in infinite_units(job.plan, job.calibration.computed_nonfinite()).items()
                    if n not in found}
        concats = {n: v for n, v in disparate_concats(job.plan, job.qparams).items()
                   if n not in found and n not in computed}
        if not found and not concats and not computed:
            return PassResult(False)
        guarded = job.guard_recipe.with_excluded(list(found) + list(computed) + list(concats))
        job.plan = resolve_plan(job.model, guarded, job_facts(job))
        if any(t not in job.qparams for t in job.plan.activations) and job.data is not None:
            job.calibration = calibrate(job.model, job.plan, job.data, samples=job.samples, progress=job.progress,
                                        cancel=job.cancel, previous=job.calibration)
            job.qparams = job.calibration.qparams()
        issues = [PlanIssue(node, "warning", f"kept in float: tensor {t!r} reaches |{v:.3g}| (a mask or "
                            f"sentinel value); an integer grid over that range would erase the real values",
                            code=IssueCode.SENTINEL_RANGE)
                  for node, (t, v) in found.items()]
        issues += [PlanIssue(node, "warning", f"kept in float: tensor {t!r} is NaN/Inf in some calibration samples "
                             "although the data is finite (the model computes it, e.g. Log of a 0/1 mask); no "
                             "integer grid holds it", code=IssueCode.NONFINITE_TENSOR) for node, t in computed.items()]
        issues += [PlanIssue(node, "warning", f"kept in float: its inputs' ranges differ {r:.0f}x (smallest: "
                             f"{t!r}); one shared 8-bit grid would erase the small-range input",
                             code=IssueCode.DISPARATE_CONCAT) for node, (t, r) in concats.items()]
        return PassResult(True, issues)


class RequireRanges:
    """Stop when a planned activation has no calibrated range (a stale cache without data)."""

    name = "require-ranges"

    def applies(self, job: Job) -> bool:
        return job.plan.mode == PlanMode.STATIC and bool(job.plan.activations)

    def run(self, job: Job) -> PassResult:
        missing = [t for t in job.plan.activations if t not in job.qparams]
        if missing:
            raise WorkbenchError(f"No calibration ranges for {len(missing)} tensors (e.g. {missing[0]!r}).",
                                 hint="Calibrate again with data for the current recipe.")
        return PassResult(False)
