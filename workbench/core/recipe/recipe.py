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
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from workbench.core.errors import RecipeError
from workbench.core.formats.qtypes import MX_DTYPES, QONNX_DTYPES, RECIPE_DTYPES, get_qtype

OBSERVERS = ("minmax", "percentile", "entropy", "mse")
ROLES = ("weight", "activation", "bias")


class Granularity(StrEnum):
    per_tensor = "per_tensor"
    per_channel = "per_channel"
    per_block = "per_block"


class QuantSpec(BaseModel):
    """How one tensor role (weight, activation or bias) of a node is quantized.

    ``axis`` None means the op's natural channel axis (Conv weight: 0 = output channels; MatMul
    weight: the last axis; Gemm B: the output axis given ``transB``). ``observer_args`` are passed
    to the observer (e.g. ``{"percentile": 99.999}``, ``{"bins": 2048}``).
    Bias specs use dtype ``int32`` with scale ``input_scale * weight_scale`` (derived, not observed).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    dtype: str = "int8"
    symmetric: bool = True
    granularity: Granularity = Granularity.per_tensor
    axis: int | None = None
    block_size: int | None = None
    observer: str = "minmax"
    observer_args: dict[str, float] = Field(default_factory=dict)
    reduce_range: bool = False
    power_of_two: bool = False

    @field_validator("dtype")
    @classmethod
    def _dtype_known(cls, v: str) -> str:
        if v not in RECIPE_DTYPES and v not in QONNX_DTYPES and v != "int32":
            raise ValueError(f"unknown dtype {v!r}; use one of {', '.join(RECIPE_DTYPES)} "
                             f"(QONNX target also: {', '.join(QONNX_DTYPES)})")
        return v

    @field_validator("observer")
    @classmethod
    def _observer_known(cls, v: str) -> str:
        if v not in OBSERVERS:
            raise ValueError(f"unknown observer {v!r}; use one of {', '.join(OBSERVERS)}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> QuantSpec:
        if self.granularity == Granularity.per_block:
            if not self.block_size or self.block_size < 1:
                raise ValueError("per_block needs a positive block_size (e.g. 32)")
        elif self.block_size is not None:
            raise ValueError("block_size is only valid with granularity per_block")
        if self.dtype in MX_DTYPES and self.granularity != Granularity.per_block:
            raise ValueError(f"{self.dtype} is an MX block format: use granularity per_block, block_size 32")
        if self.reduce_range and get_qtype(self.dtype).bits != 8:
            raise ValueError(f"reduce_range applies to 8-bit dtypes only, not {self.dtype}")
        return self

    @property
    def qtype(self):
        return get_qtype(self.dtype)


BIAS_INT32 = QuantSpec(dtype="int32", symmetric=True)


class NodeConfig(BaseModel):
    """Resolved quantization of one node: a spec per role; None keeps that role in float."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weight: QuantSpec | None = None
    activation: QuantSpec | None = None
    bias: QuantSpec | None = None


class PartialSpec(BaseModel):
    """Fields to change in one role's spec; unset fields keep their inherited value.

    ``enabled=False`` turns the role off (keeps it in float); ``enabled=True`` turns it on starting
    from the preset's spec for that role.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool | None = None
    dtype: str | None = None
    symmetric: bool | None = None
    granularity: Granularity | None = None
    axis: int | None = None
    block_size: int | None = None
    observer: str | None = None
    observer_args: dict[str, float] | None = None
    reduce_range: bool | None = None
    power_of_two: bool | None = None

    @field_validator("dtype")
    @classmethod
    def _dtype_known(cls, v: str | None) -> str | None:
        # checked here too: a rule whose glob matches no node is never merged into a QuantSpec
        return v if v is None else QuantSpec._dtype_known(v)

    @field_validator("observer")
    @classmethod
    def _observer_known(cls, v: str | None) -> str | None:
        return v if v is None else QuantSpec._observer_known(v)

    def changes(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump(exclude_unset=True).items() if k != "enabled"}


class NodeSettings(BaseModel):
    """Partial settings for the nodes a rule or override matches."""

    model_config = ConfigDict(extra="forbid")

    weight: PartialSpec | None = None
    activation: PartialSpec | None = None
    bias: PartialSpec | None = None
    exclude: bool | None = None


class Rule(NodeSettings):
    """Settings applied to every node of an op type (``op_type``) or whose name matches ``name`` (a glob)."""

    op_type: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _one_key(self) -> Rule:
        if (self.op_type is None) == (self.name is None):
            raise ValueError("a rule matches either op_type or name (a glob), exactly one of them")
        return self

    def matches(self, node_name: str, op_type: str) -> bool:
        if self.op_type is not None:
            return self.op_type == op_type
        return fnmatch.fnmatchcase(node_name, self.name or "")

    @property
    def label(self) -> str:
        return f"rule op_type={self.op_type}" if self.op_type else f"rule name={self.name}"


Mode = Literal["static", "dynamic", "weight_only"]


class SmoothQuantSpec(BaseModel):
    """Opt-in SmoothQuant scale migration applied before calibration (:mod:`workbench.core.transforms.smoothquant`).

    ``alpha`` (0..1): share of each input channel's range moved into the weights (Xiao et al. 2023);
    ``op_types``: layers to smooth (Conv, MatMul); ``exclude``: node names left as they are.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: float = Field(0.5, ge=0.0, le=1.0)
    op_types: tuple[str, ...] = ("Conv", "MatMul")
    exclude: tuple[str, ...] = ()


class Preset(BaseModel):
    """A named starting point: default config, the op types it quantizes, and the mode."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    mode: Mode = "static"
    config: NodeConfig
    op_types: tuple[str, ...]
    min_opset: int = 13


class Recipe(BaseModel):
    """A complete quantization recipe; JSON round-trips exactly (``model_dump_json`` / ``from_json``)."""

    model_config = ConfigDict(extra="forbid")

    preset: str = "cpu-u8s8"
    rules: list[Rule] = Field(default_factory=list)
    overrides: dict[str, NodeSettings] = Field(default_factory=dict)
    exclude: list[str] = Field(default_factory=list)
    op_types: list[str] | None = None
    #: 7-bit weights for the preset's 8-bit weight spec; None = decide from this CPU (see presets).
    #: :func:`workbench.core.api.make_recipe` fills it so a replay elsewhere gives the same model.
    reduce_range: bool | None = None
    #: Export format the recipe is for; "qonnx" allows the QONNX-only dtypes (int2..int7, bipolar).
    target: Literal["qdq", "qonnx"] = "qdq"
    #: SmoothQuant scale migration before calibration (static recipes); None = off.
    smoothquant: SmoothQuantSpec | None = None

    @model_validator(mode="after")
    def _qonnx_only_dtypes(self) -> Recipe:
        if self.target == "qonnx":
            return self
        parts = [s for r in [*self.rules, *self.overrides.values()] for s in (r.weight, r.activation, r.bias)]
        bad = sorted({p.dtype for p in parts if p is not None and p.dtype in QONNX_DTYPES})
        if bad:
            raise ValueError(f"dtype {', '.join(bad)} exists only in QONNX: set target to 'qonnx' "
                             "(--format qonnx) or use int4/int8")
        return self

    def with_overrides(self, nodes, settings: NodeSettings) -> Recipe:
        """A copy whose override of each node in ``nodes`` is ``settings`` (replacing any earlier one)."""
        overrides = dict(self.overrides)
        for n in nodes:
            overrides[n] = settings
        return self.model_copy(update={"overrides": overrides})

    def with_excluded(self, nodes) -> Recipe:
        """A copy with ``nodes`` kept in float (their overrides become ``exclude=True``)."""
        return self.with_overrides(nodes, NodeSettings(exclude=True))

    @classmethod
    def from_json(cls, text: str, *, source: str = "recipe") -> Recipe:
        """Parse a recipe from JSON text.

        Raises
        ------
        RecipeError
            Naming ``source`` and the first invalid field.
        """
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise RecipeError(f"{source}: invalid recipe at {where or 'top level'}: {first['msg']}.",
                              hint="Fix that field (see README, 'Recipes').") from None

    def to_json(self) -> str:
        return self.model_dump_json(indent=2, exclude_defaults=True)

    def preset_obj(self) -> Preset:
        from workbench.core.recipe.presets import get_preset

        return get_preset(self.preset)

    def quantized_op_types(self) -> tuple[str, ...]:
        return tuple(self.op_types) if self.op_types is not None else self.preset_obj().op_types


class ResolvedNode(BaseModel):
    """Effective config of one node plus where each role's value came from."""

    node: str
    op_type: str
    config: NodeConfig
    excluded: bool
    sources: dict[str, str]


def _apply(cfg: dict[str, QuantSpec | None], base: NodeConfig, settings: NodeSettings,
           label: str, sources: dict[str, str]) -> bool | None:
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
        try:
            cfg[role] = QuantSpec(**{**current.model_dump(), **part.changes()})
        except ValidationError as exc:
            raise RecipeError(f"{label}: invalid {role} settings: {exc.errors()[0]['msg']}.",
                              hint="Change the rule so the spec is consistent.") from None
        sources[role] = label
    return settings.exclude


def resolve_node(recipe: Recipe, node_name: str, op_type: str) -> ResolvedNode:
    """Resolve the effective :class:`NodeConfig` of one node.

    Precedence, lowest first: preset < op-type rules < name-glob rules < exact-name override;
    within a level, later rules win. A node whose op type the recipe does not quantize resolves to
    an all-None config unless a rule or override enables a role explicitly.
    """
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
    ordered = [r for r in recipe.rules if r.op_type] + [r for r in recipe.rules if r.name]
    layers: list[tuple[str, NodeSettings]] = [(r.label, r) for r in ordered if r.matches(node_name, op_type)]
    if node_name in recipe.overrides:
        layers.append(("override", recipe.overrides[node_name]))
    for label, settings in layers:
        ex = _apply(cfg, base, settings, label, sources)
        if ex is not None:
            excluded = ex
            sources["exclude"] = label
    for pattern in recipe.exclude:
        if fnmatch.fnmatchcase(node_name, pattern):
            excluded = True
            sources["exclude"] = f"exclude {pattern}"
    return ResolvedNode(node=node_name, op_type=op_type, config=NodeConfig(**cfg),
                        excluded=excluded, sources=sources)
