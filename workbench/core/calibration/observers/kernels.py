"""Fast inner loops of the observers: one-pass min / max / non-finite count and histogram binning.

The loops are LLVM IR compiled for this CPU with llvmlite (:mod:`workbench.core.calibration.observers._llvm`,
imported on first use, so ``import workbench.core`` does not pay for it). They compute exactly what the
numpy code of the observers computes -- the same float32 (or float64) arithmetic for every bin index,
the same clamping -- so the observer state is identical either way (tests/test_observer_kernels.py).
When llvmlite cannot be imported or compile, or ``WORKBENCH_NO_NUMBA=1`` is set, :func:`get` returns
None and the observers use their numpy code (logged once).

Why: numpy needs two passes for min and max and five for a histogram update (subtract, multiply,
cast, ``bincount``, add), each over memory that onnxruntime has just written; the compiled loops
read the values once for the range and once for the bins (nudenet_320n: histogram updates 5-6 ns
-> about 1.5-2 ns per element, see benchmarks/results/calibration_step.md).
"""

from __future__ import annotations

import contextvars
import importlib
import logging
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import numpy as np

log = logging.getLogger(__name__)

#: False forces the numpy code (tests compare both paths); None = not decided yet.
ENABLED: bool | None = None
_impl: ModuleType | None = None
#: Whether :func:`get` may load the compiled loops in this context (:func:`without_loading` turns it off).
_MAY_LOAD: contextvars.ContextVar[bool] = contextvars.ContextVar("workbench_may_load_kernels", default=True)

#: Loading the compiled loops costs 0.05-0.07 s of CPU and about 76 MiB of resident memory per process
#: (llvmlite's import and the compile of the two float32 loops, measured on x86_64 AVX512-VNNI; the
#: rarer loops for float64 data and non-finite values compile on first use, 0.07-0.08 s more); they
#: then bin about 1.2 ns a value faster than numpy (a 74k-value float32 tensor: 101 against 188 us per
#: histogram update), so they pay from about 5e7 binned values. A calibration that bins fewer values
#: than this keeps to numpy (same observer state).
MIN_JOB_VALUES = 100_000_000

#: float dtype -> (same-width signed integer, exponent mask, mask without the sign bit, width - 1)
_INT_VIEW = {np.dtype(np.float32): (np.int32, 0x7F800000, np.int32(0x7FFFFFFF), np.int32(31)),
             np.dtype(np.float64): (np.int64, 0x7FF0000000000000, np.int64(0x7FFFFFFFFFFFFFFF), np.int64(63))}


def get() -> ModuleType | None:
    """The compiled kernels module, or None when the numpy code must be used."""
    global ENABLED, _impl
    if _impl is not None and ENABLED:
        return _impl
    if ENABLED is False or not _MAY_LOAD.get():
        return None
    if os.environ.get("WORKBENCH_NO_NUMBA", "") not in ("", "0"):
        ENABLED = False
        log.info("WORKBENCH_NO_NUMBA is set: observers use numpy (slower calibration).")
        return None
    try:
        _jit = _load()
    except Exception as exc:  # noqa: BLE001 - ImportError, or a broken llvmlite install
        ENABLED = False
        log.warning("The compiled observer loops are not usable (%s: %s); observers fall back to numpy (about "
                    "3x slower histogram updates). Reinstall llvmlite to restore the fast path.", type(exc).__name__, exc)
        return None
    _impl, ENABLED = _jit, True
    return _impl


def _load() -> ModuleType:
    """Import the compiled loops (llvmlite compiles them for this CPU)."""
    loops = importlib.import_module("workbench.core.calibration.observers._llvm")
    _warm(loops)
    return loops


@contextmanager
def without_loading() -> Iterator[None]:
    """Inside this block :func:`get` returns the kernels only when they are already loaded (it never
    loads them): for calibrations too small to win back the loading (:data:`MIN_JOB_VALUES`).
    Per context (thread), so a concurrent larger job is not affected."""
    token = _MAY_LOAD.set(False)
    try:
        yield
    finally:
        _MAY_LOAD.reset(token)


def loaded() -> ModuleType | None:
    """The compiled kernels if something already loaded them (:func:`get`), else None; never loads them.

    MinMax uses this: its numpy path (one ``min`` and one ``max`` reduction, about 0.65 ns per
    float32 value against the kernel's 0.5 ns on x86_64 AVX512-VNNI, 2 loaded cores) gives the same
    range, and a job with only MinMax observers then skips loading the kernels (about 0.06 s of CPU
    and 76 MiB of resident memory per run).
    """
    return _impl if ENABLED and _impl is not None else None


#: smaller arrays use numpy: same result, no loading of the kernels for small models, and numpy's
#: per-call overhead is no larger than the kernels' at this size.
MIN_SIZE = 1 << 15


def _warm(k: ModuleType) -> None:
    """Run the float32 kernels every calibration uses once, so loops that compiled but cannot run
    fall back here rather than failing inside an update."""
    x = np.zeros(8, np.float32)
    k.minmax_keys32(x.view(np.int32), _INT_VIEW[x.dtype][2], _INT_VIEW[x.dtype][3])
    k.bin_f32(x, np.float32(0), np.float32(1), np.zeros(4, np.int64))


def usable(x: np.ndarray) -> bool:
    """True when ``x`` is a 1-D contiguous float32 / float64 array of at least :data:`MIN_SIZE` values."""
    return x.size >= MIN_SIZE and x.dtype in _INT_VIEW and x.ndim == 1 and x.flags.c_contiguous


def for_array(x: np.ndarray) -> ModuleType | None:
    """The compiled loops for one 1-D array: :func:`get` when it is :func:`usable` (large enough to load them for),
    else :func:`loaded` when it is a non-empty 1-D contiguous float32 / float64 array (once loaded, the loops
    cost less per call than numpy's binning even on small arrays: ppocrv4_rec at batch 1 bins 52 of its 87
    tensors, under 32 Ki values each, 256 times), else None. Either way the observer state is the same."""
    if x.size >= MIN_SIZE:
        return get() if usable(x) else None
    if _impl is None or not ENABLED or not x.size or x.dtype not in _INT_VIEW or x.ndim != 1:
        return None
    return _impl if x.flags.c_contiguous else None


#: float32 bits (sign cleared) at or above this are +-Inf or NaN
EXPONENT_F32 = _INT_VIEW[np.dtype(np.float32)][1]
#: two float32 values from their bits as two int32 (native byte order both ways)
_I32_PAIR, _F32_PAIR = struct.Struct("=2i"), struct.Struct("=2f")


def key_floats(kmin: int, kmax: int, dtype: np.dtype) -> tuple[float, float]:
    """The values (Python floats) of two order keys of ``minmax_keys32`` / ``minmax_keys`` (``dtype`` float32 / 64)."""
    if dtype == np.float32:  # plain int arithmetic and struct: a tenth of the numpy round trip's cost per call
        bits = _I32_PAIR.pack(kmin ^ ((kmin >> 31) & 0x7FFFFFFF), kmax ^ ((kmax >> 31) & 0x7FFFFFFF))
        return _F32_PAIR.unpack(bits)
    ity, _, absmask, shift = _INT_VIEW[np.dtype(dtype)]
    keys = np.array([kmin, kmax], ity)
    mn, mx = (keys ^ ((keys >> shift) & absmask)).view(dtype).tolist()
    return mn, mx


def scan(k: ModuleType, flat: np.ndarray) -> tuple[float, float, int]:
    """``(min, max, non-finite count)`` of a non-empty array accepted by :func:`usable`.

    Min and max are over the finite values (``(inf, -inf)`` if there are none), exactly numpy's
    ``min`` / ``max`` of ``flat[np.isfinite(flat)]``.
    """
    ity, expo, absmask, shift = _INT_VIEW[flat.dtype]
    keys = k.minmax_keys32 if ity is np.int32 else k.minmax_keys
    kmin, kmax, amax = keys(flat.view(ity), absmask, shift)
    if amax >= expo:
        mn, mx = k.finite_minmax(flat)
        return float(mn), float(mx), int(k.count_nonfinite(flat))
    mn, mx = key_floats(kmin, kmax, flat.dtype)
    return mn, mx, 0
