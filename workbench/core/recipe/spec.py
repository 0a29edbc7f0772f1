"""Quantization settings per tensor role: :class:`QuantSpec` (dtype, symmetric, granularity, observer, ...),
the per-node :class:`NodeConfig`, partial settings for rules and overrides, and :class:`Preset`.

Plain records (:mod:`workbench.core.recipe.record`): values of the exact field types that pass the
checks of :mod:`workbench.core.recipe.checks` build a record without pydantic; anything else goes
through the pydantic model of the same name (:mod:`workbench.core.recipe.spec_models`), which
coerces it or raises ``pydantic.ValidationError`` naming the field."""

from __future__ import annotations

import fnmatch
from typing import Any

from workbench.core.formats.qtypes import get_qtype
from workbench.core.recipe import checks, spec_models
from workbench.core.recipe.checks import (  # noqa: F401  (the recipe's names, re-exported)
    AVERAGING_RANGE,
    BINS_RANGE,
    DEFAULT_BINS,
    DEFAULT_PERCENTILE,
    OBSERVER_ARGS,
    OBSERVER_READS,
    OBSERVERS,
    PERCENTILE_RANGE,
    ROLES,
    Granularity,
    PlanMode,
)
from workbench.core.recipe.record import Factory, Record, of, optional, tuple_of

Mode = PlanMode


def _args_ok(v: Any) -> bool:
    """``observer_args`` pydantic keeps as given: float values (an int would become a float) of known keys, in range."""
    return type(v) is dict and all(k in checks.ARG_CHECKS and type(x) is float for k, x in v.items()) \
        and _passes(checks.observer_args_in_range, v)


def _passes(check, *args: Any) -> bool:
    try:
        check(*args)
    except (ValueError, TypeError):
        return False
    return True


def _sort_args(record: Record) -> None:
    """``observer_args`` keys in alphabetical order, as pydantic's ObserverArgs (a TypedDict) keeps them."""
    if record.observer_args:
        record.__dict__["observer_args"] = dict(sorted(record.observer_args.items()))


_STR, _BOOL, _INT = of(str), of(bool), of(int)


class _SpecModel(Record):
    @classmethod
    def _pydantic_model(cls) -> Any:
        return spec_models.models()[cls.__name__]


class QuantSpec(_SpecModel, frozen=True):
    """How one tensor role (weight, activation or bias) of a node is quantized.

    ``axis`` None means the op's natural channel axis (Conv weight: 0 = output channels; MatMul
    weight: the last axis; Gemm B: the output axis given ``transB``). ``observer_args`` are passed
    to the observer (e.g. ``{"percentile": 99.999}``, ``{"bins": 2048}``); an unknown key or a value outside
    the range the observer takes raises pydantic's ``ValidationError`` at that key.
    Bias specs use dtype ``int32`` with scale ``input_scale * weight_scale`` (derived, not observed).
    """

    FIELDS = {"dtype": _STR, "symmetric": _BOOL, "granularity": of(Granularity), "axis": optional(_INT),
              "block_size": optional(_INT), "observer": _STR, "observer_args": _args_ok, "reduce_range": _BOOL,
              "power_of_two": _BOOL}
    ENUMS = {"granularity": Granularity}
    dtype: str = "int8"
    symmetric: bool = True
    granularity: Granularity = Granularity.per_tensor
    axis: int | None = None
    block_size: int | None = None
    observer: str = "minmax"
    observer_args: dict[str, float] = Factory(dict)
    reduce_range: bool = False
    power_of_two: bool = False

    def _check(self) -> bool:
        _sort_args(self)
        return _passes(checks.dtype_known, self.dtype) and _passes(checks.observer_known, self.observer) \
            and _passes(checks.spec_consistent, self.dtype, self.granularity, self.block_size, self.reduce_range)

    @property
    def qtype(self):
        return get_qtype(self.dtype)


BIAS_INT32 = QuantSpec(dtype="int32", symmetric=True)


class NodeConfig(_SpecModel, frozen=True):
    """Resolved quantization of one node: a spec per role; None keeps that role in float."""

    FIELDS = {"weight": optional(of(QuantSpec)), "activation": optional(of(QuantSpec)), "bias": optional(of(QuantSpec))}
    weight: QuantSpec | None = None
    activation: QuantSpec | None = None
    bias: QuantSpec | None = None


class PartialSpec(_SpecModel):
    """Fields to change in one role's spec; unset fields keep their inherited value.

    ``enabled=False`` turns the role off (keeps it in float); ``enabled=True`` turns it on starting
    from the preset's spec for that role. ``observer_args`` set together with ``observer`` must be keys
    that observer reads (:data:`OBSERVER_READS`; else pydantic's ``ValidationError`` at ``observer_args``);
    set alone, they go to the inherited observer.
    """

    FIELDS = {"enabled": optional(_BOOL), "dtype": optional(_STR), "symmetric": optional(_BOOL),
              "granularity": optional(of(Granularity)), "axis": optional(_INT), "block_size": optional(_INT),
              "observer": optional(_STR), "observer_args": optional(_args_ok), "reduce_range": optional(_BOOL),
              "power_of_two": optional(_BOOL)}
    ENUMS = {"granularity": Granularity}
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

    def _check(self) -> bool:
        _sort_args(self)
        return (self.dtype is None or _passes(checks.dtype_known, self.dtype)) \
            and (self.observer is None or _passes(checks.observer_known, self.observer)) \
            and (self.observer is None or self.observer_args is None
                 or _passes(checks.observer_reads, self.observer, self.observer_args))

    def changes(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump(exclude_unset=True).items() if k != "enabled"}


class NodeSettings(_SpecModel):
    """Partial settings for the nodes a rule or override matches."""

    FIELDS = {"weight": optional(of(PartialSpec)), "activation": optional(of(PartialSpec)),
              "bias": optional(of(PartialSpec)), "exclude": optional(_BOOL)}
    weight: PartialSpec | None = None
    activation: PartialSpec | None = None
    bias: PartialSpec | None = None
    exclude: bool | None = None


class Rule(NodeSettings):
    """Settings applied to every node of an op type (``op_type``) or whose name matches ``name`` (a glob)."""

    FIELDS = {**NodeSettings.FIELDS, "op_type": optional(_STR), "name": optional(_STR)}
    op_type: str | None = None
    name: str | None = None

    def _check(self) -> bool:
        return (self.op_type is None) != (self.name is None)

    def matches(self, node_name: str, op_type: str) -> bool:
        if self.op_type is not None:
            return self.op_type == op_type
        return fnmatch.fnmatchcase(node_name, self.name or "")

    @property
    def label(self) -> str:
        return f"rule op_type={self.op_type}" if self.op_type else f"rule name={self.name}"


class SmoothQuantSpec(_SpecModel, frozen=True):
    """Opt-in SmoothQuant scale migration applied before calibration (:mod:`workbench.core.transforms.smoothquant`).

    ``alpha`` (0..1): share of each input channel's range moved into the weights (Xiao et al. 2023);
    ``op_types``: layers to smooth (Conv, MatMul); ``exclude``: node names left as they are.
    """

    FIELDS = {"alpha": lambda v: type(v) is float and 0.0 <= v <= 1.0, "op_types": tuple_of(_STR),
              "exclude": tuple_of(_STR)}
    alpha: float = 0.5
    op_types: tuple[str, ...] = ("Conv", "MatMul")
    exclude: tuple[str, ...] = ()


class Preset(_SpecModel, frozen=True):
    """A named starting point: default config, the op types it quantizes, and the mode."""

    FIELDS = {"name": _STR, "description": _STR, "mode": of(PlanMode), "config": of(NodeConfig),
              "op_types": tuple_of(_STR), "min_opset": _INT}
    ENUMS = {"mode": PlanMode}
    name: str
    description: str
    mode: PlanMode = PlanMode.STATIC
    config: NodeConfig
    op_types: tuple[str, ...]
    min_opset: int = 13

