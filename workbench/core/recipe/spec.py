"""Quantization settings per tensor role: :class:`QuantSpec` (dtype, symmetric, granularity, observer, ...),
the per-node :class:`NodeConfig`, partial settings for rules and overrides, and :class:`Preset`."""

from __future__ import annotations

import fnmatch
import math
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from typing_extensions import TypedDict

from workbench.core.formats.qtypes import MX_DTYPES, QONNX_DTYPES, RECIPE_DTYPES, get_qtype

OBSERVERS = ("minmax", "percentile", "entropy", "mse")


ROLES = ("weight", "activation", "bias")
#: the ``observer_args`` keys the observers read (histogram observers: bins; percentile: percentile;
#: minmax: averaging_constant for a moving average)
OBSERVER_ARGS = ("bins", "percentile", "averaging_constant")
#: the ``observer_args`` keys each observer reads (workbench.core.calibration.observers: minmax.py,
#: histogram.py for entropy / mse, percentile.py)
OBSERVER_READS: dict[str, tuple[str, ...]] = {"minmax": ("averaging_constant",), "percentile": ("bins", "percentile"),
                                              "entropy": ("bins",), "mse": ("bins",)}
#: the values each observer argument takes, as the observers of workbench.core.calibration.observers
#: accept them: bins (percentile / entropy / mse histograms) a whole number in [16, 2**20], percentile in
#: (50, 100], averaging_constant (minmax's moving average m <- m + c * (batch_m - m)) in (0, 1]
#: (the one place these limits are written: the histogram / percentile observers check them too)
BINS_RANGE = (16, 1 << 20)
PERCENTILE_RANGE = (50.0, 100.0)
AVERAGING_RANGE = (0.0, 1.0)
#: the values the observers use when ``observer_args`` does not set them
DEFAULT_BINS = 2048
DEFAULT_PERCENTILE = 99.999


def _out_of_range(value: float, takes: str) -> ValueError:
    return ValueError(f"{value:g} is out of range: use {takes}")


def _check_bins(v: float) -> float:
    lo, hi = BINS_RANGE
    if not (math.isfinite(v) and v == int(v) and lo <= v <= hi):
        raise _out_of_range(v, f"a whole number of histogram bins from {lo} to {hi} (default {DEFAULT_BINS})")
    return v


def _check_percentile(v: float) -> float:
    lo, hi = PERCENTILE_RANGE
    if not lo < v <= hi:  # NaN fails too
        raise _out_of_range(v, f"a percentile above {lo:g} and at most {hi:g} (default {DEFAULT_PERCENTILE:g})")
    return v


def _check_averaging(v: float) -> float:
    lo, hi = AVERAGING_RANGE
    if not lo < v <= hi:
        raise _out_of_range(v, f"a moving-average weight above {lo:g} and at most {hi:g} (0.01 is usual)")
    return v


def _observer_reads(observer: str, args: dict[str, float]) -> dict[str, float]:
    """``args`` when ``observer`` reads every key of it; else ValueError naming the keys it ignores and
    those it reads (:data:`OBSERVER_READS`)."""
    reads = OBSERVER_READS.get(observer, ())
    ignored = [k for k in args if k not in reads]
    if ignored:
        raise ValueError(f"{', '.join(map(repr, ignored))} {'is' if len(ignored) == 1 else 'are'} not read by the "
                         f"{observer} observer, which reads only {' and '.join(reads)}: remove "
                         f"{'it' if len(ignored) == 1 else 'them'} or choose an observer that reads "
                         f"{'it' if len(ignored) == 1 else 'them'}")
    return args


class ObserverArgs(TypedDict, total=False):
    """``observer_args`` of a spec: a plain dict whose known keys are checked where the recipe is read, so
    an error names the key (``rules.0.activation.observer_args.percentile``) instead of a tensor during
    calibration. Keys in alphabetical order: a recipe dumps them so, as a project file (sorted keys) does.
    Unknown keys pass here and are refused by the spec's own validator (naming the keys it knows)."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    averaging_constant: Annotated[float, AfterValidator(_check_averaging)]
    bins: Annotated[float, AfterValidator(_check_bins)]
    percentile: Annotated[float, AfterValidator(_check_percentile)]


class Granularity(StrEnum):
    per_tensor = "per_tensor"
    per_channel = "per_channel"
    per_block = "per_block"


class QuantSpec(BaseModel):
    """How one tensor role (weight, activation or bias) of a node is quantized.

    ``axis`` None means the op's natural channel axis (Conv weight: 0 = output channels; MatMul
    weight: the last axis; Gemm B: the output axis given ``transB``). ``observer_args`` are passed
    to the observer (e.g. ``{"percentile": 99.999}``, ``{"bins": 2048}``); an unknown key or a value outside
    the range the observer takes (:class:`ObserverArgs`) raises pydantic's ``ValidationError`` at that key.
    Bias specs use dtype ``int32`` with scale ``input_scale * weight_scale`` (derived, not observed).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    dtype: str = "int8"
    symmetric: bool = True
    granularity: Granularity = Granularity.per_tensor
    axis: int | None = None
    block_size: int | None = None
    observer: str = "minmax"
    observer_args: ObserverArgs = Field(default_factory=dict)
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

    @field_validator("observer_args")
    @classmethod
    def _observer_args_known(cls, v: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(v) - set(OBSERVER_ARGS))
        if unknown:
            raise ValueError(f"unknown observer_args {', '.join(map(repr, unknown))}; use {', '.join(OBSERVER_ARGS)}")
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
    from the preset's spec for that role. ``observer_args`` set together with ``observer`` must be keys
    that observer reads (:data:`OBSERVER_READS`; else pydantic's ``ValidationError`` at ``observer_args``);
    set alone, they go to the inherited observer.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool | None = None
    dtype: str | None = None
    symmetric: bool | None = None
    granularity: Granularity | None = None
    axis: int | None = None
    block_size: int | None = None
    observer: str | None = None
    observer_args: ObserverArgs | None = None
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

    @field_validator("observer_args")
    @classmethod
    def _observer_args_known(cls, v: dict[str, float] | None, info: ValidationInfo) -> dict[str, float] | None:
        if v is None:
            return v
        QuantSpec._observer_args_known(v)
        observer = info.data.get("observer")  # validated before observer_args (field order)
        return v if observer is None else _observer_reads(observer, v)

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


class PlanMode(StrEnum):
    """How a recipe quantizes: calibrated static QDQ, dynamic (activations at run time), weight-only."""

    STATIC = "static"
    DYNAMIC = "dynamic"
    WEIGHT_ONLY = "weight_only"


Mode = PlanMode


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
    mode: PlanMode = PlanMode.STATIC
    config: NodeConfig
    op_types: tuple[str, ...]
    min_opset: int = 13


