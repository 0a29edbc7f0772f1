"""MinMax observer: running minimum and maximum, per tensor, per channel or per block.

The range is ``[min(x), max(x)]`` over all calibration data (onnxruntime's ``MinMaxCalibrater``
with ``moving_average=False``). With ``observer_args={"averaging_constant": c}`` the per-batch
extremes are smoothed as ``m <- m + c * (batch_m - m)`` (the moving-average MinMax of
onnxruntime / PyTorch's ``MovingAverageMinMaxObserver``; c = 0.01 there).

Cost per update: one ``min`` and one ``max`` reduction (numpy), no copies; when a histogram observer
of the same job has loaded the compiled kernels (:mod:`~workbench.core.calibration.observers.kernels`),
one compiled pass giving min, max and the NaN / Inf count instead (same range). A MinMax-only job
never loads the compiled loops (:func:`~workbench.core.calibration.observers.kernels.loaded`). The NaN-aware
path runs only when there are non-finite values.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.core.calibration.observers import kernels
from workbench.core.calibration.observers.base import Observer, as_f32, inf_if_none, none_if_inf
from workbench.core.errors import CalibrationError
from workbench.core.recipe.spec import Granularity


class MinMaxObserver(Observer):
    """Running min / max; see the module docstring. Ranges are float32 arrays."""

    name = "minmax"

    def __init__(self, spec, *, axis=None, name="tensor"):
        super().__init__(spec, axis=axis, name=name)
        self._min: np.ndarray | None = None
        self._max: np.ndarray | None = None
        c = spec.observer_args.get("averaging_constant")
        self.averaging = None if c is None else float(c)

    # -- update -------------------------------------------------------------------------------
    def _observe(self, x: np.ndarray) -> None:
        if self.granularity == Granularity.per_tensor:
            mn, mx = self._tensor_range(x)
            if mn is None:
                return
            if self.averaging is None and isinstance(self._min, float):  # hot path: Python floats
                if mn < self._min:
                    self._min = mn
                if mx > self._max:
                    self._max = mx
                return
            if self._min is None and self.averaging is None:
                self._min, self._max = mn, mx
                return
            bmin, bmax = as_f32(mn), as_f32(mx)
        elif self.granularity == Granularity.per_channel:
            bmin, bmax = self._per_channel(x)
        else:
            bmin, bmax = self._per_block(x)
        self._accumulate(as_f32(bmin), as_f32(bmax))

    def _tensor_range(self, x: np.ndarray) -> tuple[float, float] | tuple[None, None]:
        """Finite min / max of the batch (counted), or ``(None, None)`` if no value is finite."""
        k = kernels.loaded() if x.flags.c_contiguous and kernels.usable(x.reshape(-1)) else None
        if k is not None:
            mn, mx, bad = kernels.scan(k, x.reshape(-1))
            self.nonfinite += bad
            self.count += x.size - bad
            return (None, None) if bad == x.size else (mn, mx)
        mn, mx = float(x.min()), float(x.max())
        if math.isfinite(mn) and math.isfinite(mx):
            self.count += x.size
            return mn, mx
        got = self._finite_flat(x)
        return (None, None) if got is None else got[1:]

    def _arrays(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self._min is None:
            return None
        return as_f32(self._min), as_f32(self._max)

    def _per_channel(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ax = self._norm_axis(x.ndim)
        red = tuple(i for i in range(x.ndim) if i != ax)
        bmin, bmax = x.min(axis=red), x.max(axis=red)
        if np.isfinite(bmin).all() and np.isfinite(bmax).all():
            self.count += x.size
            return bmin, bmax
        fin = np.isfinite(x)
        n_ok = int(np.count_nonzero(fin))
        self.nonfinite += x.size - n_ok
        self.count += n_ok
        return np.where(fin, x, np.inf).min(axis=red), np.where(fin, x, -np.inf).max(axis=red)

    def _per_block(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ax = self._norm_axis(x.ndim)
        bmin, bmax = _block_reduce(x, ax, self.block_size, np.min), _block_reduce(x, ax, self.block_size, np.max)
        if np.isfinite(bmin).all() and np.isfinite(bmax).all():
            self.count += x.size
            return bmin, bmax
        fin = np.isfinite(x)
        n_ok = int(np.count_nonzero(fin))
        self.nonfinite += x.size - n_ok
        self.count += n_ok
        return (_block_reduce(np.where(fin, x, np.inf), ax, self.block_size, np.min),
                _block_reduce(np.where(fin, x, -np.inf), ax, self.block_size, np.max))

    def _accumulate(self, bmin: np.ndarray, bmax: np.ndarray) -> None:
        cur = self._arrays()
        if cur is None:
            self._min, self._max = np.array(bmin, np.float32), np.array(bmax, np.float32)
            return
        cmin, cmax = cur
        if bmin.shape != cmin.shape:
            what = "channels" if self.granularity == Granularity.per_channel else "blocks"
            raise CalibrationError(
                f"{self.tensor}: {what} changed between batches ({cmin.shape} -> {bmin.shape}).",
                hint=f"{self.granularity.value} needs a fixed size along axis {self.axis}; "
                     "use per_tensor for tensors whose shape varies.")
        if self.averaging is not None:
            c = np.float32(self.averaging)
            fresh_min, fresh_max = ~np.isfinite(cmin), ~np.isfinite(cmax)
            cmin = np.where(fresh_min, bmin, cmin + c * (bmin - cmin))
            cmax = np.where(fresh_max, bmax, cmax + c * (bmax - cmax))
            self._min = np.where(np.isfinite(cmin), cmin, bmin).astype(np.float32)
            self._max = np.where(np.isfinite(cmax), cmax, bmax).astype(np.float32)
        elif self._min is not None and isinstance(self._min, float):
            self._min, self._max = min(self._min, float(bmin)), max(self._max, float(bmax))
        else:
            self._min, self._max = np.minimum(cmin, bmin), np.maximum(cmax, bmax)

    # -- results ------------------------------------------------------------------------------
    def compute_range(self) -> tuple[np.ndarray, np.ndarray]:
        cur = self._arrays()
        if cur is None:
            return np.zeros((), np.float32), np.zeros((), np.float32)
        cmin, cmax = cur
        empty = ~(cmin <= cmax)  # channels / blocks that saw no finite value
        rmin = np.where(empty, np.float32(0), cmin).astype(np.float32)
        rmax = np.where(empty, np.float32(0), cmax).astype(np.float32)
        return rmin, rmax

    def _merge(self, other: MinMaxObserver) -> None:
        cur = other._arrays()
        if cur is not None:
            self._accumulate(*cur)

    def _state(self) -> dict:
        cur = self._arrays()
        if cur is None:
            return {"min": None, "max": None}
        return {"min": none_if_inf(cur[0]), "max": none_if_inf(cur[1]), "shape": list(cur[0].shape)}

    def _load(self, data: dict) -> None:
        if data.get("min") is None and "shape" not in data:
            return
        shape = tuple(data["shape"])
        self._min = inf_if_none(data["min"], math.inf).reshape(shape)
        self._max = inf_if_none(data["max"], -math.inf).reshape(shape)
        if not shape and self.averaging is None:
            self._min, self._max = float(self._min), float(self._max)


def _block_reduce(x: np.ndarray, axis: int, block_size: int, fn) -> np.ndarray:
    """Reduce ``x`` over blocks of ``block_size`` along ``axis`` (last block may be short).

    Returns an array of ``x.shape`` with ``shape[axis]`` replaced by ``ceil(shape[axis] /
    block_size)`` -- the ONNX QuantizeLinear-21 blocked scale layout.
    """
    xm = np.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    nb = -(-n // block_size)
    pad = nb * block_size - n
    if pad:
        xm = np.concatenate([xm, np.repeat(xm[..., -1:], pad, axis=-1)], axis=-1)  # edge values
    r = fn(xm.reshape(*xm.shape[:-1], nb, block_size), axis=-1)
    return np.moveaxis(r, -1, axis)
