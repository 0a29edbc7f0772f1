"""The observers' loops as LLVM IR, compiled for this CPU with llvmlite (imported lazily by
:mod:`workbench.core.calibration.observers.kernels`).

Compiled when first needed, or loaded from the machine code an earlier process kept
(:mod:`~workbench.core.formats.llvm_jit`: about 0.003 s instead of the figures here): the two float32 loops every
histogram job runs (the order-key scan, and the binning that scans in the same pass) at import, about 0.05-0.07 s of CPU with llvmlite's import
(plus about 0.015 s since the binning has its sub-histogram count loop); the rarer ones (float64 data, non-finite
values, ranges far from zero) together on first use, 0.07-0.08 s; the MSE range search's squared errors
(:func:`grid_sq_errors`) alone on its first use. Importing numba and loading the
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
#: the loaded value ``%v`` as a double
_EXT = {"f32": "fpext float %v to double", "f64": "bitcast double %v to double"}


def _loop(name: str, t: str, params: str, body: str, *, ret: str = "void", entry: str = "", phis: str = "",
          value: str = "v", latch: str = "loop", exit_: str = "  ret void\n", tail: str = "") -> str:
    """The IR of one loop shape: a function ``name(p, n, <params>)`` that loads ``%<value> = p[i]`` (type ``t``)
    for ``i`` in ``0 .. n - 1`` (``n`` at least 1) and runs ``body`` on it.

    ``params``: the text after ``i64 %n`` in the parameter list; ``entry`` / ``phis`` / ``body`` / ``exit_``:
    instruction lines before the loop, after the index's phi, after the load and in the exit block (each line
    indented two spaces and ending in a newline); ``latch``: the block that steps ``i`` (``loop`` itself, or a
    block of that name the body falls through to); ``tail``: text after the function (intrinsic declarations).
    """
    step = "" if latch == "loop" else f"  br label %{latch}\n{latch}:\n"
    return f"""
define {ret} @{name}(ptr noalias nocapture readonly %p, i64 %n{params}) #0 {{
entry:
{entry}  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %{latch} ]
{phis}  %q = getelementptr inbounds {t}, ptr %p, i64 %i
  %{value} = load {t}, ptr %q
{body}{step}  %i1 = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
{exit_}}}
{tail}"""


def _minmax_keys(w: int) -> str:
    """kmin / kmax of ``b ^ ((b >> shift) & absmask)`` and the largest ``b & absmask`` over ``bits``."""
    t = f"i{w}"

    def key(i: str) -> str:  # %k<i>: the order key of %b<i>, %a<i>: its magnitude bits
        return (f"  %s{i} = ashr {t} %b{i}, %shift\n  %m{i} = and {t} %s{i}, %absmask\n  %k{i} = xor {t} %b{i}, %m{i}\n"
                f"  %a{i} = and {t} %b{i}, %absmask\n")

    return _loop(
        f"minmax_keys{w}", t,
        f", {t} %absmask, {t} %shift,\n                             ptr noalias nocapture %out",
        key("") + "".join(f"  %{v}1 = call {t} @llvm.{op}.{t}({t} %{v}, {t} %{k})\n"
                                    for v, op, k in (("kmin", "smin", "k"), ("kmax", "smax", "k"),
                                                     ("amax", "smax", "a"))),
        entry=f"  %b0 = load {t}, ptr %p\n" + key("0"),
        phis="".join(f"  %{v} = phi {t} [ %{k}0, %entry ], [ %{v}1, %loop ]\n"
                     for v, k in (("kmin", "k"), ("kmax", "k"), ("amax", "a"))),
        value="b",
        exit_=f"  store {t} %kmin1, ptr %out\n  %o1 = getelementptr inbounds {t}, ptr %out, i64 1\n"
              f"  store {t} %kmax1, ptr %o1\n  %o2 = getelementptr inbounds {t}, ptr %out, i64 2\n"
              f"  store {t} %amax1, ptr %o2\n  ret void\n",
        tail=f"declare {t} @llvm.smin.{t}({t}, {t})\ndeclare {t} @llvm.smax.{t}({t}, {t})\n")


def _finite(f: str) -> str:
    """``%ok``: ``v - v == 0`` (false for NaN and +-Inf) of the loaded ``%v`` of type ``f``."""
    return f"  %d = fsub {f} %v, %v\n  %ok = fcmp oeq {f} %d, 0.0\n"


def _count_nonfinite(s: str) -> str:
    """Number of values whose ``v - v == 0`` is false (NaN, +-Inf)."""
    return _loop(f"count_nonfinite_{s}", _F[s], "",
                 _finite(_F[s]) + "  %bad = zext i1 %ok to i64\n  %inc = xor i64 %bad, 1\n  %c1 = add i64 %c, %inc\n",
                 ret="i64", phis="  %c = phi i64 [ 0, %entry ], [ %c1, %loop ]\n", exit_="  ret i64 %c1\n")


def _finite_minmax(s: str) -> str:
    """Min / max (float64) of the values with ``v - v == 0``, the first of equal values kept;
    ``(inf, -inf)`` when there are none."""
    return _loop(
        f"finite_minmax_{s}", _F[s], ", ptr noalias nocapture %out",
        _finite(_F[s]) + f"  %x = {_EXT[s]}\n  %lt = fcmp olt double %x, %mn\n  %gt = fcmp ogt double %x, %mx\n"
        "  %lt1 = and i1 %ok, %lt\n  %gt1 = and i1 %ok, %gt\n  %mn1 = select i1 %lt1, double %x, double %mn\n"
        "  %mx1 = select i1 %gt1, double %x, double %mx\n",
        phis="  %mn = phi double [ 0x7FF0000000000000, %entry ], [ %mn1, %next ]\n"
             "  %mx = phi double [ 0xFFF0000000000000, %entry ], [ %mx1, %next ]\n",
        latch="next",
        exit_="  store double %mn1, ptr %out\n  %o1 = getelementptr inbounds double, ptr %out, i64 1\n"
              "  store double %mx1, ptr %o1\n  ret void\n")


def _bin(name: str, t: str, params: str, index: str, tail: str = "") -> str:
    """``counts[k] += 1``, ``k`` (i64, from the lines ``index`` on ``%v``) clamped to ``[0, bins - 1]``; ``tail``:
    declarations of intrinsics ``index`` calls."""
    return _loop(name, t, params,
                 index + "  %k1 = call i64 @llvm.smin.i64(i64 %k, i64 %last)\n"
                 "  %k2 = call i64 @llvm.smax.i64(i64 %k1, i64 0)\n"
                 "  %c = getelementptr inbounds i64, ptr %counts, i64 %k2\n"
                 "  %old = load i64, ptr %c\n  %new = add i64 %old, 1\n  store i64 %new, ptr %c\n",
                 entry="  %last = add i64 %bins, -1\n",
                 tail=f"declare i64 @llvm.smin.i64(i64, i64)\ndeclare i64 @llvm.smax.i64(i64, i64)\n{tail}")


#: values per block of ``bin_scan_f32`` (:func:`_bin_scan_f32`): its bin indices (4 KiB of int32) and a histogram of
#: 2048 int64 counts stay in a 32 KiB L1 data cache (blocks of 4096 lost the gain)
BIN_BLOCK = 1024

#: sub-histograms ``bin_scan_f32`` counts into when given scratch (a power of two)
WAYS = 4


def _bump(r: str, base: str, at: str) -> str:
    """IR lines: ``base[buf[at]] += inc`` on the int32 sub-histogram ``base``; names end in ``r``."""
    return (f"  %bp{r} = getelementptr inbounds i32, ptr %buf, i64 {at}\n  %kk{r} = load i32, ptr %bp{r}\n"
            f"  %kz{r} = zext i32 %kk{r} to i64\n  %cp{r} = getelementptr inbounds i32, ptr {base}, i64 %kz{r}\n"
            f"  %ov{r} = load i32, ptr %cp{r}\n  %nv{r} = add i32 %ov{r}, %inc32\n  store i32 %nv{r}, ptr %cp{r}\n")


def _sub(r: int) -> str:
    return "%sub" if r == 0 else f"%sub{r}"


def _bin_scan_f32() -> str:
    """``bin_scan_f32(p, n, lo, inv, counts, bins, inc, out, sub)``: ``counts[trunc((x - lo) * inv)] += inc`` in
    float32 arithmetic, indices clamped to the bins, and in the same pass :func:`_minmax_keys` ``(32)`` of the
    values' bits (min / max order key, max magnitude bits) into ``out``, for ``bin_f32`` and ``bin_scan_f32``.

    Per block of :data:`BIN_BLOCK` values, one loop computes the keys and the bin indices into a stack buffer (no
    stores to ``counts``, so LLVM vectorizes it) and a second one counts them: 0.80 -> 0.64 ns a value against one
    loop doing both (min of 6 interleaved runs over 60 activations of minilm_l6_v2, 9.4 M values, 2048 bins, x86_64
    AVX512-VNNI); the keys add about 0.07 ns a value, where a separate ``minmax_keys32`` pass costs 0.2-0.3. The
    index is clamped in float32 before it is truncated (``maxnum`` / ``minnum``): for every finite value that is
    the clamped ``trunc``; NaN goes to bin 0 and +-Inf to the ends, a defined and repeatable bin, so a call with
    ``inc`` -1 takes out exactly what one with +1 added (a histogram whose bins turn out not to cover the batch,
    :meth:`~workbench.core.calibration.observers.histogram.StreamingHistogram.add_inside`).

    ``sub`` null: each block's indices are counted straight into ``counts``. ``sub``: ``WAYS * bins`` int32 of
    scratch: zeroed on entry, the block's ``t``-th index counted into sub-histogram ``t % WAYS``, and each bin's
    sub-counts added to ``counts`` on exit. A run of one bin then makes :data:`WAYS` chains of increments instead
    of one: each ``load, add, store`` of a bin waits for the previous one to the same address (store-to-load
    forwarding), so a single chain costs 2.7-3.1 ns a value on all-zero data against 0.6-0.9 with distinct bins.
    The sums are exact (a sub-count is at most ``ceil(n / WAYS) * |inc|``; the caller keeps that below 2**31).
    Measured (2048 bins, 1e6 / 1e7 values, min CPU of 7 interleaved runs, x86_64 AVX512, loaded 2 cores): all
    zeros 2.75-3.0 -> 0.9-1.4 ns a value, half zeros 1.4-1.75 -> 0.8-1.2, normal data 0.56-0.94 either way
    (0-3 % more with sub-histograms: zeroing and adding them up).

    The index loop is a separate ``noinline`` function called once a block: with it inline, LLVM unswitched the
    block loop on ``sub`` and compiled the vectorized index loop twice (_HOT 0.045 -> 0.085 s of CPU at import;
    now about 0.06). The ``ways`` loop is not unrolled and the add-up loop not vectorized for the same reason
    (about 7 ms of compile, against about 1 us a call at 2048 bins).
    """
    offsets = "".join(f"  %off{r} = mul nuw nsw i64 %bins, {r}\n  %sub{r} = getelementptr i32, ptr %sub, i64 %off{r}\n"
                      for r in range(1, WAYS))
    ways = (_bump("0", "%sub", "%t4") + "".join(f"  %tr{r} = add nuw nsw i64 %t4, {r}\n" + _bump(str(r), _sub(r), f"%tr{r}")
                                             for r in range(1, WAYS)))
    merge = "".join(f"  %mp{r} = getelementptr inbounds i32, ptr {_sub(r)}, i64 %mi\n  %mw{r} = load i32, ptr %mp{r}\n"
                    f"  %mv{r} = sext i32 %mw{r} to i64\n  %ms{r + 1} = add i64 %ms{r}, %mv{r}\n" for r in range(WAYS))
    return f"""
define internal void @bin_index_f32(ptr noalias nocapture readonly %p, i64 %m, float %lo, float %inv, float %lastf,
                                    ptr noalias nocapture %buf, ptr noalias nocapture %keys) noinline #0 {{
entry:
  %kmin = load i32, ptr %keys
  %kp1 = getelementptr inbounds i32, ptr %keys, i64 1
  %kmax = load i32, ptr %kp1
  %kp2 = getelementptr inbounds i32, ptr %keys, i64 2
  %amax = load i32, ptr %kp2
  br label %index
index:
  %j = phi i64 [ 0, %entry ], [ %j1, %index ]
  %kmn = phi i32 [ %kmin, %entry ], [ %kmn1, %index ]
  %kmx = phi i32 [ %kmax, %entry ], [ %kmx1, %index ]
  %amx = phi i32 [ %amax, %entry ], [ %amx1, %index ]
  %q = getelementptr inbounds float, ptr %p, i64 %j
  %v = load float, ptr %q
  %bits = bitcast float %v to i32
  %sg = ashr i32 %bits, 31
  %mk = and i32 %sg, 2147483647
  %key = xor i32 %bits, %mk
  %mag = and i32 %bits, 2147483647
  %kmn1 = call i32 @llvm.smin.i32(i32 %kmn, i32 %key)
  %kmx1 = call i32 @llvm.smax.i32(i32 %kmx, i32 %key)
  %amx1 = call i32 @llvm.smax.i32(i32 %amx, i32 %mag)
  %d = fsub float %v, %lo
  %y = fmul float %d, %inv
  %y0 = call float @llvm.maxnum.f32(float %y, float 0.0)
  %y1 = call float @llvm.minnum.f32(float %y0, float %lastf)
  %k = fptosi float %y1 to i32
  %b = getelementptr inbounds i32, ptr %buf, i64 %j
  store i32 %k, ptr %b
  %j1 = add nuw nsw i64 %j, 1
  %jdone = icmp eq i64 %j1, %m
  br i1 %jdone, label %exit, label %index
exit:
  store i32 %kmn1, ptr %keys
  store i32 %kmx1, ptr %kp1
  store i32 %amx1, ptr %kp2
  ret void
}}

define void @bin_scan_f32(ptr noalias nocapture readonly %p, i64 %n, float %lo, float %inv,
                          ptr noalias nocapture %counts, i64 %bins, i64 %inc, ptr noalias nocapture %out,
                          ptr noalias nocapture %sub) #0 {{
entry:
  %buf = alloca [{BIN_BLOCK} x i32], align 64
  %last = add i64 %bins, -1
  %lastf = sitofp i64 %last to float
  %inc32 = trunc i64 %inc to i32
  store i32 2147483647, ptr %out
  %o1 = getelementptr inbounds i32, ptr %out, i64 1
  store i32 -2147483648, ptr %o1
  %o2 = getelementptr inbounds i32, ptr %out, i64 2
  store i32 0, ptr %o2
{offsets}  %split = icmp ne ptr %sub, null
  br i1 %split, label %zero, label %go
zero:
  %subbytes = mul nuw nsw i64 %bins, {4 * WAYS}
  call void @llvm.memset.p0.i64(ptr %sub, i8 0, i64 %subbytes, i1 false)
  br label %go
go:
  br label %block
block:
  %s = phi i64 [ 0, %go ], [ %s1, %counted ]
  %rest = sub i64 %n, %s
  %short = icmp ult i64 %rest, {BIN_BLOCK}
  %m = select i1 %short, i64 %rest, i64 {BIN_BLOCK}
  %ps = getelementptr inbounds float, ptr %p, i64 %s
  call void @bin_index_f32(ptr %ps, i64 %m, float %lo, float %inv, float %lastf, ptr %buf, ptr %out)
  br i1 %split, label %count4, label %count
count:
  %t = phi i64 [ 0, %block ], [ %mq, %restchk ], [ %t1, %count ]
  %bt = getelementptr inbounds i32, ptr %buf, i64 %t
  %kt = load i32, ptr %bt
  %kz = zext i32 %kt to i64
  %c = getelementptr inbounds i64, ptr %counts, i64 %kz
  %old = load i64, ptr %c
  %new = add i64 %old, %inc
  store i64 %new, ptr %c
  %t1 = add nuw nsw i64 %t, 1
  %tdone = icmp eq i64 %t1, %m
  br i1 %tdone, label %counted, label %count
count4:
  %rq = and i64 %m, {WAYS - 1}
  %mq = sub i64 %m, %rq
  %hasq = icmp ne i64 %mq, 0
  br i1 %hasq, label %ways, label %restchk
ways:
  %t4 = phi i64 [ 0, %count4 ], [ %t41, %ways ]
{ways}  %t41 = add nuw nsw i64 %t4, {WAYS}
  %qdone = icmp eq i64 %t41, %mq
  br i1 %qdone, label %restchk, label %ways, !llvm.loop !100
restchk:
  %more = icmp ult i64 %mq, %m
  br i1 %more, label %count, label %counted
counted:
  %s1 = add nuw nsw i64 %s, %m
  %sdone = icmp eq i64 %s1, %n
  br i1 %sdone, label %exit, label %block
exit:
  br i1 %split, label %merge, label %done
merge:
  %mi = phi i64 [ 0, %exit ], [ %mi1, %merge ]
  %mc = getelementptr inbounds i64, ptr %counts, i64 %mi
  %ms0 = load i64, ptr %mc
{merge}  store i64 %ms{WAYS}, ptr %mc
  %mi1 = add nuw nsw i64 %mi, 1
  %mdone = icmp eq i64 %mi1, %bins
  br i1 %mdone, label %done, label %merge, !llvm.loop !102
done:
  ret void
}}
declare i32 @llvm.smin.i32(i32, i32)
declare i32 @llvm.smax.i32(i32, i32)
declare float @llvm.maxnum.f32(float, float)
declare float @llvm.minnum.f32(float, float)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
!100 = distinct !{{!100, !101}}
!101 = !{{!"llvm.loop.unroll.disable"}}
!102 = distinct !{{!102, !101, !103}}
!103 = !{{!"llvm.loop.vectorize.enable", i1 false}}
"""


def _bin_f64(s: str) -> str:
    """``counts[floor((float64(x) - lo) / width)] += 1``, indices clamped to the bins."""
    return _bin(f"bin_f64_{s}", _F[s], ", double %lo, double %width,\n                         ptr noalias nocapture "
                "%counts, i64 %bins",
                f"  %x = {_EXT[s]}\n  %d = fsub double %x, %lo\n  %y = fdiv double %d, %width\n"
                "  %fl = call double @llvm.floor.f64(double %y)\n  %k = fptosi double %fl to i64\n")


_P, _N = ctypes.c_void_p, ctypes.c_int64
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
#: the loops every histogram job runs, compiled at import (0.045-0.06 s of CPU on a loaded 2-core x86_64 AVX512)
_HOT = compile_ir([_minmax_keys(32), _bin_scan_f32()])
_keys32 = ctypes.CFUNCTYPE(None, _P, _N, ctypes.c_int32, ctypes.c_int32, _P)(
    _HOT.get_function_address("minmax_keys32"))
_bin_scan32 = ctypes.CFUNCTYPE(None, _P, _N, ctypes.c_float, ctypes.c_float, _P, _N, _N, _P, _P)(
    _HOT.get_function_address("bin_scan_f32"))
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
                                   "declare double @llvm.floor.f64(double)\n"])  # for both bin_f64 loops
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


# out[r * m + j] = (double(fq(x[j])) - double(x[j]))^2 on grid r: float32 x / scale[r], round half to even,
# + zp[r], clamped to [lo, hi], - zp[r], * scale[r] (numerics.int_squared_error's operations, in its order)
_GRID_SQ_ERRORS = """
define void @grid_sq_errors(ptr noalias nocapture readonly %x, i64 %m, ptr noalias nocapture readonly %scale,
                            ptr noalias nocapture readonly %zp, i64 %k, float %lo, float %hi,
                            ptr noalias nocapture %out) #0 {
entry:
  %empty = icmp eq i64 %m, 0
  %none = icmp eq i64 %k, 0
  %skip = or i1 %empty, %none
  br i1 %skip, label %exit, label %grid
grid:
  %r = phi i64 [ 0, %entry ], [ %r1, %gridend ]
  %sp = getelementptr inbounds float, ptr %scale, i64 %r
  %s = load float, ptr %sp
  %zq = getelementptr inbounds float, ptr %zp, i64 %r
  %z = load float, ptr %zq
  %base = mul nuw nsw i64 %r, %m
  %orow = getelementptr inbounds double, ptr %out, i64 %base
  br label %col
col:
  %j = phi i64 [ 0, %grid ], [ %j1, %col ]
  %q = getelementptr inbounds float, ptr %x, i64 %j
  %v = load float, ptr %q
  %t = fdiv float %v, %s
  %y = call float @llvm.roundeven.f32(float %t)
  %y1 = fadd float %y, %z
  %lt = fcmp olt float %y1, %lo
  %gt = fcmp ogt float %y1, %hi
  %y2 = select i1 %gt, float %hi, float %y1
  %y3 = select i1 %lt, float %lo, float %y2
  %y4 = fsub float %y3, %z
  %y5 = fmul float %y4, %s
  %d0 = fpext float %y5 to double
  %xd = fpext float %v to double
  %d = fsub double %d0, %xd
  %d2 = fmul double %d, %d
  %o = getelementptr inbounds double, ptr %orow, i64 %j
  store double %d2, ptr %o
  %j1 = add nuw nsw i64 %j, 1
  %cdone = icmp eq i64 %j1, %m
  br i1 %cdone, label %gridend, label %col
gridend:
  %r1 = add nuw nsw i64 %r, 1
  %rdone = icmp eq i64 %r1, %k
  br i1 %rdone, label %exit, label %grid
exit:
  ret void
}
declare float @llvm.roundeven.f32(float)
"""
_search: dict[str, object] = {}


def _grid_sq_errors_fn():
    """The MSE search's loop (:func:`grid_sq_errors`), compiled alone on first use (a few hundredths of a second
    of CPU; a job that never searches an MSE range does not pay for it)."""
    fn = _search.get("fn")
    if fn is None:
        with _rare_lock:
            fn = _search.get("fn")
            if fn is None:
                engine = compile_ir([_GRID_SQ_ERRORS])
                fn = ctypes.CFUNCTYPE(None, _P, _N, _P, _P, _N, ctypes.c_float, ctypes.c_float, _P)(
                    engine.get_function_address("grid_sq_errors"))
                _search["engine"], _search["fn"] = engine, fn
    return fn


_char_at, _address = ctypes.c_char.from_buffer, ctypes.addressof


def _ptr(a: np.ndarray) -> int:
    """Address of the first value of ``a`` (contiguous): through the buffer protocol, 0.3 us a call against
    1.2-1.3 us for ``a.ctypes.data`` / ``__array_interface__``; read-only or empty arrays take ``a.ctypes.data``."""
    try:
        return _address(_char_at(a))
    except (TypeError, ValueError):
        return a.ctypes.data


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
    """``counts[trunc((x - lo) * inv)] += 1`` in float32 arithmetic, indices clamped to the bins (``x`` finite)."""
    if x.size:
        bin_scan_f32(x, lo, inv, counts)


#: :func:`bin_scan_f32` counts into :data:`WAYS` int32 sub-histograms from this many values a bin (16 Ki values at
#: 2048 bins); below it zeroing and adding them up (about 2 us a call at 2048 bins) costs more than the chains of
#: repeated bins it saves on typical activations
SPLIT_PER_BIN = 8


def bin_scan_f32(x, lo, inv, counts, inc=1):
    """``counts[trunc((x - lo) * inv)] += inc`` (float32 arithmetic, clamped to the bins; NaN in bin 0, see
    :func:`_bin_scan_f32`) and, in the same pass, :func:`minmax_keys32` of ``x``'s bits: returns
    ``(kmin, kmax, amax)``. ``x``: float32, 1-D, contiguous, non-empty; ``counts``: int64, 1-D, contiguous, added
    to. The same counts whether they go through the :data:`WAYS` sub-histograms (:data:`SPLIT_PER_BIN`) or not."""
    out = np.empty(3, np.int32)
    n, bins, inc = x.size, counts.size, int(inc)
    sub = None  # counted straight into counts
    if n >= SPLIT_PER_BIN * bins and n * abs(inc) < 1 << 31:  # int32 sub-counts cannot overflow
        sub = np.empty(WAYS * bins, np.int32)  # held until the call returns
    _bin_scan32(_ptr(x), n, float(lo), float(inv), _ptr(counts), bins, inc, _ptr(out),
                None if sub is None else _ptr(sub))
    return int(out[0]), int(out[1]), int(out[2])


def bin_f64(x, lo, width, counts):
    """``counts[floor((float64(x) - lo) / width)] += 1``, indices clamped to the bins."""
    if x.size:
        _rare_fn(f"bin_f64_{_SUFFIX[x.dtype]}")(_ptr(x), x.size, float(lo), float(width), _ptr(counts), counts.size)


def grid_sq_errors(x, scale, zero_point, lo, hi):
    """:func:`~workbench.core.formats.numerics.int_squared_error` of points ``x`` (float32, 1-D, contiguous)
    on each grid ``scale[r]`` / ``zero_point[r]`` (float32, 1-D, contiguous, ``K`` each) of an integer type with
    bounds ``lo`` / ``hi``: float64 ``(K, x.size)``, the same bits (float32 division, round half to even, the
    zero point, saturation, the float32 product, then the float64 difference and square; no fused multiply-add).
    ``x`` is finite (a quotient beyond float32 saturates, as there)."""
    out = np.empty((scale.size, x.size), np.float64)
    _grid_sq_errors_fn()(_ptr(x), x.size, _ptr(scale), _ptr(zero_point), scale.size, float(np.float32(lo)),
                         float(np.float32(hi)), _ptr(out))
    return out
