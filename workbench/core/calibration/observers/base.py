"""Observer base class: streaming range statistics of one tensor during calibration.

An observer sees the tensor batch by batch (:meth:`Observer.update`), keeps a fixed-size state,
and turns it into a real range (:meth:`Observer.compute_range`) and quantization parameters
(:meth:`Observer.qparams`, via :func:`workbench.core.formats.numerics.compute_qparams`). Empty batches
are skipped; NaN / +-Inf values are counted in ``nonfinite`` and left out of the statistics.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from workbench.core.calibration.observers import kernels
from workbench.core.errors import CalibrationError, RecipeError
from workbench.core.formats.numerics import compute_qparams
from workbench.core.formats.qparams import QParams
from workbench.core.recipe.spec import Granularity, QuantSpec

STATE_VERSION = 1
F32_MAX = float(np.finfo(np.float32).max)


def as_f32(a) -> np.ndarray:
    """float32 array of ``a`` with values beyond the float32 range saturated (float64 inputs)."""
    return np.clip(np.asarray(a, np.float64), -F32_MAX, F32_MAX).astype(np.float32)


class Observer:
    """Base class; subclasses implement ``_observe``, ``compute_range`` and the state hooks.

    Parameters
    ----------
    spec : QuantSpec
        Target dtype, symmetric / reduce_range / power_of_two, granularity, observer_args.
    axis : int or None
        Channel (per_channel) or block (per_block) axis; overrides ``spec.axis``. May be negative
        (normalised on the first update).
    name : str
        Tensor name, used in error messages.

    Attributes
    ----------
    count : int
        Number of finite values that entered the statistics.
    nonfinite : int
        Number of NaN / +-Inf values seen (excluded from the statistics).
    batches : int
        Number of non-empty updates.
    """

    name: ClassVar[str] = ""
    registry: ClassVar[dict[str, type[Observer]]] = {}

    def __init__(self, spec: QuantSpec, *, axis: int | None = None, name: str = "tensor"):
        self.spec = spec
        self.tensor = name
        self.granularity = Granularity(spec.granularity)
        self.axis = axis if axis is not None else spec.axis
        self.block_size = spec.block_size if self.granularity == Granularity.per_block else None
        if self.granularity != Granularity.per_tensor and self.axis is None:
            raise RecipeError(f"{name}: {self.granularity.value} quantization needs an axis.",
                              hint="Set 'axis' in the spec (e.g. 0 for Conv weights).")
        self.count = 0
        self.nonfinite = 0
        self.batches = 0

    # -- registry ----------------------------------------------------------------------------
    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.name:
            Observer.registry[cls.name] = cls

    # -- streaming ---------------------------------------------------------------------------
    def update(self, x: np.ndarray) -> None:
        """Add one batch.

        Parameters
        ----------
        x : numpy.ndarray, float (any shape; empty arrays are ignored)
            Values of the tensor for one batch. Shapes may differ between calls except along the
            channel axis (per_channel) or in the whole shape (per_block).

        Raises
        ------
        CalibrationError
            If the channel count or blocked shape changes between batches.
        """
        if type(x) is not np.ndarray:
            x = np.asarray(x)
        if x.size == 0:
            return
        if x.dtype.kind not in "fiu":
            raise CalibrationError(f"{self.tensor}: cannot observe values of dtype {x.dtype}.",
                                   hint="Only float tensors can be calibrated; exclude this node.")
        self.batches += 1
        self._observe(x)

    def _observe(self, x: np.ndarray) -> None:
        raise NotImplementedError

    def compute_range(self) -> tuple[np.ndarray, np.ndarray]:
        """The real range ``(rmin, rmax)`` to quantize, float32 arrays.

        Shape ``()`` per-tensor, ``(C,)`` per-channel, the blocked shape per-block. Before any
        finite value was seen the range is ``(0, 0)`` (which gives scale 1, zero point 0).
        """
        raise NotImplementedError

    def qparams(self) -> QParams:
        """Scale / zero point for the observed range (see :func:`~workbench.core.formats.numerics.compute_qparams`)."""
        rmin, rmax = self.compute_range()
        return compute_qparams(rmin, rmax, self.spec.dtype, symmetric=self.spec.symmetric,
                               reduce_range=self.spec.reduce_range, power_of_two=self.spec.power_of_two,
                               axis=self.axis if self.granularity != Granularity.per_tensor else None,
                               block_size=self.block_size)

    def merge(self, other: Observer) -> None:
        """Fold the statistics of ``other`` (same class, spec and axis) into this observer.

        Raises
        ------
        CalibrationError
            If the observers are not compatible.
        """
        if type(other) is not type(self) or other.spec != self.spec or other.granularity != self.granularity:
            raise CalibrationError(f"{self.tensor}: cannot merge a {type(other).__name__} into a "
                                   f"{type(self).__name__} with a different spec.",
                                   hint="Merge only observers made from the same spec.")
        self._merge(other)
        self.count += other.count
        self.nonfinite += other.nonfinite
        self.batches += other.batches

    def _merge(self, other: Observer) -> None:
        raise NotImplementedError

    # -- state -------------------------------------------------------------------------------
    def state(self) -> dict:
        """JSON-safe snapshot (only str, int, float, None, lists, dicts) for calibration caches."""
        return {"observer": self.name, "version": STATE_VERSION, "tensor": self.tensor,
                "spec": self.spec.model_dump(mode="json"), "axis": self.axis,
                "count": self.count, "nonfinite": self.nonfinite, "batches": self.batches,
                "data": self._state()}

    def _state(self) -> dict:
        raise NotImplementedError

    def copy(self, spec: QuantSpec | None = None) -> Observer:
        """An independent copy (through :meth:`state`), with ``spec`` instead of this one's when given
        (the caller vouches that the statistics serve it). A copy with the same spec keeps what this
        observer already derived from its statistics (a histogram observer's range search)."""
        state = self.state()
        if spec is not None and spec != self.spec:
            state["spec"] = spec.model_dump(mode="json")
            return Observer.from_state(state)
        twin = Observer.from_state(state)
        twin._keep_derived(self)
        return twin

    def _keep_derived(self, source: Observer) -> None:
        """Take over what ``source`` (same class, spec and statistics) derived from its statistics; nothing here."""

    def _load(self, data: dict) -> None:
        raise NotImplementedError

    @classmethod
    def from_state(cls, d: dict) -> Observer:
        """Rebuild an observer from :meth:`state`.

        Raises
        ------
        CalibrationError
            If the dict is not an observer state of a known kind or version.
        """
        try:
            kind = Observer.registry[d["observer"]]
            if int(d.get("version", 0)) > STATE_VERSION:
                raise CalibrationError(f"Observer state of {d.get('tensor')!r} is from a newer version.",
                                       hint="Recalibrate, or update the workbench.")
            obs = kind(QuantSpec.model_validate(d["spec"]), axis=d.get("axis"), name=d.get("tensor", "tensor"))
            obs.count, obs.nonfinite = int(d["count"]), int(d["nonfinite"])
            obs.batches = int(d.get("batches", 0))
            obs._load(d["data"])
        except CalibrationError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"Malformed observer state ({type(exc).__name__}: {exc}).",
                                   hint="Delete the calibration cache and recalibrate.") from None
        return obs

    # -- helpers for subclasses ----------------------------------------------------------------
    def _norm_axis(self, ndim: int) -> int:
        ax = self.axis
        if ax is None or not -ndim <= ax < ndim:
            raise CalibrationError(f"{self.tensor}: axis {ax} is out of range for a {ndim}-D tensor.",
                                   hint="Fix the axis in the recipe for this node.")
        ax %= ndim
        self.axis = ax
        return ax

    def _finite_flat(self, x: np.ndarray) -> tuple[np.ndarray, float, float] | None:
        """Flattened finite values and their min / max; counts the non-finite ones.

        With the compiled loops (:mod:`~workbench.core.calibration.observers.kernels`) one pass gives min, max and
        the non-finite count; the numpy path is one min and one max reduction. The mask is built
        only when there are non-finite values (numpy: NaN propagates through both reductions,
        +-Inf shows in one). float16 values come back as float32 (exact).
        """
        flat = x.reshape(-1)
        if flat.dtype == np.float16:
            flat = flat.astype(np.float32)  # exact; histograms bin float16 as float32 anyway
        k = kernels.for_array(flat)
        if k is not None:  # one compiled pass instead of two reductions
            mn, mx, bad = kernels.scan(k, flat)
            if bad:
                self.nonfinite += bad
                if bad == flat.size:
                    return None
                flat = flat[np.isfinite(flat)]
            self.count += flat.size
            return flat, mn, mx
        mn, mx = float(flat.min()), float(flat.max())
        if not (math.isfinite(mn) and math.isfinite(mx)):
            keep = np.isfinite(flat)
            n_ok = int(np.count_nonzero(keep))
            self.nonfinite += flat.size - n_ok
            if n_ok == 0:
                return None
            flat = flat[keep]
            mn, mx = float(flat.min()), float(flat.max())
        self.count += flat.size
        return flat, mn, mx


def none_if_inf(a: np.ndarray) -> list:
    """Nested list of floats with non-finite entries as None (strict JSON has no Infinity)."""
    a = np.asarray(a, dtype=np.float64)
    obj = a.astype(object)
    obj[~np.isfinite(a)] = None
    return obj.tolist()


def inf_if_none(v: Any, fill: float) -> np.ndarray:
    """Inverse of :func:`none_if_inf`: None entries become ``fill`` (float32 array)."""
    arr = np.array(v, dtype=object)
    out = np.where(arr == None, fill, arr)  # noqa: E711 - elementwise comparison with None
    return np.asarray(out.astype(np.float64), dtype=np.float32)
