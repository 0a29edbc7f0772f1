"""error_sums: the float64 sums of SQNR / MSE / cosine / max-abs error, chunk by chunk, against the whole-array
float64 formulas (the same sums to rounding of the float64 additions), with NaN / Inf pairs left out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.core.formats import error_sums as es
from workbench.core.formats.error_sums import CHUNK, error_sums, sqnr_sums
from workbench.core.formats.numerics import sqnr_db


def _whole(ref, approx):
    r = np.asarray(ref, np.float64).ravel()
    d = np.asarray(approx, np.float64).ravel()
    ok = np.isfinite(r) & np.isfinite(d)
    r, d = r[ok], d[ok]
    e = r - d
    return (float(np.sum(r * r)), float(np.sum(e * e)), float(np.sum(r * d)), float(np.sum(d * d)),
            float(np.max(np.abs(e))) if e.size else 0.0, int(r.size))


@pytest.mark.parametrize("size", [1, 7, CHUNK, CHUNK + 1, 3 * CHUNK + 123])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_sums_match_the_whole_array_formulas(size, dtype):
    rng = np.random.default_rng(size)
    ref = (rng.standard_normal(size) * 3).astype(dtype)
    approx = (ref.astype(np.float64) + rng.standard_normal(size) * 0.05).astype(dtype)
    got, want = error_sums(ref, approx), _whole(ref, approx)
    assert got[5] == want[5] == size
    assert got[4] == want[4]  # a max is exact
    assert got[:4] == pytest.approx(want[:4], rel=1e-12, abs=0)


def test_nonfinite_pairs_are_left_out_in_any_chunk():
    rng = np.random.default_rng(1)
    ref = rng.standard_normal(2 * CHUNK + 5).astype(np.float32)
    approx = ref + np.float32(0.01)
    ref[3], approx[CHUNK + 9], ref[2 * CHUNK + 1], approx[2 * CHUNK + 1] = np.nan, np.inf, -np.inf, np.nan
    got, want = error_sums(ref, approx), _whole(ref, approx)
    assert got[5] == want[5] == ref.size - 3
    assert got[4] == want[4]
    assert got[:4] == pytest.approx(want[:4], rel=1e-12)


def test_all_nonfinite_and_mismatched_shapes():
    assert error_sums(np.full(5, np.nan, np.float32), np.zeros(5, np.float32)) == (0.0, 0.0, 0.0, 0.0, 0.0, 0)
    assert error_sums(np.zeros(4, np.float32), np.zeros(5, np.float32)) is None
    assert error_sums(np.zeros(0, np.float32), np.zeros(0, np.float32)) is None


def test_huge_float64_values_sum_to_inf_as_a_whole_array_sum_does():
    ref = np.array([1e200, 1.0], np.float64)
    sig, err, _, _, _, n = error_sums(ref, ref)
    assert math.isinf(sig) and err == 0.0 and n == 2


def test_every_chunk_is_widened_into_three_reused_buffers(monkeypatch):
    """The point of the module: no float64 copy of the whole tensor (one was 4 x 32 MB per row on a
    ppocrv4_rec activation, each from fresh pages)."""
    x = np.random.default_rng(2).standard_normal(10 * CHUNK).astype(np.float32)
    y = x * np.float32(1.001)
    sizes = []
    real = np.empty
    monkeypatch.setattr(es.np, "empty", lambda n, *a, **k: sizes.append(n) or real(n, *a, **k))
    error_sums(x, y)
    assert sizes == [CHUNK] * 3


def _sqnr_whole(ref, approx) -> float:
    """sqnr_db as it was: both arrays widened to float64 whole."""
    r = np.asarray(ref, np.float64).ravel()
    e = r - np.asarray(approx, np.float64).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        p_sig, p_err = float(np.dot(r, r)), float(np.dot(e, e))
        return math.inf if p_err == 0 else -math.inf if p_sig == 0 else 10 * float(np.log10(p_sig / p_err))


@pytest.mark.parametrize("size", [1, 7, CHUNK + 1, 3 * CHUNK + 123])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_sqnr_db_sums_in_chunks_to_the_whole_array_figure(size, dtype):
    rng = np.random.default_rng(size)
    ref = (rng.standard_normal(size) * 3).astype(dtype)
    approx = (ref.astype(np.float64) + rng.standard_normal(size) * 0.05).astype(dtype)
    assert sqnr_db(ref, approx) == pytest.approx(_sqnr_whole(ref, approx), rel=1e-12, abs=0)
    assert sqnr_sums(ref, approx)[:2] == pytest.approx(error_sums(ref, approx)[:2], rel=1e-15)


def test_sqnr_db_keeps_what_the_whole_array_formula_gives_for_nonfinite_values_and_limits():
    ref = np.linspace(-1, 1, 2 * CHUNK, dtype=np.float32)
    for i, v in ((5, np.nan), (CHUNK + 1, np.inf)):
        bad = ref.copy()
        bad[i] = v
        for a, b in ((bad, ref), (ref, bad)):
            want, got = _sqnr_whole(a, b), sqnr_db(a, b)
            assert got == want or (math.isnan(got) and math.isnan(want))
    assert sqnr_db(ref, ref) == math.inf and sqnr_db(np.zeros(3), np.ones(3)) == -math.inf
    assert sqnr_db(np.zeros(0), np.zeros(0)) == math.inf  # nothing to compare: no error


def test_sqnr_db_widens_no_whole_array():
    """It widened both arrays and their difference to float64 whole (3 x 32 MB for these 4e6 values)."""
    import tracemalloc

    x = np.random.default_rng(3).standard_normal(4_000_000).astype(np.float32)
    y = x * np.float32(1.001)
    tracemalloc.start()
    try:
        got = sqnr_db(x, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20 and got == pytest.approx(_sqnr_whole(x, y), rel=1e-12)
