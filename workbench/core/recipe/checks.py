"""The recipe's value checks, shared by its plain records (:mod:`workbench.core.recipe.spec`) and the
pydantic models that validate recipe files (:mod:`workbench.core.recipe.spec_models`): names of
observers and roles, the observer arguments and their ranges, the dtype names, and the granularity
and mode enums. Every check raises ValueError with the text a recipe error shows."""

from __future__ import annotations

import math
from enum import StrEnum

from workbench.core.formats.qtypes import MX_DTYPES, QONNX_DTYPES, RECIPE_DTYPES, get_qtype
from workbench.core.wording import did_you_mean

OBSERVERS = ("minmax", "percentile", "entropy", "mse")
ROLES = ("weight", "activation", "bias")
#: the ``observer_args`` keys the observers read (histogram observers: bins; percentile: percentile;
#: minmax: averaging_constant for a moving average)
OBSERVER_ARGS = ("bins", "percentile", "averaging_constant")
#: the ``observer_args`` keys each observer reads (workbench.core.calibration.observers: minmax.py,
#: histogram.py for entropy / mse, percentile.py)
OBSERVER_READS: dict[str, tuple[str, ...]] = {"minmax": ("averaging_constant",), "percentile": ("bins", "percentile"),
                                              "entropy": ("bins",), "mse": ("bins",)}
#: the observers that compute per_block ranges (the histogram observers, percentile / entropy / mse, raise for
#: per_block in workbench.core.calibration.observers.histogram, and calibration falls back to minmax)
BLOCK_OBSERVERS = ("minmax",)
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


class Granularity(StrEnum):
    per_tensor = "per_tensor"
    per_channel = "per_channel"
    per_block = "per_block"


#: what a static plan does with activations of the other granularities than per_tensor
#: (``planning.plan._activation_spec``): a recipe file may not ask for them (``recipe.conflicts``)
UNAPPLIED_ACTIVATION_GRANULARITY = {
    Granularity.per_channel: "per_channel activations do not fuse into integer kernels: the plan would quantize "
                             "them per_tensor",
    Granularity.per_block: "per_block activations are not supported by QDQ runtimes: the plan would leave them float"}


def mx_activation_problem(dtype: str) -> str:
    """Why a static plan leaves activations of the MX dtype ``dtype`` float (an MX format needs per_block)."""
    return (f"{dtype} is an MX block format, and per_block activations are not supported by QDQ runtimes "
            "(the plan would leave them float)")


def block_observer_problem(observer: str) -> str:
    """Why per_block settings with ``observer`` (not in :data:`BLOCK_OBSERVERS`) are not applied as written."""
    return f"the {observer} observer computes no per_block ranges (calibration would use minmax instead)"


def unapplied_choice(role: str, field: str, value: str, *, static: bool, granularities: list[str],
                     observers: list[str], dtypes: list[str] = ()) -> str | None:
    """Why setting ``field`` (dtype, granularity or observer) of ``role`` to ``value`` would give settings a recipe
    file may not hold (the checks ``recipe.conflicts.first_conflict`` makes with ``unapplied``, and an MX dtype
    without per_block, which :func:`spec_conflict` refuses), for an editor of specs holding ``granularities``,
    ``observers`` and ``dtypes`` (several for several nodes; an editor offers the choices this returns None for).
    ``static``: the recipe's preset quantizes activations ahead of time. The reason is a sentence without a final
    period; None when the choice is applied as written."""
    if static and role == "activation":
        if field == "dtype" and value in MX_DTYPES:
            return mx_activation_problem(value)
        if field == "granularity" and value in UNAPPLIED_ACTIVATION_GRANULARITY:
            return UNAPPLIED_ACTIVATION_GRANULARITY[Granularity(value)]
    if field == "dtype" and value in MX_DTYPES:
        held = next((g for g in granularities if g != Granularity.per_block), None)
        if held is not None:
            return (f"{value} is an MX block format (one shared scale per block of 32 values), which {held} cannot "
                    "hold: set the granularity to per_block, block_size 32, first")
    if field == "granularity" and value != Granularity.per_block:
        held = next((d for d in dtypes if d in MX_DTYPES), None)
        if held is not None:
            return f"{held} is an MX block format: it takes per_block only; choose another dtype first"
    if field == "granularity" and value == Granularity.per_block:
        held = next((o for o in observers if o not in BLOCK_OBSERVERS), None)
        if held is not None:
            return f"{block_observer_problem(held)}: set the observer to {BLOCK_OBSERVERS[0]} first"
    if field == "observer" and value not in BLOCK_OBSERVERS and Granularity.per_block in granularities:
        return f"{block_observer_problem(value)}: per_block settings take {BLOCK_OBSERVERS[0]}"
    return None


class PlanMode(StrEnum):
    """How a recipe quantizes: calibrated static QDQ, dynamic (activations at run time), weight-only."""

    STATIC = "static"
    DYNAMIC = "dynamic"
    WEIGHT_ONLY = "weight_only"


def _out_of_range(value: float, takes: str) -> ValueError:
    return ValueError(f"{value:g} is out of range: use {takes}")


def check_bins(v: float) -> float:
    lo, hi = BINS_RANGE
    if not (math.isfinite(v) and v == int(v) and lo <= v <= hi):
        raise _out_of_range(v, f"a whole number of histogram bins from {lo} to {hi} (default {DEFAULT_BINS})")
    return v


def check_percentile(v: float) -> float:
    lo, hi = PERCENTILE_RANGE
    if not lo < v <= hi:  # NaN fails too
        raise _out_of_range(v, f"a percentile above {lo:g} and at most {hi:g} (default {DEFAULT_PERCENTILE:g})")
    return v


def check_averaging(v: float) -> float:
    lo, hi = AVERAGING_RANGE
    if not lo < v <= hi:
        raise _out_of_range(v, f"a moving-average weight above {lo:g} and at most {hi:g} (0.01 is usual)")
    return v


#: the range check of each ``observer_args`` key
ARG_CHECKS = {"averaging_constant": check_averaging, "bins": check_bins, "percentile": check_percentile}


def observer_reads(observer: str, args: dict[str, float]) -> dict[str, float]:
    """``args`` when ``observer`` reads every key of it; else ValueError naming the keys it ignores and
    those it reads (:data:`OBSERVER_READS`)."""
    ignored = _ignored(observer, args)
    if ignored:
        it = "it" if len(ignored) == 1 else "them"
        raise ValueError(f"{_not_read(ignored, observer, observer)}: remove {it} or choose an observer that reads {it}")
    return args


def inherited_observer_reads(observer: str, args: dict[str, float]) -> dict[str, float]:
    """``args`` set without an observer, for the ``observer`` they go to (the one a rule or override
    inherits): ``args`` when it reads every key; else ValueError naming the keys it ignores and those
    it reads, and saying to set an observer next to them (naming those that read every key of
    ``args``, :data:`OBSERVER_READS`) or to remove them."""
    ignored = _ignored(observer, args)
    if ignored:
        it = "it" if len(ignored) == 1 else "them"
        readers = [o for o, reads in OBSERVER_READS.items() if set(args) <= set(reads)]
        fix = f"remove {it}"
        if readers:
            names = " or ".join([", ".join(readers[:-1]), readers[-1]] if len(readers) > 1 else readers)
            fix = f'set "observer" there to one that reads {it} ({names}), or {fix}'
        raise ValueError(f"{_not_read(ignored, observer, 'inherited ' + observer)}: {fix}")
    return args


def _ignored(observer: str, args: dict[str, float]) -> list[str]:
    reads = OBSERVER_READS.get(observer, ())
    return [k for k in args if k not in reads]


def _not_read(ignored: list[str], observer: str, called: str) -> str:
    """``'bins' is not read by the <called> observer, which reads only averaging_constant``."""
    return (f"{', '.join(map(repr, ignored))} {'is' if len(ignored) == 1 else 'are'} not read by the {called} "
            f"observer, which reads only {' and '.join(OBSERVER_READS.get(observer, ()))}")


def dtype_known(v: str) -> str:
    if v not in RECIPE_DTYPES and v not in QONNX_DTYPES and v != "int32":
        raise ValueError(f"unknown dtype {v!r}{did_you_mean(v, [*RECIPE_DTYPES, *QONNX_DTYPES])}; use one of "
                         f"{', '.join(RECIPE_DTYPES)} "
                         f"(QONNX target also: {', '.join(QONNX_DTYPES)})")
    return v


def observer_known(v: str) -> str:
    if v not in OBSERVERS:
        raise ValueError(f"unknown observer {v!r}{did_you_mean(v, OBSERVERS)}; use one of {', '.join(OBSERVERS)}")
    return v


def observer_args_known(v: dict[str, float]) -> dict[str, float]:
    unknown = sorted(set(v) - set(OBSERVER_ARGS))
    if unknown:
        named = ", ".join(f"{k!r}{did_you_mean(k, OBSERVER_ARGS)}" for k in unknown)
        raise ValueError(f"unknown observer_args {named}; use {', '.join(OBSERVER_ARGS)}")
    return v


def observer_args_in_range(v: dict[str, float]) -> dict[str, float]:
    """Each known key's value in the range its observer takes (ValueError otherwise)."""
    for key, value in v.items():
        if key in ARG_CHECKS:
            ARG_CHECKS[key](value)
    return v


def spec_conflict(dtype: str, granularity: Granularity, block_size: int | None,
                  reduce_range: bool) -> tuple[str, str, str] | None:
    """The first contradiction among a spec's fields, as ``(field, problem, fix)``: the field to change
    (``granularity``, ``block_size``, ``dtype`` or ``reduce_range``), what is wrong and what to write;
    None when the fields fit together."""
    if granularity == Granularity.per_block:
        if block_size is None:
            return "granularity", "per_block needs a positive block_size (e.g. 32)", 'add "block_size": 32 next to it'
        if block_size < 1:
            return "block_size", "per_block needs a positive block_size (e.g. 32)", 'use "block_size": 32'
    elif block_size is not None:
        return ("block_size", "block_size is only valid with granularity per_block",
                f'remove it, or set "granularity": "per_block" (now {granularity.value})')
    if dtype in MX_DTYPES and granularity != Granularity.per_block:
        return ("dtype", f"{dtype} is an MX block format: use granularity per_block, block_size 32",
                'add "granularity": "per_block", "block_size": 32 next to it')
    if reduce_range and get_qtype(dtype).bits != 8:
        return ("reduce_range", f"reduce_range applies to 8-bit dtypes only, not {dtype}",
                "remove it, or use an 8-bit dtype (int8, uint8)")
    return None


def spec_consistent(dtype: str, granularity: Granularity, block_size: int | None, reduce_range: bool) -> None:
    """ValueError when a spec's fields contradict each other (block size, MX formats, reduce_range):
    :func:`spec_conflict`'s problem."""
    conflict = spec_conflict(dtype, granularity, block_size, reduce_range)
    if conflict is not None:
        raise ValueError(conflict[1])
