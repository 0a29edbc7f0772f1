"""Recipes: what to quantize and how, as typed, JSON-serialisable settings.

A :class:`Recipe` starts from a preset (a default :class:`NodeConfig` and the op types it
quantizes), then applies rules in a fixed precedence, lowest first::

    preset  <  op-type rule  <  node-name glob rule  <  node override

Exclusions (``Recipe.exclude`` globs, or ``exclude=True`` in a rule / override) keep a node in
float. :func:`resolve_node` gives the effective config of one node together with where each
field came from, which the app's inspector shows.
"""

from __future__ import annotations

import fnmatch
import json
import math
from typing import Annotated, Any, Literal

from workbench.core.errors import RecipeError
from workbench.core.formats.qtypes import QONNX_DTYPES
from workbench.core.recipe import checks
from workbench.core.recipe.conflicts import first_conflict, spec_changes
from workbench.core.recipe.fields import Valid
from workbench.core.recipe.presets import PRESETS, get_preset
from workbench.core.recipe.record import Factory, Record
from workbench.core.recipe.spec import (
    ROLES,
    NodeConfig,
    NodeSettings,
    PartialSpec,
    Preset,
    QuantSpec,
    Rule,
    SmoothQuantSpec,
)
from workbench.core.wording import count, did_you_mean


def _known_preset(name: str) -> str:
    if name not in PRESETS:
        # as --preset says it
        raise ValueError(f"unknown preset {name!r}{did_you_mean(name, PRESETS)}; use one of {', '.join(PRESETS)}")
    return name


def _qonnx_only_dtypes(recipe: Any) -> None:
    """QONNX-only dtypes (int2..int7, bipolar) need ``target`` "qonnx"; the error names each field that
    sets one (``rules.0.activation.dtype int3``), since this check has no single field of its own."""
    if recipe.target == "qonnx":
        return
    settings = [(f"rules.{i}", r) for i, r in enumerate(recipe.rules)]
    settings += [(f"overrides.{name}", o) for name, o in recipe.overrides.items()]
    bad = [f"{where}.{role}.dtype {spec.dtype}" for where, s in settings for role in ROLES
           if (spec := getattr(s, role)) is not None and spec.dtype in QONNX_DTYPES]
    if bad:
        more = f" (and {count(len(bad) - 3, 'more field')})" if len(bad) > 3 else ""
        raise ValueError(f"{', '.join(bad[:3])}{more}: a dtype that exists only in QONNX; add "
                         '"target": "qonnx" to the recipe to export it as QONNX (--format qonnx alone does '
                         "not), or use int4/int8")


def _by_node(overrides: dict) -> dict:
    """Overrides by node name, sorted: one per node, so their order means nothing, and a recipe then
    writes the same JSON whether it was built in memory or read back from a project file (which sorts
    its keys); a replay's model metadata is the same bytes."""
    return dict(sorted(overrides.items()))


#: pydantic's error type of a strict field -> (what the value is not, what to write instead)
_JSON_TYPES = {"bool_type": ("a boolean", "true or false"), "int_type": ("an integer", "a whole number (e.g. 3)"),
               "float_type": ("a number", "a number (e.g. 0.5)")}


def _wrong_type(error: dict) -> str | None:
    """The message for a value of the wrong JSON type at a bool, int or float field (``"yes"`` for
    ``reduce_range`` was read as true): the value as written (up to 40 characters) and what to write;
    None for other errors. A NaN (which Python's and pydantic's JSON readers accept) is said not to be a number,
    whatever pydantic's bound said of it ("Input should be less than or equal to 1"; a check of ours says what
    range to use)."""
    if isinstance(error.get("input"), float) and math.isnan(error["input"]) and error["type"] != "value_error":
        return "NaN is not a number; write a number (e.g. 0.5)"
    if error["type"] not in _JSON_TYPES:
        return None
    kind, write = _JSON_TYPES[error["type"]]
    value = json.dumps(error["input"])
    long = {str: "string", list: "array", dict: "object"}.get(type(error["input"]), "value")
    value = value if len(value) <= 40 else f"a JSON {long}"
    quotes = ", without quotes" if isinstance(error["input"], str) else ""
    return f"{value} is not {kind}; write {write}{quotes}"


class Recipe(Record):
    """A complete quantization recipe; JSON round-trips exactly (``model_dump_json`` / ``from_json``).

    A plain record (:mod:`workbench.core.recipe.record`): building one from a built-in preset loads no
    pydantic, nor does reading a recipe file whose values pydantic keeps as given (:meth:`from_json`); any other
    file is validated by the pydantic model of the same name, which coerces its values or names the bad field.
    """

    preset: Annotated[str, Valid(_known_preset)] = "cpu-u8s8"
    rules: list[Rule] = Factory(list)
    overrides: Annotated[dict[str, NodeSettings], Valid(_by_node)] = Factory(dict)
    exclude: list[str] = Factory(list)
    op_types: list[str] | None = None
    #: 7-bit weights for the preset's 8-bit weight spec; None = decide from this CPU (see presets).
    #: :func:`workbench.core.api.make_recipe` fills it so a replay elsewhere gives the same model.
    reduce_range: bool | None = None
    #: Export format the recipe is for; "qonnx" allows the QONNX-only dtypes (int2..int7, bipolar).
    target: Literal["qdq", "qonnx"] = "qdq"
    #: SmoothQuant scale migration before calibration (static recipes); None = off.
    smoothquant: SmoothQuantSpec | None = None
    #: General bias correction after writing (Nagel et al. 2019, section 4.2): each Conv bias absorbs the
    #: mean output shift its weight rounding causes on the calibration data (static recipes).
    bias_correction: bool = False

    def _consistent(self) -> None:
        _qonnx_only_dtypes(self)

    def with_overrides(self, nodes, settings: NodeSettings) -> Recipe:
        """A copy whose override of each node in ``nodes`` is ``settings`` (replacing any earlier one)."""
        overrides = dict(self.overrides)
        for n in nodes:
            overrides[n] = settings
        return self.with_override_map(overrides)

    def with_override_map(self, overrides: dict[str, NodeSettings]) -> Recipe:
        """A copy whose overrides are ``overrides``, in node-name order as validation keeps them."""
        return self.model_copy(update={"overrides": _by_node(overrides)})

    def with_excluded(self, nodes) -> Recipe:
        """A copy with ``nodes`` kept in float (their overrides become ``exclude=True``)."""
        return self.with_overrides(nodes, NodeSettings(exclude=True))

    def without_excluded(self, nodes) -> Recipe:
        """A copy in which the overrides of ``nodes`` no longer exclude them (what :meth:`with_excluded` added,
        as the latency check adds its units kept float): an override that only excluded is dropped, another keeps
        its other settings with ``exclude`` unset. Nodes without an excluding override, ``exclude`` globs and
        rules are left as they are."""
        overrides = dict(self.overrides)
        for n in nodes:
            o = overrides.get(n)
            if o is None or not o.exclude:
                continue
            if o == NodeSettings(exclude=True):
                del overrides[n]
            else:
                overrides[n] = o.model_copy(update={"exclude": None})
        return self.with_override_map(overrides)

    @classmethod
    def from_json(cls, text: str, *, source: str = "recipe", unapplied: bool = False) -> Recipe:
        """Parse a recipe from JSON text. ``unapplied``: also refuse activation settings a static plan would not
        apply as written (per_block / MX activations left float, per_channel ones quantized per tensor), for a
        recipe file a user wrote (:func:`workbench.core.api.load_recipe`); a recipe the app built and sent as JSON
        keeps them, with the plan's warning.

        Raises
        ------
        RecipeError
            Naming ``source`` and the first invalid field; also for a rule or override whose fields do not fit
            together on the preset's spec (:func:`~workbench.core.recipe.conflicts.first_conflict`: naming the
            rule's index, matcher, role and field, and what to write).
        """
        if not text.strip():
            raise RecipeError(f"{source}: the recipe file is empty.",
                              hint='Write a recipe JSON object there, e.g. {"preset": "cpu-u8s8"} (see README, '
                                   "'Recipes').")
        try:  # values pydantic keeps as given build the records without it (Record.model_validate_json)
            recipe = cls.model_validate_json(text)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            from pydantic import ValidationError  # loaded already by the model that refused the text

            if not isinstance(exc, ValidationError):
                raise
            errors = exc.errors()
            first = errors[0]
            more = f" (and {count(len(errors) - 1, 'more problem')})" if len(errors) > 1 else ""
            if first["type"] == "json_invalid":
                raise RecipeError(f"{source}: not valid JSON: {first['msg'].removeprefix('Invalid JSON: ')}.",
                                  hint="Fix the JSON syntax there (a trailing comma, a missing quote or brace).") from None
            where = ".".join(str(p) for p in first["loc"])
            if first["type"] == "extra_forbidden" and first["loc"]:
                field = str(first["loc"][-1])
                if field in _FIELD_NAMES:  # a real field at another level: "did you mean" named the field itself
                    raise RecipeError(f"{source}: invalid recipe at {where}: {_misplaced(field, first['loc'])}{more}.",
                                      hint="Move it there (see README, 'Recipes').") from None
                guess = did_you_mean(field, _FIELD_NAMES)
                raise RecipeError(f"{source}: invalid recipe at {where}: unknown field {field!r}{guess}{more}.",
                                  hint="Fix the field name (see README, 'Recipes').") from None
            msg = _wrong_type(first) or first["msg"].removeprefix("Value error, ")
            at = f" at {where}" if where else ""  # a check across fields names its fields in msg
            raise RecipeError(f"{source}: invalid recipe{at}: {msg}{more}.",
                              hint="Fix that field (see README, 'Recipes').") from None
        recipe.check_fits(source=source, unapplied=unapplied)
        return recipe

    def check_fits(self, *, source: str = "recipe", unapplied: bool = False) -> None:
        """Refuse a rule or override whose fields do not fit together on the preset's spec
        (:func:`~workbench.core.recipe.conflicts.first_conflict`); ``unapplied`` as in :meth:`from_json`.

        Raises
        ------
        RecipeError
            ``"{source}: invalid recipe at {where}: {problem}."``, naming the rule's index, matcher, role and field,
            with what to write in the hint.
        """
        conflict = first_conflict(self, unapplied=unapplied)
        if conflict is not None:
            where, problem, fix = conflict
            raise RecipeError(f"{source}: invalid recipe at {where}: {problem}.",
                              hint=f"{fix[0].upper()}{fix[1:]} (see README, 'Recipes').")

    def to_json(self) -> str:
        return self.model_dump_json(indent=2, exclude_defaults=True)

    def preset_obj(self) -> Preset:
        return get_preset(self.preset)

    def quantized_op_types(self) -> tuple[str, ...]:
        return tuple(self.op_types) if self.op_types is not None else self.preset_obj().op_types


#: Every field name a recipe may hold, at any level (for "did you mean" on a typo).
_FIELD_NAMES = sorted({f for m in (Recipe, Rule, NodeSettings, PartialSpec, QuantSpec, SmoothQuantSpec)
                       for f in m.model_fields})

#: Each level of a recipe: (its model, where it is in words, an example of ``{field}`` written there).
_LEVELS = (
    (Recipe, "at the top level", '{{"{field}": ...}}'),
    (Rule, "in a rule", '{{"rules": [{{"op_type": "Conv", "{field}": ...}}]}}'),
    (NodeSettings, "in an override", '{{"overrides": {{"NODE": {{"{field}": ...}}}}}}'),
    (PartialSpec, "in a weight / activation / bias spec",
     '{{"rules": [{{"op_type": "Conv", "activation": {{"{field}": ...}}}}]}}'),
    (SmoothQuantSpec, "in smoothquant", '{{"smoothquant": {{"{field}": ...}}}}'),
)


def _level(loc: tuple) -> type | None:
    """The model that holds the field at pydantic location ``loc`` (None where it cannot be told)."""
    parent = tuple(loc[:-1])
    if not parent:
        return Recipe
    if parent[-1] in ROLES:
        return PartialSpec
    if len(parent) == 2 and parent[0] in ("rules", "overrides"):
        return Rule if parent[0] == "rules" else NodeSettings
    return SmoothQuantSpec if parent == ("smoothquant",) else None


def _example(example: str, field: str) -> str:
    """``example`` with ``field`` in it; a rule's own matcher (op_type, name) alone in its rule."""
    text = example.format(field=field)
    return text.replace(f'"op_type": "Conv", "{field}"', f'"{field}"') if field in ("op_type", "name") else text


def _misplaced(field: str, loc: tuple) -> str:
    """Says that ``field``, a recipe field at another level than ``loc``'s, is not one there and where it goes
    (``"activation"`` at the top level read "unknown field 'activation' (did you mean 'activation'?)")."""
    here = next((words for model, words, _ in _LEVELS if model is _level(loc)), "here")
    goes = [f"{words} ({_example(example, field)})" for model, words, example in _LEVELS
            if field in model.model_fields and model is not _level(loc)]
    return f"{field!r} is not a field {here}; it goes {' or '.join(goes)}"


class ResolvedNode(Record, extra="ignore"):
    """Effective config of one node plus where each role's value came from."""

    node: str
    op_type: str
    config: NodeConfig
    excluded: bool
    sources: dict[str, str]


def _apply(cfg: dict[str, QuantSpec | None], base: NodeConfig, settings: NodeSettings,
           label: str, sources: dict[str, str], node: str, check: bool = True) -> bool | None:
    """Apply one layer's ``settings`` to ``cfg`` (role -> spec); ``check`` False: as written, unchecked
    (:func:`resolve_node`)."""
    for role in ROLES:
        part: PartialSpec | None = getattr(settings, role)
        if part is None:
            continue
        if part.enabled is False:
            cfg[role] = None
            sources[role] = label
            continue
        current = cfg[role] or (getattr(base, role) if part.enabled else None)
        if current is None:
            continue
        if not check:
            cfg[role] = current.model_copy(update=spec_changes(part, current))
            sources[role] = label
            continue
        if part.observer is None and part.observer_args is not None:
            _inherited_reads(current.observer, part.observer_args, f"{label} (node {node}): {role}")
        try:
            cfg[role] = QuantSpec(**{**current.model_dump(), **spec_changes(part, current)})
        except ValueError as exc:  # pydantic's ValidationError; its "Value error, " prefix is not ours to show
            msg = exc.errors()[0]["msg"].removeprefix("Value error, ")
            # an override is one node's: named, as the app shows it for a selection of several
            where, what = (f"override of node {node}", "override") if label == "override" else (label, "rule")
            raise RecipeError(f"{where}: invalid {role} settings: {msg}.",
                              hint=f"Change the {what} so the spec is consistent.") from None
        sources[role] = label
    return settings.exclude


def _inherited_reads(observer: str, args: dict[str, float], where: str) -> None:
    """``observer_args`` set without an observer go to the ``observer`` the role has at that point (the
    preset's or an earlier rule's): RecipeError at ``where`` when it does not read them all (a ``bins``
    on the presets' minmax was accepted and ignored)."""
    try:
        checks.inherited_observer_reads(observer, args)
    except ValueError as exc:
        raise RecipeError(f"{where}.observer_args {exc}.", hint='observer_args without "observer" go to the '
                          "observer the node has from its preset or an earlier rule (see README, 'Recipes').") from None


def resolve_node(recipe: Recipe, node_name: str, op_type: str, memo: dict | None = None, *,
                 check: bool = True) -> ResolvedNode:
    """Resolve the effective :class:`NodeConfig` of one node.

    Precedence, lowest first: preset < op-type rules < name-glob rules < exact-name override;
    within a level, later rules win. A node whose op type the recipe does not quantize resolves to
    an all-None config unless a rule or override enables a role explicitly.

    ``memo``: a dict the caller keeps for calls on this same, unchanged ``recipe`` (a plan resolves every
    node, some several times): nodes of one op type that the same rules and override objects match share
    one config, built once (the same values; nudenet_320n's plan resolves 308 nodes into 20 configs).

    ``check`` False: a layer whose settings do not fit together (reduce_range on int16, ...) is applied as
    written, unvalidated, and nothing is raised: what the node's settings ask for, for the app to show beside the
    error of the checked resolve, so they can be fixed where they show (the plan refuses them). Not memoized.

    Raises
    ------
    RecipeError
        A rule or override gives a spec that is not consistent, or sets ``observer_args`` without
        ``observer`` that the observer it inherits does not read (naming it, the node, role and keys).
        (An ``observer`` set without ``observer_args`` keeps the inherited args it reads and drops the rest.)
    """
    ordered = [r for r in recipe.rules if r.op_type] + [r for r in recipe.rules if r.name]
    layers: list[tuple[str, NodeSettings]] = [(r.label, r) for r in ordered if r.matches(node_name, op_type)]
    if node_name in recipe.overrides:
        layers.append(("override", recipe.overrides[node_name]))
    key = (op_type, tuple((label, id(settings)) for label, settings in layers))
    built = memo.get(key) if memo is not None and check else None
    if built is None:
        built = _layered(recipe, op_type, layers, node_name, check)
        if memo is not None and check:  # the layers are the recipe's objects, alive while it is: their ids stay theirs
            memo[key] = built
    config, layered_sources, excluded = built
    sources = dict(layered_sources)
    for pattern in recipe.exclude:
        if fnmatch.fnmatchcase(node_name, pattern):
            excluded = True
            sources["exclude"] = f"exclude {pattern}"
    return ResolvedNode.model_construct(node=node_name, op_type=op_type, config=config, excluded=excluded,
                                        sources=sources)


def _layered(recipe: Recipe, op_type: str, layers: list[tuple[str, NodeSettings]],
             node_name: str, check: bool = True) -> tuple[NodeConfig, dict[str, str], bool]:
    """``(config, sources, excluded)`` of a node of ``op_type`` matched by ``layers`` (``(label, settings)``,
    lowest precedence first), before the recipe's ``exclude`` globs (:func:`resolve_node`; ``node_name``
    names the node in its errors; ``check`` as there)."""
    preset = recipe.preset_obj()
    quantized = op_type in recipe.quantized_op_types()
    base = preset.config
    if recipe.reduce_range is not None and base.weight is not None and base.weight.qtype.bits == 8 \
            and not base.weight.qtype.is_float and base.activation is not None \
            and base.activation.qtype.bits == 8 and not base.activation.qtype.is_float:
        base = base.model_copy(update={"weight": base.weight.model_copy(
            update={"reduce_range": recipe.reduce_range})})
    cfg: dict[str, QuantSpec | None] = {r: (getattr(base, r) if quantized else None) for r in ROLES}
    sources = {r: ("preset " + preset.name if quantized else "not quantized") for r in ROLES}
    excluded = False
    for label, settings in layers:
        ex = _apply(cfg, base, settings, label, sources, node_name, check)
        if ex is not None:
            excluded = ex
            sources["exclude"] = label
    # built unvalidated: every value is already checked (the preset's specs, a QuantSpec _apply validated, None,
    # plain str / bool); validating them again was 40 % of this function (minilm_l6_v2: 7.4 of 18.5 ms per plan)
    return NodeConfig.model_construct(**cfg), sources, excluded


def check_overrides(recipe: Recipe, op_types: dict[str, str]) -> None:
    """Resolve the node of each of ``recipe``'s overrides that ``op_types`` (node name -> op type) holds, as
    the plan does; overrides of other names are left to the plan (which warns about them).

    Raises
    ------
    RecipeError
        As :func:`resolve_node`: an override whose settings the plan would refuse (``observer_args`` its
        inherited observer does not read, an inconsistent spec), before anything is calibrated.
    """
    for name in recipe.overrides:
        if name in op_types:
            resolve_node(recipe, name, op_types[name])
