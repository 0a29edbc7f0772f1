"""The observers' loops as LLVM IR, compiled for this CPU with llvmlite (imported lazily by
:mod:`workbench.core.calibration.observers.kernels`).

Compiled in each process when first needed: the two float32 loops every histogram job runs at
import, about 0.05-0.07 s of CPU with llvmlite's import; the rarer ones (float64 data, non-finite
values, ranges far from zero) together on first use, 0.07-0.08 s. Importing numba and loading the
same loops from its on-disk cache cost 0.41-0.44 s and 103-113 MiB of resident memory (it sets up its
whole CPU target), against 76 MiB here (llvmlite's library), and a first run after install had to
compile them. Each function does the float32 / float64 arithmetic, comparisons and clamping the
observers' numpy code does, so counts, extremes and keys are identical (tests/test_observer_kernels.py).
Called through :mod:`ctypes`, which releases the GIL during the call (calibration observes a batch
while onnxruntime runs the next).

Arrays must be 1-D and C-contiguous (:func:`workbench.core.calibration.observers.kernels.usable`);
``counts`` is int64 and C-contiguous.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from workbench.core.formats.llvm_jit import compile_ir

_F = {"f32": "float", "f64": "double"}


def _minmax_keys(w: int) -> str:
    """kmin / kmax of ``b ^ ((b >> shift) & absmask)`` and the largest ``b & absmask`` over ``bits``."""
    t = f"i{w}"
    return f"""
define void @minmax_keys{w}(ptr noalias nocapture readonly %p, i64 %n, {t} %absmask, {t} %shift,
                             ptr noalias nocapture %out) #0 {{
entry:
  %b0 = load {t}, ptr %p
  %s0 = ashr {t} %b0, %shift
  %m0 = and {t} %s0, %absmask
  %k0 = xor {t} %b0, %m0
  %a0 = and {t} %b0, %absmask
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %kmin = phi {t} [ %k0, %entry ], [ %kmin1, %loop ]
  %kmax = phi {t} [ %k0, %entry ], [ %kmax1, %loop ]
  %amax = phi {t} [ %a0, %entry ], [ %amax1, %loop ]
  %q = getelementptr inbounds {t}, ptr %p, i64 %i
  %b = load {t}, ptr %q
  %s = ashr {t} %b, %shift
  %m = and {t} %s, %absmask
  %k = xor {t} %b, %m
  %a = and {t} %b, %absmask
  %kmin1 = call {t} @llvm.smin.{t}({t} %kmin, {t} %k)
  %kmax1 = call {t} @llvm.smax.{t}({t} %kmax, {t} %k)
  %amax1 = call {t} @llvm.smax.{t}({t} %amax, {t} %a)
  %i1 = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  store {t} %kmin1, ptr %out
  %o1 = getelementptr inbounds {t}, ptr %out, i64 1
  store {t} %kmax1, ptr %o1
  %o2 = getelementptr inbounds {t}, ptr %out, i64 2
  store {t} %amax1, ptr %o2
  ret void
}}
declare {t} @llvm.smin.{t}({t}, {t})
declare {t} @llvm.smax.{t}({t}, {t})
"""


def _count_nonfinite(s: str) -> str:
    """Number of values whose ``v - v == 0`` is false (NaN, +-Inf)."""
    f = _F[s]
    return f"""
define i64 @count_nonfinite_{s}(ptr noalias nocapture readonly %p, i64 %n) #0 {{
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %c = phi i64 [ 0, %entry ], [ %c1, %loop ]
  %q = getelementptr inbounds {f}, ptr %p, i64 %i
  %v = load {f}, ptr %q
  %d = fsub {f} %v, %v
  %ok = fcmp oeq {f} %d, 0.0
  %bad = zext i1 %ok to i64
  %inc = xor i64 %bad, 1
  %c1 = add i64 %c, %inc
  %i1 = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  ret i64 %c1
}}
"""


def _finite_minmax(s: str) -> str:
    """Min / max (float64) of the values with ``v - v == 0``, the first of equal values kept;
    ``(inf, -inf)`` when there are none."""
    f = _F[s]
    ext = "fpext float %v to double" if s == "f32" else "bitcast double %v to double"
    return f"""
define void @finite_minmax_{s}(ptr noalias nocapture readonly %p, i64 %n, ptr noalias nocapture %out) #0 {{
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %next ]
  %mn = phi double [ 0x7FF0000000000000, %entry ], [ %mn1, %next ]
  %mx = phi double [ 0xFFF0000000000000, %entry ], [ %mx1, %next ]
  %q = getelementptr inbounds {f}, ptr %p, i64 %i
  %v = load {f}, ptr %q
  %d = fsub {f} %v, %v
  %ok = fcmp oeq {f} %d, 0.0
  %x = {ext}
  %lt = fcmp olt double %x, %mn
  %gt = fcmp ogt double %x, %mx
  %lt1 = and i1 %ok, %lt
  %gt1 = and i1 %ok, %gt
  %mn1 = select i1 %lt1, double %x, double %mn
  %mx1 = select i1 %gt1, double %x, double %mx
  br label %next
next:
  %i1 = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  store double %mn1, ptr %out
  %o1 = getelementptr inbounds double, ptr %out, i64 1
  store double %mx1, ptr %o1
  ret void
}}
"""


_BIN_F32 = """
define void @bin_f32(ptr noalias nocapture readonly %p, i64 %n, float %lo, float %inv,
                     ptr noalias nocapture %counts, i64 %bins) #0 {
entry:
  %last = add i64 %bins, -1
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %q = getelementptr inbounds float, ptr %p, i64 %i
  %v = load float, ptr %q
  %d = fsub float %v, %lo
  %y = fmul float %d, %inv
  %k = fptosi float %y to i64
  %k1 = call i64 @llvm.smin.i64(i64 %k, i64 %last)
  %k2 = call i64 @llvm.smax.i64(i64 %k1, i64 0)
  %c = getelementptr inbounds i64, ptr %counts, i64 %k2
  %old = load i64, ptr %c
  %new = add i64 %old, 1
  store i64 %new, ptr %c
  %i1 = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
declare i64 @llvm.smin.i64(i64, i64)
declare i64 @llvm.smax.i64(i64, i64)
"""


def _bin_f64(s: str) -> str:
    """``counts[floor((float64(x) - lo) / width)] += 1``, indices clamped to the bins."""
    f = _F[s]
    ext = "fpext float %v to double" if s == "f32" else "bitcast double %v to double"
    return f"""
define void @bin_f64_{s}(ptr noalias nocapture readonly %p, i64 %n, double %lo, double %width,
                         ptr noalias nocapture %counts, i64 %bins) #0 {{
entry:
  %last = add i64 %bins, -1
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %q = getelementptr inbounds {f}, ptr %p, i64 %i
  %v = load {f}, ptr %q
  %x = {ext}
  %d = fsub double %x, %lo
  %y = fdiv double %d, %width
  %fl = call double @llvm.floor.f64(double %y)
  %k = fptosi double %fl to i64
  %k1 = call i64 @llvm.smin.i64(i64 %k, i64 %last)
  %k2 = call i64 @llvm.smax.i64(i64 %k1, i64 0)
  %c = getelementptr inbounds i64, ptr %counts, i64 %k2
  %old = load i64, ptr %c
  %new = add i64 %old, 1
  store i64 %new, ptr %c
  %i1 = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}
"""


_P, _N = ctypes.c_void_p, ctypes.c_int64
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
#: the loops every histogram job runs, compiled at import (about 0.025 s of CPU)
_HOT = compile_ir([_minmax_keys(32), _BIN_F32])
_keys32 = ctypes.CFUNCTYPE(None, _P, _N, ctypes.c_int32, ctypes.c_int32, _P)(
    _HOT.get_function_address("minmax_keys32"))
_bin32 = ctypes.CFUNCTYPE(None, _P, _N, ctypes.c_float, ctypes.c_float, _P, _N)(_HOT.get_function_address("bin_f32"))
_rare: dict[str, object] = {}
_rare_lock = threading.Lock()


def _rare_fn(name: str):
    """A loop of the rarer paths (float64 data, non-finite values, ranges far from zero), compiled
    together on first use (about 0.07 s of CPU)."""
    fns = _rare.get("fns")
    if fns is None:
        with _rare_lock:
            fns = _rare.get("fns")
            if fns is None:
                engine = compile_ir([_minmax_keys(64), _count_nonfinite("f32"), _count_nonfinite("f64"),
                                   _finite_minmax("f32"), _finite_minmax("f64"), _bin_f64("f32"), _bin_f64("f64"),
                                   "declare double @llvm.floor.f64(double)\n"])
                a = engine.get_function_address
                fns = {"minmax_keys64": ctypes.CFUNCTYPE(None, _P, _N, ctypes.c_int64, ctypes.c_int64, _P)(
                    a("minmax_keys64"))}
                for s in ("f32", "f64"):
                    fns[f"count_nonfinite_{s}"] = ctypes.CFUNCTYPE(_N, _P, _N)(a(f"count_nonfinite_{s}"))
                    fns[f"finite_minmax_{s}"] = ctypes.CFUNCTYPE(None, _P, _N, _P)(a(f"finite_minmax_{s}"))
                    fns[f"bin_f64_{s}"] = ctypes.CFUNCTYPE(None, _P, _N, ctypes.c_double, ctypes.c_double, _P, _N)(
                        a(f"bin_f64_{s}"))
                _rare["engine"] = engine
                _rare["fns"] = fns
    return fns[name]


def _ptr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def minmax_keys32(bits, absmask, shift):
    """Smallest / largest order key and largest magnitude of the float32 values whose bits are ``bits``
    (int32, 1-D, contiguous, non-empty); ``absmask`` clears the sign bit, ``shift`` is 31.

    The key ``b ^ ((b >> shift) & absmask)`` orders finite floats like their values (-0.0 below +0.0),
    so the loop is integer min / max only and vectorizes; the float is ``key ^ ((key >> shift) & absmask)``.
    A largest magnitude at or above the exponent mask means NaN or Inf are present.
    """
    out = np.empty(3, np.int32)
    _keys32(_ptr(bits), bits.size, int(absmask), int(shift), _ptr(out))
    return int(out[0]), int(out[1]), int(out[2])


def minmax_keys(bits, absmask, shift):
    """:func:`minmax_keys32` for float64 bits viewed as int64 (``shift`` 63)."""
    out = np.empty(3, np.int64)
    _rare_fn("minmax_keys64")(_ptr(bits), bits.size, int(absmask), int(shift), _ptr(out))
    return int(out[0]), int(out[1]), int(out[2])


def count_nonfinite(x):
    """Number of NaN / +-Inf in ``x`` (float32 / float64, 1-D, contiguous)."""
    if not x.size:
        return 0
    return int(_rare_fn(f"count_nonfinite_{_SUFFIX[x.dtype]}")(_ptr(x), x.size))


def finite_minmax(x):
    """Min and max of the finite values of ``x`` (float64); ``(inf, -inf)`` when there are none."""
    if not x.size:
        return np.inf, -np.inf
    out = np.empty(2, np.float64)
    _rare_fn(f"finite_minmax_{_SUFFIX[x.dtype]}")(_ptr(x), x.size, _ptr(out))
    return float(out[0]), float(out[1])


def bin_f32(x, lo, inv, counts):
    """``counts[trunc((x - lo) * inv)] += 1`` in float32 arithmetic, indices clamped to the bins."""
    if x.size:
        _bin32(_ptr(x), x.size, float(lo), float(inv), _ptr(counts), counts.size)


def bin_f64(x, lo, width, counts):
    """``counts[floor((float64(x) - lo) / width)] += 1``, indices clamped to the bins."""
    if x.size:
        _rare_fn(f"bin_f64_{_SUFFIX[x.dtype]}")(_ptr(x), x.size, float(lo), float(width), _ptr(counts), counts.size)
