"""Compiled loops behind bias correction's input means (:mod:`workbench.core.transforms.bias_correction`,
imported on first use from there, so ``import workbench.core`` does not pay for them).

LLVM IR compiled for this CPU with llvmlite when this module is imported (0.03-0.04 s of CPU, plus
llvmlite's import when the observers' loops did not load it), as the observers' loops are
(:mod:`workbench.core.calibration.observers._llvm`); called through :mod:`ctypes`, which releases the GIL.
Each loop reads a slice of rows once and adds it into a float64 sum with the arithmetic of the numpy code it
replaces, element by element in the same order, so the sums are the same bits: :func:`add_rows` is
``part += row`` row after row (float32 -> float64, then one add); :func:`add_rounded` is ``_Table.sum_rows``
(QuantizeLinear's float32 division and round half to even, the saturation, NaN to the grid's minimum,
DequantizeLinear's float32 product) added into the sum, whose float64 adds are exact on such a grid in any
order. No fast-math flags: LLVM keeps every add of one sum in row order (it vectorizes across columns only)
and fuses no multiply into an add.

Arrays: ``x`` float32 ``(rows, m)`` and ``part`` float64 ``(m,)``, both C-contiguous (ValueError otherwise).
"""

from __future__ import annotations

import ctypes

import numpy as np

from workbench.core.formats.llvm_jit import compile_ir


def _row_sums(name: str, params: str, value: str, tail: str = "") -> str:
    """The IR of one loop shape: ``name(x, rows, m, part, <params>)`` adds, for ``r`` in ``0 .. rows - 1`` and
    ``j`` in ``0 .. m - 1`` in that order, the double ``%d`` that the lines ``value`` compute from the float
    ``%v = x[r * m + j]`` into ``part[j]``; ``params``: the text after ``%part`` in the parameter list, ``tail``:
    text after the function (intrinsic declarations)."""
    return f"""
define void @{name}(ptr noalias nocapture readonly %x, i64 %rows, i64 %m, ptr noalias nocapture %part{params}) #0 {{
entry:
  %empty = icmp eq i64 %m, 0
  %none = icmp eq i64 %rows, 0
  %skip = or i1 %empty, %none
  br i1 %skip, label %exit, label %row
row:
  %r = phi i64 [ 0, %entry ], [ %r1, %rowend ]
  %base = mul nuw nsw i64 %r, %m
  %xr = getelementptr inbounds float, ptr %x, i64 %base
  br label %col
col:
  %j = phi i64 [ 0, %row ], [ %j1, %col ]
  %q = getelementptr inbounds float, ptr %xr, i64 %j
  %v = load float, ptr %q
{value}  %p = getelementptr inbounds double, ptr %part, i64 %j
  %old = load double, ptr %p
  %new = fadd double %old, %d
  store double %new, ptr %p
  %j1 = add nuw nsw i64 %j, 1
  %cdone = icmp eq i64 %j1, %m
  br i1 %cdone, label %rowend, label %col
rowend:
  %r1 = add nuw nsw i64 %r, 1
  %rdone = icmp eq i64 %r1, %rows
  br i1 %rdone, label %exit, label %row
exit:
  ret void
}}
{tail}"""


# part[j] += double(x[r, j])
_ADD_ROWS = _row_sums("add_rows", "", "  %d = fpext float %v to double\n")

# part[j] += double(y * scale), y = roundeven(x[r, j] / scale) clamped to [lo, hi] (NaN -> nan)
_ADD_ROUNDED = _row_sums(
    "add_rounded", ",\n                         float %scale, float %lo, float %hi, float %nan",
    "  %t = fdiv float %v, %scale\n  %y = call float @llvm.roundeven.f32(float %t)\n"
    "  %lt = fcmp olt float %y, %lo\n  %gt = fcmp ogt float %y, %hi\n  %isnan = fcmp uno float %y, 0.0\n"
    "  %y1 = select i1 %isnan, float %nan, float %y\n  %y2 = select i1 %gt, float %hi, float %y1\n"
    "  %y3 = select i1 %lt, float %lo, float %y2\n  %s = fmul float %y3, %scale\n  %d = fpext float %s to double\n",
    tail="declare float @llvm.roundeven.f32(float)\n")


_P, _N, _F = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float
_ENGINE = compile_ir([_ADD_ROWS, _ADD_ROUNDED])
_add_rows = ctypes.CFUNCTYPE(None, _P, _N, _N, _P)(_ENGINE.get_function_address("add_rows"))
_add_rounded = ctypes.CFUNCTYPE(None, _P, _N, _N, _P, _F, _F, _F, _F)(_ENGINE.get_function_address("add_rounded"))


def _args(x: np.ndarray, part: np.ndarray) -> tuple[int, int, int, int]:
    """Pointers and sizes of ``x`` / ``part`` after checking their dtypes, shapes and layouts."""
    if (x.dtype != np.float32 or part.dtype != np.float64 or x.ndim != 2 or part.shape != (x.shape[1],)
            or not x.flags.c_contiguous or not part.flags.c_contiguous or not part.flags.writeable):
        raise ValueError(f"add_rows / add_rounded take float32 (rows, m) and a writable float64 (m,), both "
                         f"C-contiguous; got {x.dtype} {x.shape} and {part.dtype} {part.shape}")
    return x.__array_interface__["data"][0], x.shape[0], x.shape[1], part.__array_interface__["data"][0]


def add_rows(x: np.ndarray, part: np.ndarray) -> None:
    """``part[j] += x[r, j]`` for every row ``r`` in order; ``x``: float32 ``(rows, m)``, ``part``: float64 ``(m,)``."""
    _add_rows(*_args(x, part))


def add_rounded(x: np.ndarray, part: np.ndarray, scale, lo, hi, nan) -> None:
    """``part[j] += ((clip(rint(x[r, j] / scale), lo, hi)) * scale`` for every row, a NaN rounding to ``nan``
    (float32 arithmetic; ``lo`` / ``hi`` / ``nan``: the grid's bounds and NaN value less its zero point)."""
    _add_rounded(*_args(x, part), float(np.float32(scale)), float(np.float32(lo)), float(np.float32(hi)),
                 float(np.float32(nan)))
