"""The planner's view for ``inspect --units``: which node units a preset would quantize.

Kept apart from :mod:`workbench.core.inspection.report` because it needs the recipe and the
planner (pydantic and the op-family tables, about 0.2 s of imports): a plain ``inspect`` does not.
"""

from __future__ import annotations

from collections import Counter

from workbench.core.model.load import PreparedModel
from workbench.core.planning.island_guard import float_islands
from workbench.core.planning.plan import build_plan
from workbench.core.planning.weight_dq_guard import weight_only_units
from workbench.core.recipe.recipe import Recipe


def planned_units(model: PreparedModel, preset: str = "cpu-u8s8") -> dict | None:
    """Node units :func:`workbench.core.planning.plan.build_plan` would quantize with ``preset``.

    Returns
    -------
    dict or None
        ``preset``, ``count``, ``by_op`` ({op type: count}, most first), ``nodes`` (the main
        node of each unit, in graph order) and ``kept_float`` (how many of them ``quantize``'s
        default guards keep float, by reason: element-wise islands that reach no quantized
        Conv/MatMul/Gemm, compute units that would quantize only their weight); None for an
        already-quantized model (nothing to plan).

    Raises
    ------
    RecipeError
        Unknown ``preset``.
    """
    if model.quantized:
        return None
    plan = build_plan(model, Recipe(preset=preset))
    units = [u for u in plan.counted_units().values() if not u.excluded]  # as quantize's "N of M" counts them
    islands = float_islands(plan)
    weight_only = [n for n in weight_only_units(plan) if n not in islands]
    kept = {"float-island": len(islands), "weight-only": len(weight_only)}
    return {"preset": preset, "count": len(units),
            "by_op": dict(Counter(u.op_type for u in units).most_common()),
            "nodes": [u.node for u in units], "kept_float": {k: n for k, n in kept.items() if n}}
