"""Keep element-wise "islands" in float: quantized units that reach no Conv / MatMul / Gemm unit.

onnxruntime gains speed from QDQ only where a compute op (Conv, ConvTranspose, MatMul, Gemm)
fuses into an integer kernel; element-wise and data-movement units (Add, Mul, Concat, pools,
Resize) are quantized so that the integer chain between compute units is not broken by
DQ -> float op -> Q. A connected group of such units that touches no quantized compute unit
(every neighbour is float) breaks no chain: onnxruntime runs it as Q -> QLinearAdd/QLinearConcat
-> DQ, more work than the float op, and its only effect is the rounding.

That rounding is not harmless. silero_vad_16k_op15 joins its LSTM state as
``Concat(h, c) -> Add(+0) -> stateN``: one uint8 grid over c's range (|c| up to 27 in the
calibration data) gives h (|h| <= 1) about 10 levels, and the caller feeds ``stateN`` back as
``state`` on every 32 ms chunk, so the error compounds (ROC-AUC 0.933 vs 0.950 float; 0.943
with that island left float). The per-step analysis, fed the stored float state, cannot see it.

The guard applies when the plan quantizes at least one compute unit (a model made only of
element-wise ops is quantized as asked), and never to a node the recipe names itself.
"""

from __future__ import annotations

from workbench.core.graph import op_families as U


def _root(plan, t: str) -> str:
    t = plan.proxies.get(t, t)
    seen = set()
    while t in plan.aliases and t not in seen:
        seen.add(t)
        t = plan.aliases[t]
    return t


def _components(plan, names: list[str]) -> list[list[str]]:
    """Groups of ``names`` (unit keys) that share an activation tensor (through aliases)."""
    parent = {n: n for n in names}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    owner: dict[str, str] = {}
    for n in names:
        unit = plan.units[n]
        for t in list(unit.inputs) + list(unit.outputs):
            r = _root(plan, t)
            if r in owner:
                parent[find(n)] = find(owner[r])
            else:
                owner[r] = n
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(find(n), []).append(n)
    return list(groups.values())


def float_islands(plan) -> dict[str, list[str]]:
    """Units of ``plan`` to keep in float: node -> the other nodes of its island.

    Parameters
    ----------
    plan : QuantPlan
        A static plan (other modes return ``{}``).

    Returns
    -------
    dict[str, list[str]]
        Every non-excluded, non-compute unit whose connected group of quantized units (units
        sharing an activation tensor, pass-through aliases followed) holds no Conv,
        ConvTranspose, MatMul or Gemm unit; empty when the plan has no compute unit at all or
        the recipe names the node itself (override, exclude list or name rule).
    """
    if plan.mode != "static":
        return {}
    live = [n for n, u in plan.units.items() if not u.excluded and (u.inputs or u.outputs)]
    if not any(plan.units[n].op_type in U.WEIGHT_OPS for n in live):
        return {}
    found: dict[str, list[str]] = {}
    for group in _components(plan, live):
        if any(plan.units[n].op_type in U.WEIGHT_OPS for n in group):
            continue
        for n in group:
            if not named_by_recipe(plan.recipe, n, plan.units[n].op_type):
                found[n] = [m for m in group if m != n]
    return found


def named_by_recipe(recipe, node: str, op_type: str) -> bool:
    """True if an override or a name rule of ``recipe`` matches ``node``. Op-type rules do not count,
    nor do rules for every node (a name of only ``*``, e.g. the recipe choice's ``{"name": "*",
    "activation": {"observer": "mse"}}``): they set how nodes quantize, not which ones must."""
    return node in recipe.overrides or any(r.name and r.name.strip("*") and r.matches(node, op_type)
                                           for r in recipe.rules)


def quantized_islands(plan) -> list[list[str]]:
    """Connected groups of the quantized units of ``plan`` that quantize an activation (units sharing an
    activation tensor, pass-through aliases and If-branch outputs followed), smallest first (ties by their
    first node name).

    Each group is what onnxruntime runs between one set of Q and DQ transitions: keeping a whole
    group float removes its transitions and its integer kernels together. An If branch's MatMul whose
    input and output are calibrated in the main graph (``unit.graph`` set) is in the group of the units
    reading the If's output: case 20's ``then_mm``, ``else_mm`` and ``relu`` are one island (before, the
    branch units were left out, so "every island float" still wrote their Q/DQ). Units quantizing only a
    weight (no activation tensor) are in no group. A Relu / Clip the plan does not count
    (:meth:`~workbench.core.planning.plan.QuantPlan.carried`) joins its neighbours into one
    group but is not listed in it: with them float it is float and no unit of the plan, so a group counts what
    the plan written counts ("0 of 2 node units quantized"; case 20's note said "island of 3" with ``relu``).
    Empty for non-static plans.

    Returns
    -------
    list[list[str]]
        Unit keys (node names) of each group, in plan order.
    """
    if plan.mode != "static":
        return []
    live = [n for n, u in plan.units.items() if not u.excluded and (u.inputs or u.outputs)]
    counted = plan.counted_units()
    groups = [[n for n in g if n in counted] for g in _components(plan, live)]
    return sorted([g for g in groups if g], key=lambda g: (len(g), g[0]))
