"""The pydantic models that validate recipe settings from outside (recipe files, project files, values
that are not already of the exact field type): one model per record of
:mod:`workbench.core.recipe.spec`, with the same name, fields, defaults and checks
(:mod:`workbench.core.recipe.checks`). Built on first use by :func:`models`, so pydantic (about
11 MiB resident with the OpenSSL it loads) stays out of a job that reads no recipe file."""

import functools
from typing import Annotated, Any

from workbench.core.recipe import checks
from workbench.core.recipe.checks import Granularity, PlanMode


@functools.cache
def models() -> dict[str, Any]:
    """The pydantic models by name: QuantSpec, NodeConfig, PartialSpec, NodeSettings, Rule,
    SmoothQuantSpec, Preset (their fields as the records'; ``ValidationError`` names the bad field)."""
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

    class ObserverArgs(TypedDict, total=False):
        """``observer_args``: known keys checked here, so an error names the key; unknown keys pass here and
        are refused by the spec's own validator (naming the keys it knows)."""

        __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

        averaging_constant: Annotated[float, AfterValidator(checks.check_averaging)]
        bins: Annotated[float, AfterValidator(checks.check_bins)]
        percentile: Annotated[float, AfterValidator(checks.check_percentile)]

    class QuantSpec(BaseModel):
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
            return checks.dtype_known(v)

        @field_validator("observer")
        @classmethod
        def _observer_known(cls, v: str) -> str:
            return checks.observer_known(v)

        @field_validator("observer_args")
        @classmethod
        def _observer_args_known(cls, v: dict[str, float]) -> dict[str, float]:
            return checks.observer_args_known(v)

        @model_validator(mode="after")
        def _consistent(self) -> "QuantSpec":
            checks.spec_consistent(self.dtype, self.granularity, self.block_size, self.reduce_range)
            return self

    class NodeConfig(BaseModel):
        model_config = ConfigDict(frozen=True, extra="forbid")

        weight: QuantSpec | None = None
        activation: QuantSpec | None = None
        bias: QuantSpec | None = None

    class PartialSpec(BaseModel):
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
            return v if v is None else checks.dtype_known(v)

        @field_validator("observer")
        @classmethod
        def _observer_known(cls, v: str | None) -> str | None:
            return v if v is None else checks.observer_known(v)

        @field_validator("observer_args")
        @classmethod
        def _observer_args_known(cls, v: dict[str, float] | None, info: ValidationInfo) -> dict[str, float] | None:
            if v is None:
                return v
            checks.observer_args_known(v)
            observer = info.data.get("observer")  # validated before observer_args (field order)
            return v if observer is None else checks.observer_reads(observer, v)

    class NodeSettings(BaseModel):
        model_config = ConfigDict(extra="forbid")

        weight: PartialSpec | None = None
        activation: PartialSpec | None = None
        bias: PartialSpec | None = None
        exclude: bool | None = None

    class Rule(NodeSettings):
        op_type: str | None = None
        name: str | None = None

        @model_validator(mode="after")
        def _one_key(self) -> "Rule":
            if (self.op_type is None) == (self.name is None):
                raise ValueError("a rule matches either op_type or name (a glob), exactly one of them")
            return self

    class SmoothQuantSpec(BaseModel):
        model_config = ConfigDict(frozen=True, extra="forbid")

        alpha: float = Field(0.5, ge=0.0, le=1.0)
        op_types: tuple[str, ...] = ("Conv", "MatMul")
        exclude: tuple[str, ...] = ()

    class Preset(BaseModel):
        model_config = ConfigDict(frozen=True)

        name: str
        description: str
        mode: PlanMode = PlanMode.STATIC
        config: NodeConfig
        op_types: tuple[str, ...]
        min_opset: int = 13

    return {m.__name__: m for m in (QuantSpec, NodeConfig, PartialSpec, NodeSettings, Rule, SmoothQuantSpec, Preset)}
