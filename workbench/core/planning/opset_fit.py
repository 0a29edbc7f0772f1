"""Fit a plan to the opsets the model can reach: units whose dtypes need more stay float, in the plan.

A plan asks for the opset its specs need (uint16 / int16 activations and int4 weights: 21,
float8: 19, per-channel: 13; ONNX QuantizeLinear change log). When ``onnx.version_converter``
cannot bring the model there (a model-local function, an op without an adapter), the writer
can only leave those units float. Deciding that here, before calibration, keeps the plan and the
written model in agreement: the units are excluded (reported one by one) and the plan's
``min_opset`` becomes the highest opset the conversion does reach.
"""

from __future__ import annotations

import logging

from workbench.core.errors import WorkbenchError
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.model.load import upgrade_opset
from workbench.core.recipe.spec import Granularity
from workbench.core.wording import count, plural

log = logging.getLogger(__name__)


def spec_opset(spec) -> int:
    """Lowest default-domain opset whose QuantizeLinear/DequantizeLinear can hold ``spec``."""
    need = spec.qtype.min_opset
    if spec.granularity == Granularity.per_channel:
        need = max(need, 13)
    elif spec.granularity == Granularity.per_block:
        need = max(need, 21)
    return need


def unit_opset(plan, unit) -> int:
    """Opset the unit's quantization needs (its inputs' specs and its outputs' activation specs)."""
    specs = [q.spec for q in unit.quant_inputs] + [plan.activations[t] for t in unit.outputs
                                                   if t in plan.activations]
    return max((spec_opset(s) for s in specs), default=10)


def reachable_opset(model, wanted: list[int], tried: dict[int, str] | None = None) -> tuple[int, str]:
    """Highest opset of ``wanted`` the model converts to (else its own) and the first failure's message.
    ``tried``: target -> "" (converted) or the conversion's error, of earlier calls on the same unchanged
    model; read and filled in, so each target is converted once (a whole-model conversion: 17 ms on
    nudenet_320n, once per plan of the recipe choice's 16-bit groups)."""
    current = model.opset
    tried = {} if tried is None else tried
    first_error = ""
    for target in sorted({t for t in wanted if t > current}, reverse=True):
        if target not in tried:
            try:
                upgrade_opset(model.proto, target, source=model.name)
                tried[target] = ""
            except WorkbenchError as exc:
                tried[target] = exc.message or type(exc).__name__
        if not tried[target]:
            return target, first_error
        first_error = first_error or tried[target]
    return current, first_error


def fit_opset(model, recipe, plan, replan, tried: dict[int, str] | None = None):
    """``plan`` with the units the model's reachable opset cannot express excluded and reported.

    Parameters
    ----------
    model : PreparedModel
    recipe : Recipe
        The recipe ``plan`` was built from.
    plan : QuantPlan
    replan : callable
        ``replan(model, recipe) -> QuantPlan`` (:func:`workbench.core.planning.plan.build_plan`).
    tried : dict, optional
        The conversions already tried on ``model`` (:func:`reachable_opset`).

    Returns
    -------
    QuantPlan
        ``plan`` itself when the model reaches ``plan.min_opset``; otherwise a new plan whose
        ``issues`` name every unit left float, with the opset it needs and the conversion error.
    """
    current = model.opset
    if plan.min_opset <= current:
        return plan
    needs = {n: unit_opset(plan, u) for n, u in plan.units.items() if not u.excluded}
    reached, error = reachable_opset(model, [plan.min_opset] + list(needs.values()), tried)
    if reached >= plan.min_opset:
        return plan
    beyond = {n: need for n, need in needs.items() if need > reached}
    fitted = replan(model, recipe.with_excluded(beyond))
    fitted.min_opset = reached
    fitted.issues.insert(0, PlanIssue("", "warning", f"The plan needs opset {plan.min_opset} but the model "
                                      f"(opset {current}) converts only to opset {reached}: {error} "
                                      f"{count(len(beyond), 'unit')} {plural(len(beyond), 'stays', 'stay')} float (listed per node).", code=IssueCode.NEEDS_NEWER_OPSET))
    for n, need in beyond.items():
        fitted.issues.append(PlanIssue(n, "warning", f"left in float: its quantization needs opset {need}, "
                                       f"the model reaches {reached}. Re-export the model at opset {need} or "
                                       "higher, or use 8-bit dtypes for this node.", code=IssueCode.NEEDS_NEWER_OPSET))
    log.info("opset fit: %d units excluded (need > opset %d)", len(beyond), reached)
    return fitted
