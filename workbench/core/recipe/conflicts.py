"""Settings of one rule or override whose fields do not fit together (``per_block`` without ``block_size``,
``block_size`` with ``per_tensor``, an MX dtype not per block, ``reduce_range`` on a dtype that is not 8-bit,
``observer_args`` without ``observer`` that the preset's observer does not read),
found when a recipe file is read (:meth:`workbench.core.recipe.recipe.Recipe.from_json`) instead of when a
node is resolved at plan time, which cannot name the file.

A role's settings are merged onto the preset's spec for that role as :func:`resolve_node` does (it checks
each layer as it applies it), after the earlier op-type rules of the same ``op_type``: those reach every node the
rule reaches, so ``{"op_type": "Gemm", "weight": {"granularity": "per_block", "block_size": 32}}`` then
``{"op_type": "Gemm", "weight": {"granularity": "per_tensor"}}`` is refused here, naming ``rules.1``, not at plan
time without the file. Settings that another earlier layer may change on the same node first (an op-type rule
before a name glob; any rule before an override) setting the same role's dtype, granularity, block_size,
reduce_range or enabled (observer or enabled, for ``observer_args``) are left to the plan, since which layers meet
depends on the model.
"""

from __future__ import annotations

from typing import Any

from workbench.core.recipe.checks import (
    BLOCK_OBSERVERS,
    MX_DTYPES,
    OBSERVER_READS,
    ROLES,
    UNAPPLIED_ACTIVATION_GRANULARITY,
    Granularity,
    block_observer_problem,
    inherited_observer_reads,
    mx_activation_problem,
    spec_conflict,
)

#: the spec fields whose values must fit together (:func:`spec_conflict`)
_FIELDS = ("dtype", "granularity", "block_size", "reduce_range")
#: what to write when the conflicting field comes from the preset and another one was set in the recipe
_INHERITED_FIX = {"block_size": 'add "block_size": null next to it, or use "granularity": "per_block"',
                  "dtype": 'use "granularity": "per_block" with "block_size": 32 for the preset\'s {value}',
                  "reduce_range": 'add "reduce_range": false next to it',
                  "granularity": 'use a positive "block_size" (e.g. 32)'}


def _layers(recipe: Any) -> list[tuple[str, str, Any]]:
    """``(location, label, settings)`` of each rule and override, as a recipe file spells them, in the order
    :func:`resolve_node` applies them to a node (op-type rules, name-glob rules, overrides)."""
    rules = [(f"rules.{i}", rule.label, rule) for i, rule in enumerate(recipe.rules)]
    out = [r for r in rules if r[2].op_type] + [r for r in rules if r[2].name]
    return out + [(f"overrides.{name}", f"override of node {name}", o) for name, o in recipe.overrides.items()]


def _may_meet(a: Any, b: Any) -> bool:
    """Whether settings ``a`` and ``b`` (rules or overrides) may both apply to one node."""
    op_a, op_b = getattr(a, "op_type", None), getattr(b, "op_type", None)
    return not (op_a and op_b and op_a != op_b) and not (_is_override(a) and _is_override(b))


def _is_override(settings: Any) -> bool:
    return not hasattr(settings, "op_type")


def _always_meet(a: Any, b: Any) -> bool:
    """Whether settings ``a`` and ``b`` both apply to every node either reaches: op-type rules of one op type."""
    op_a = getattr(a, "op_type", None)
    return bool(op_a) and op_a == getattr(b, "op_type", None)


def spec_changes(part: Any, current: Any) -> dict:
    """``part``'s (a PartialSpec) changes to the spec ``current``; an ``observer`` set without ``observer_args``
    keeps only the inherited args it reads (an entropy rule's ``bins`` went on to an override's minmax, which
    ignores it, and showed in the node's resolved settings)."""
    changes = part.changes()
    if part.observer is not None and part.observer_args is None and current.observer_args:
        reads = OBSERVER_READS.get(part.observer, ())
        changes["observer_args"] = {k: v for k, v in current.observer_args.items() if k in reads}
    return changes


def _after(base: Any, role: str, earlier: list[tuple[str, str, Any]], preset: str) -> tuple[Any, dict[str, str]]:
    """The spec of ``role`` once the settings of ``earlier`` (``(location, label, settings)`` in order) are applied
    to the preset's ``base`` as :func:`resolve_node` applies them (``enabled`` false: float, None; true: from the
    preset's spec again), with where each field's value comes from (``"preset cpu-u8s8"``, ``"rules.0, rule
    op_type=Gemm"``)."""
    spec, origin = base, dict.fromkeys(base.model_fields, f"preset {preset}")
    for where, label, settings in earlier:
        part = getattr(settings, role)
        if part is None:
            continue
        if part.enabled is False:
            spec = None
            continue
        if spec is None and part.enabled:
            spec, origin = base, dict.fromkeys(base.model_fields, f"preset {preset}")
        if spec is not None:
            changes = spec_changes(part, spec)
            spec = spec.model_copy(update=changes)
            origin.update(dict.fromkeys(changes, f"{where}, {label}"))
    return spec, origin


def _touches(settings: Any, role: str, fields: tuple[str, ...]) -> bool:
    part = getattr(settings, role)
    return part is not None and bool({"enabled", *fields} & part.model_fields_set)


def _base(recipe: Any, role: str) -> Any:
    """The preset's spec for ``role`` (its 8-bit weight with the recipe's ``reduce_range``), or None."""
    config = recipe.preset_obj().config
    spec = getattr(config, role)
    if role == "weight" and spec is not None and recipe.reduce_range is not None and config.activation is not None \
            and spec.qtype.bits == 8 and not spec.qtype.is_float \
            and config.activation.qtype.bits == 8 and not config.activation.qtype.is_float:
        spec = spec.model_copy(update={"reduce_range": recipe.reduce_range})
    return spec


def first_conflict(recipe: Any, *, unapplied: bool = False) -> tuple[str, str, str] | None:
    """The first rule or override whose role settings contradict each other on the preset's spec, as
    ``(where, problem, fix)``: ``where`` names the field as a recipe file spells it and the rule
    (``rules.0.weight.granularity (rule op_type=MatMul)``); ``problem`` and ``fix`` are sentences without
    a final period. None when there is none (or only ones the plan decides, see the module docstring).
    ``unapplied``: also activation settings a static plan does not apply as written (:func:`_activation_grid`),
    for a recipe file a user wrote; a recipe the app built keeps them and gets the plan's warning."""
    layers = _layers(recipe)
    quantized = recipe.quantized_op_types()
    static = recipe.preset_obj().mode == "static"  # only a static plan quantizes activations ahead of time
    for at, (where, label, settings) in enumerate(layers):
        for role in ROLES:
            part = getattr(settings, role)
            if part is None or part.enabled is False:
                continue
            op_type = getattr(settings, "op_type", None)
            if _base(recipe, role) is None or (op_type and op_type not in quantized and not part.enabled):
                continue  # the role stays float on every node these settings reach
            same = [layer for layer in layers[:at] if _always_meet(settings, layer[2])]
            base, origin = _after(_base(recipe, role), role, same, recipe.preset)
            if base is None and part.enabled:
                base, origin = _after(_base(recipe, role), role, [], recipe.preset)
            if base is None:
                continue  # an earlier rule of its op type keeps the role float, and this one does not turn it on
            grid = ((_FIELDS, _activation_grid),) if unapplied and role == "activation" and static else ()
            block = (((*_FIELDS, "observer"), _block_observer),) if unapplied else ()
            for fields, check in (*grid, (_FIELDS, _conflict), *block, (("observer",), _unread_args)):
                if any(_may_meet(settings, other) and not _always_meet(settings, other)
                       and _touches(other, role, fields) for _, _, other in layers[:at]):
                    continue
                found = check(base, part, origin)
                if found is not None:
                    field, problem, fix = found
                    return f"{where}.{role}.{field} ({label})", problem, fix
    return None


def _activation_grid(base: Any, part: Any, origin: dict[str, str]) -> tuple[str, str, str] | None:
    """Activation settings the plan never applies as written (``planning.plan._activation_spec``): per_block
    activations are left float (an MX dtype needs per_block, so MX activations too), per_channel ones quantized
    per tensor; blamed on a field ``part`` sets (the dtype for an MX format, else the granularity)."""
    changes = part.changes()
    merged = {**base.model_dump(), **changes}
    granularity, dtype = Granularity(merged["granularity"]), merged["dtype"]
    if dtype in MX_DTYPES:
        field = "dtype" if "dtype" in changes else next(f for f in _FIELDS if f in changes)
        return (field, mx_activation_problem(dtype) + ("" if field == "dtype" else
                                                      f"; dtype {dtype} comes from {origin['dtype']}"),
                'use an integer or float8 dtype for activations (e.g. "uint8"), per_tensor; MX formats are for weights')
    if granularity not in UNAPPLIED_ACTIVATION_GRANULARITY:
        return None
    field = "granularity" if "granularity" in changes else next(f for f in _FIELDS if f in changes)
    inherited = "" if field == "granularity" else f" (granularity {granularity.value} comes from {origin['granularity']})"
    fix = ' without "block_size"' if granularity == Granularity.per_block else ""
    return (field, f"{UNAPPLIED_ACTIVATION_GRANULARITY[granularity]}{inherited}", f'use "granularity": "per_tensor"{fix}')


def _block_observer(base: Any, part: Any, origin: dict[str, str]) -> tuple[str, str, str] | None:
    """A per_block spec whose observer computes no per-block ranges (:data:`BLOCK_OBSERVERS`): calibration
    would use minmax instead, with a warning; blamed on the observer when ``part`` sets it, else on the
    granularity or block size it sets."""
    changes = part.changes()
    merged = {**base.model_dump(), **changes}
    if Granularity(merged["granularity"]) != Granularity.per_block or merged["observer"] in BLOCK_OBSERVERS:
        return None
    observer = merged["observer"]
    if "observer" in changes:
        return ("observer", block_observer_problem(observer),
                'use "observer": "minmax" for per_block settings, or remove it')
    field = next(f for f in ("granularity", "block_size", "dtype", "reduce_range") if f in changes)
    return (field, f"the {observer} observer (from {origin['observer']}) computes no per_block ranges (calibration "
                   "would use minmax instead)", 'add "observer": "minmax" next to it')


def _unread_args(base: Any, part: Any, origin: dict[str, str]) -> tuple[str, str, str] | None:
    """``observer_args`` set without ``observer``, which go to the inherited observer (``origin``: where each
    field of ``base`` comes from): blamed when it does not read them all (:func:`inherited_observer_reads`)."""
    if part.observer is not None or not part.observer_args:
        return None
    try:
        inherited_observer_reads(base.observer, part.observer_args)
    except ValueError as exc:
        problem, _, fix = str(exc).partition(": ")
        return "observer_args", f"{problem} (from {origin['observer']})", fix
    return None


def _conflict(base: Any, part: Any, origin: dict[str, str]) -> tuple[str, str, str] | None:
    """:func:`spec_conflict` of ``base`` with ``part``'s changes, blamed on a field ``part`` sets (``origin``:
    where each field of ``base`` comes from, named when the other field of the conflict is inherited)."""
    changes = part.changes()
    merged = {**base.model_dump(), **changes}
    found = spec_conflict(merged["dtype"], Granularity(merged["granularity"]), merged["block_size"],
                          merged["reduce_range"])
    if found is None:
        return None
    field, problem, fix = found
    if field in changes:
        return found
    mine = next(f for f in _FIELDS if f in changes)
    value = merged[field].value if isinstance(merged[field], Granularity) else merged[field]
    value_text = "true" if value is True else value
    problem = f"{problem} ({field} {value_text} comes from {origin[field]})"
    fix = _INHERITED_FIX[field].format(value=value)
    return mine, problem, fix if origin[field].startswith("preset ") else fix.replace("the preset's ", "the inherited ")
