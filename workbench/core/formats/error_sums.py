"""The sums behind SQNR, MSE, cosine and max-abs error of an approximation, in float64, in cache-sized chunks.

For ``ref`` and ``approx`` of the same shape, over the element pairs where both are finite:

    sig = sum(ref^2), err = sum((ref - approx)^2), dot = sum(ref * approx), q2 = sum(approx^2),
    maxabs = max |ref - approx|, n = the number of pairs summed.

Why chunks: widening whole activations to float64 allocated four arrays of up to tens of MB per tensor
and row; each came from fresh pages (page faults cost 10-20x the arithmetic on the benchmark VM) and
numpy's BLAS split each long dot product over threads that fought the job's own threads. Chunks of
:data:`CHUNK` elements are widened into three reused buffers that stay in the L2 cache, and a dot
product of that length runs on the calling thread (x86_64 AVX512-VNNI, 2 cores, 4e6-element float32
pair: 10-166 ns a value whole against 2-3 ns a value in chunks, the same sums to about 1e-13
relative: only the order of the float64 additions differs).

Pure numpy; never imports Qt.
"""

from __future__ import annotations

import math

import numpy as np

#: elements widened at a time: 3 float64 buffers of 64 KiB (below OpenBLAS's threading threshold for a dot
#: product, and inside a 2 MiB L2 cache)
CHUNK = 8192


def error_sums(ref: np.ndarray, approx: np.ndarray) -> tuple[float, float, float, float, float, int] | None:
    """``(sig, err, dot, q2, maxabs, n)`` of ``ref`` against ``approx`` (see the module docstring).

    Parameters
    ----------
    ref, approx : numpy.ndarray
        Any real dtype and any shape, the same number of elements in both (compared element by element in C
        order; a [2, 3] and a [3, 2] array pair up as two 6-value vectors).

    Returns
    -------
    tuple of (float, float, float, float, float, int), or None
        The float64 sums; None when the sizes differ or both are empty. Pairs where either value is
        NaN or +-Inf are left out (``n`` counts the pairs summed; all left out gives zeros and ``n`` 0).
    """
    return _summed(ref, approx, _chunk)


def sqnr_sums(ref: np.ndarray, approx: np.ndarray) -> tuple[float, float, float, float, float, int] | None:
    """:func:`error_sums` with only what an SQNR needs: ``sig``, ``err`` and ``n``, the other three 0.0 (two dot
    products a chunk instead of four, and no max)."""
    return _summed(ref, approx, _sqnr_chunk)


def _summed(ref: np.ndarray, approx: np.ndarray, chunk) -> tuple[float, float, float, float, float, int] | None:
    """The sums of ``chunk`` (:func:`_chunk` or :func:`_sqnr_chunk`) over the chunks of ``ref`` and ``approx``."""
    r = np.ravel(ref)
    d = np.ravel(approx)
    if r.size == 0 or r.shape != d.shape:
        return None
    size = min(CHUNK, r.size)
    a, b, e = np.empty(size), np.empty(size), np.empty(size)
    sig = err = dot = q2 = maxabs = 0.0
    n = 0
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, r.size, size):
            k = min(size, r.size - start)
            aa, bb, ee = a[:k], b[:k], e[:k]
            aa[...] = r[start:start + k]
            bb[...] = d[start:start + k]
            part = chunk(aa, bb, ee)
            if part is None:  # a NaN or Inf in the chunk: only its finite pairs
                ok = np.isfinite(aa) & np.isfinite(bb)
                part = chunk(aa[ok], bb[ok], ee[:int(ok.sum())], check=False) if ok.any() else (0.0,) * 5 + (0,)
            sig += part[0]
            err += part[1]
            dot += part[2]
            q2 += part[3]
            maxabs = max(maxabs, part[4])
            n += part[5]
    return sig, err, dot, q2, maxabs, n


def _chunk(a: np.ndarray, b: np.ndarray, e: np.ndarray, *,
           check: bool = True) -> tuple[float, float, float, float, float, int] | None:
    """The sums of one chunk (float64 ``a``, ``b``; ``e`` a buffer of their length); with ``check``, None when
    one is not finite (a NaN or Inf among the values, or float64 values whose squares overflow, which the
    finite pairs then sum to Inf as a whole-array sum would)."""
    np.subtract(a, b, out=e)
    sums = (float(np.dot(a, a)), float(np.dot(e, e)), float(np.dot(a, b)), float(np.dot(b, b)))
    if check and not math.isfinite(sums[0] + sums[1] + sums[2] + sums[3]):  # NaN and Inf carry into the sum
        return None
    np.abs(e, out=e)
    return (*sums, float(e.max()), a.size)


def _sqnr_chunk(a: np.ndarray, b: np.ndarray, e: np.ndarray, *,
                check: bool = True) -> tuple[float, float, float, float, float, int] | None:
    """:func:`_chunk` with ``sig`` and ``err`` only (a NaN or Inf of ``b`` carries into ``err``)."""
    np.subtract(a, b, out=e)
    sig, err = float(np.dot(a, a)), float(np.dot(e, e))
    if check and not math.isfinite(sig + err):
        return None
    return sig, err, 0.0, 0.0, 0.0, a.size
