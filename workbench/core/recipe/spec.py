"""Quantization settings per tensor role: :class:`QuantSpec` (dtype, symmetric, granularity, observer, ...),
the per-node :class:`NodeConfig`, partial settings for rules and overrides, and :class:`Preset`.

Plain records (:mod:`workbench.core.recipe.record`): each class's annotations are the one definition of
its fields (type, default, and the checks of :mod:`workbench.core.recipe.checks` as ``Valid``
metadata). Values of the exact field types that pass those checks build a record without pydantic;
anything else goes through the pydantic model generated from the same annotations
(:mod:`workbench.core.recipe.models`), which coerces it or raises ``pydantic.ValidationError`` naming
the field."""

from __future__ import annotations

import fnmatch
import functools
from typing import Annotated, Any

from workbench.core.formats.qtypes import get_qtype
from workbench.core.recipe import checks
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
from workbench.core.recipe.fields import Check, Valid, between
from workbench.core.recipe.record import Factory, Record

Mode = PlanMode


def _args_ok(v: Any) -> bool:
    """``observer_args`` pydantic keeps as given: float values (an int would become a float) of known keys, in range."""
    if not (type(v) is dict and all(k in checks.ARG_CHECKS and type(x) is float for k, x in v.items())):
        return False
    try:
        checks.observer_args_in_range(v)
    except ValueError:
        return False
    return True


@functools.cache
def _observer_args_model(_: Any) -> Any:
    """``observer_args`` in the pydantic models: a TypedDict whose known keys are range-checked one by one
    (an error names the key; a string such as ``"512"`` is refused, a JSON integer passes); unknown keys
    pass it and are refused by :func:`_args_known`."""
    from pydantic import AfterValidator, ConfigDict, Strict
    from typing_extensions import TypedDict

    keys = {k: Annotated[float, Strict(), AfterValidator(check)] for k, check in checks.ARG_CHECKS.items()}
    args = TypedDict("ObserverArgs", keys, total=False)  # type: ignore[operator]
    args.__pydantic_config__ = ConfigDict(extra="allow")
    return args


def _args_known(v: dict[str, float]) -> dict[str, float]:
    """Known keys only (:func:`checks.observer_args_known`), in alphabetical order (as ObserverArgs keeps them)."""
    return dict(sorted(checks.observer_args_known(v).items()))


def _args_read(v: dict[str, float], earlier: dict[str, Any]) -> dict[str, float]:
    """Set together with ``observer``, the args must be keys it reads (set alone, they go to the inherited one)."""
    observer = earlier.get("observer")
    return v if observer is None else checks.observer_reads(observer, v)


#: the field types the records share (``Valid``: checked by the record and its pydantic model alike)
Dtype = Annotated[str, Valid(checks.dtype_known)]
ObserverName = Annotated[str, Valid(checks.observer_known)]
ObserverArgs = Annotated[dict[str, float], Check(_args_ok, _observer_args_model), Valid(_args_known)]


class QuantSpec(Record, frozen=True):
    """How one tensor role (weight, activation or bias) of a node is quantized.

    ``axis`` None means the op's natural channel axis (Conv weight: 0 = output channels; MatMul
    weight: the last axis; Gemm B: the output axis given ``transB``). ``observer_args`` are passed
    to the observer (e.g. ``{"percentile": 99.999}``, ``{"bins": 2048}``); an unknown key or a value outside
    the range the observer takes raises pydantic's ``ValidationError`` at that key.
    Bias specs use dtype ``int32`` with scale ``input_scale * weight_scale`` (derived, not observed).
    """

    dtype: Dtype = "int8"
    symmetric: bool = True
    granularity: Granularity = Granularity.per_tensor
    axis: int | None = None
    block_size: int | None = None
    observer: ObserverName = "minmax"
    observer_args: ObserverArgs = Factory(dict)
    reduce_range: bool = False
    power_of_two: bool = False

    def _consistent(self) -> None:
        checks.spec_consistent(self.dtype, self.granularity, self.block_size, self.reduce_range)

    @property
    def qtype(self):
        return get_qtype(self.dtype)


BIAS_INT32 = QuantSpec(dtype="int32", symmetric=True)


class NodeConfig(Record, frozen=True):
    """Resolved quantization of one node: a spec per role; None keeps that role in float."""

    weight: QuantSpec | None = None
    activation: QuantSpec | None = None
    bias: QuantSpec | None = None


class PartialSpec(Record):
    """Fields to change in one role's spec; unset fields keep their inherited value.

    ``enabled=False`` turns the role off (keeps it in float); ``enabled=True`` turns it on starting
    from the preset's spec for that role. ``observer_args`` set together with ``observer`` must be keys
    that observer reads (:data:`OBSERVER_READS`; else pydantic's ``ValidationError`` at ``observer_args``);
    set alone, they go to the inherited observer, which must read them too (``resolve_node`` raises
    RecipeError otherwise).
    """

    enabled: bool | None = None
    #: checked here too: a rule whose glob matches no node is never merged into a QuantSpec
    dtype: Dtype | None = None
    symmetric: bool | None = None
    granularity: Granularity | None = None
    axis: int | None = None
    block_size: int | None = None
    observer: ObserverName | None = None
    observer_args: Annotated[ObserverArgs, Valid(_args_read, earlier=True)] | None = None
    reduce_range: bool | None = None
    power_of_two: bool | None = None

    def changes(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump(exclude_unset=True).items() if k != "enabled"}


class NodeSettings(Record):
    """Partial settings for the nodes a rule or override matches."""

    weight: PartialSpec | None = None
    activation: PartialSpec | None = None
    bias: PartialSpec | None = None
    exclude: bool | None = None


class Rule(NodeSettings):
    """Settings applied to every node of an op type (``op_type``) or whose name matches ``name`` (a glob)."""

    op_type: str | None = None
    name: str | None = None

    def _consistent(self) -> None:
        if (self.op_type is None) == (self.name is None):
            raise ValueError("a rule matches either op_type or name (a glob), exactly one of them")

    def matches(self, node_name: str, op_type: str) -> bool:
        if self.op_type is not None:
            return self.op_type == op_type
        return fnmatch.fnmatchcase(node_name, self.name or "")

    @property
    def label(self) -> str:
        return f"rule op_type={self.op_type}" if self.op_type else f"rule name={self.name}"


class SmoothQuantSpec(Record, frozen=True):
    """Opt-in SmoothQuant scale migration applied before calibration (:mod:`workbench.core.transforms.smoothquant`).

    ``alpha`` (0..1): share of each input channel's range moved into the weights (Xiao et al. 2023);
    ``op_types``: layers to smooth (Conv, MatMul); ``exclude``: node names left as they are.
    """

    alpha: Annotated[float, between(0.0, 1.0)] = 0.5
    op_types: tuple[str, ...] = ("Conv", "MatMul")
    exclude: tuple[str, ...] = ()


class Preset(Record, frozen=True, extra="ignore"):
    """A named starting point: default config, the op types it quantizes, and the mode."""

    name: str
    description: str
    mode: PlanMode = PlanMode.STATIC
    config: NodeConfig
    op_types: tuple[str, ...]
    min_opset: int = 13

