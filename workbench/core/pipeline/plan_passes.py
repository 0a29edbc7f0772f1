"""Plan passes: resolve the recipe into a plan, and the guards that keep units float.

Each guard keeps units float by adding them to the recipe's exclusions and resolving the plan
again, so the plan always says exactly what the written model holds; every unit it keeps float is
reported with the guard's :class:`~workbench.core.issues.IssueCode`.
"""

from __future__ import annotations

from workbench.core.errors import ModelError, WorkbenchError
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.calibrate_pass import calibrate
from workbench.core.pipeline.passes import Job, PassResult
from workbench.core.planning.island_guard import float_islands
from workbench.core.planning.opset_fit import fit_opset
from workbench.core.planning.plan import QuantPlan, build_plan
from workbench.core.planning.range_guard import disparate_concats, sentinel_units
from workbench.core.planning.weight_dq_guard import weight_only_units
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import PlanMode


def resolve_plan(model: PreparedModel, recipe: Recipe) -> QuantPlan:
    """``recipe`` resolved against ``model``, with units whose dtypes need an opset the model
    cannot reach excluded and reported (:mod:`workbench.core.planning.opset_fit`)."""
    return fit_opset(model, recipe, build_plan(model, recipe), build_plan)


class Plan:
    """Resolve the recipe into a :class:`~workbench.core.planning.plan.QuantPlan`."""

    name = "plan"

    def applies(self, job: Job) -> bool:
        return True

    def run(self, job: Job) -> PassResult:
        job.plan = resolve_plan(job.model, job.recipe)
        job.guard_recipe = job.recipe
        return PassResult(True)


class RefuseFloat16Only:
    """Stop when nothing can be quantized because the model computes in float16 (case 17): a
    "quantized" model identical to the input would only look like success."""

    name = "refuse-float16-only"

    def applies(self, job: Job) -> bool:
        return not any(not u.excluded for u in job.plan.units.values())

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


def guard_islands(model: PreparedModel, recipe: Recipe, the_plan: QuantPlan):
    """``(plan, recipe, issues)`` with element-wise units that reach no quantized Conv / MatMul /
    Gemm kept float (:mod:`workbench.core.planning.island_guard`), and compute units that would
    quantize only their weight (:mod:`workbench.core.planning.weight_dq_guard`)."""
    found = float_islands(the_plan)
    weight_only = [n for n in weight_only_units(the_plan) if n not in found]
    if not found and not weight_only:
        return the_plan, recipe, []
    guarded = recipe.with_excluded(list(found) + weight_only)
    return resolve_plan(model, guarded), guarded, island_issues(found) + weight_only_issues(weight_only)


class IslandGuard:
    """Keep element-wise islands float (before calibration, so they are never calibrated)."""

    name = "island-guard"

    def applies(self, job: Job) -> bool:
        return job.guard

    def run(self, job: Job) -> PassResult:
        job.plan, job.guard_recipe, issues = guard_islands(job.model, job.recipe, job.plan)
        return PassResult(bool(issues), issues)


class SentinelGuard:
    """Keep units float whose tensors reach a mask / sentinel value, and Concats joining ranges
    32x apart (:mod:`workbench.core.planning.range_guard`); needs the calibrated ranges, and
    calibrates the tensors the new plan adds."""

    name = "sentinel-guard"

    def applies(self, job: Job) -> bool:
        return job.guard and job.calibration is not None

    def run(self, job: Job) -> PassResult:
        found = sentinel_units(job.plan, job.qparams)
        concats = {n: v for n, v in disparate_concats(job.plan, job.qparams).items() if n not in found}
        if not found and not concats:
            return PassResult(False)
        guarded = job.guard_recipe.with_excluded(list(found) + list(concats))
        job.plan = resolve_plan(job.model, guarded)
        if any(t not in job.qparams for t in job.plan.activations) and job.data is not None:
            job.calibration = calibrate(job.model, job.plan, job.data, samples=job.samples, progress=job.progress,
                                        cancel=job.cancel, previous=job.calibration)
            job.qparams = job.calibration.qparams()
        issues = [PlanIssue(node, "warning", f"kept in float: tensor {t!r} reaches |{v:.3g}| (a mask or "
                            f"sentinel value); an integer grid over that range would erase the real values",
                            code=IssueCode.SENTINEL_RANGE)
                  for node, (t, v) in found.items()]
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
