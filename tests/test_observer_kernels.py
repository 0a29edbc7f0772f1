"""The compiled loops of the observers (llvmlite) give exactly the state of the numpy code."""

from __future__ import annotations

import json
import subprocess
import sys

import llvmlite  # noqa: F401 - a dependency: missing it is an error, not a skip
import numpy as np
import pytest

from workbench.core.calibration.observers import StreamingHistogram, kernels, make_observer
from workbench.core.recipe.spec import QuantSpec

OBSERVERS = ("minmax", "percentile", "entropy", "mse")


@pytest.fixture
def numpy_path(monkeypatch):
    """Context switcher: ``numpy_path(True)`` forces the numpy code, ``False`` the kernels."""
    monkeypatch.setattr(kernels, "MIN_SIZE", 1)  # small test arrays take the kernels too

    def use(flag: bool):
        monkeypatch.setattr(kernels, "ENABLED", not flag)
    yield use
    monkeypatch.setattr(kernels, "ENABLED", None)


def _stream(seed: int) -> list[np.ndarray]:
    """Batches with NaN / +-Inf, empty and all-NaN batches, float16 / float64, a growing range,
    values exactly on bin edges and tiny (deferred) batches."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(14):
        n = int(rng.integers(1, 9000)) if i % 3 else int(rng.integers(1, 60))
        x = (rng.standard_t(3, n) * (1 + 0.5 * i)).astype(np.float32)
        if i == 2:
            x[rng.integers(0, n, 3)] = np.nan
        if i == 4:
            x[:2] = [np.inf, -np.inf][: min(2, n)]
        if i == 6:
            x = np.round(x * 4) / 4  # many values on exact edges of coarse grids
        out.append(x)
    out.insert(3, np.zeros(0, np.float32))
    out.insert(5, np.full(7, np.nan, np.float32))
    out.append(np.maximum(rng.standard_normal((2, 3, 50, 50)), 0).astype(np.float16))
    out.append(rng.standard_normal(5000) * 1e3)  # float64
    out.append(np.array([0.0, -0.0, 5.0], np.float32))
    return out


def _run(observer: str, batches, spec_kw=None, axis=None, numpy_path=None, use_numpy=False):
    numpy_path(use_numpy)
    if not use_numpy:  # loaded up front, as a histogram observer of the job does (MinMax only uses loaded kernels)
        assert kernels.get() is not None
    obs = make_observer(QuantSpec(observer=observer, **(spec_kw or {})), axis=axis, name="t")
    for b in batches:
        obs.update(b)
    state = obs.state()
    rng = obs.compute_range()
    assert (kernels.get() is None) == use_numpy  # the path under test really ran
    return state, (float(np.ravel(rng[0])[0]), float(np.ravel(rng[1])[0]))


@pytest.mark.parametrize("observer", OBSERVERS)
@pytest.mark.parametrize("seed", [0, 1])
def test_kernels_and_numpy_give_identical_state(observer, seed, numpy_path):
    batches = _stream(seed)
    fast = _run(observer, batches, numpy_path=numpy_path)
    slow = _run(observer, batches, numpy_path=numpy_path, use_numpy=True)
    assert fast == slow
    assert fast[0]["nonfinite"] == 3 + 2 + 7 and fast[0]["count"] > 50000


@pytest.mark.parametrize("observer", ["minmax", "percentile"])
def test_per_channel_identical(observer, numpy_path):
    rng = np.random.default_rng(5)
    batches = [rng.standard_normal((3, 4, 20)).astype(np.float32) * (i + 1) for i in range(4)]
    batches[1][2, 1, 3] = np.nan
    kw = {"granularity": "per_channel", "axis": 1}
    assert (_run(observer, batches, kw, axis=1, numpy_path=numpy_path)
            == _run(observer, batches, kw, axis=1, numpy_path=numpy_path, use_numpy=True))


def test_far_from_zero_range_uses_float64_path_identically(numpy_path):
    """A range far from zero disables the float32 index (``_fast is None``); both paths agree."""
    rng = np.random.default_rng(7)
    batches = [1000.1234567 + rng.standard_normal(4000) * 1e-3]  # float64: lo is no float32
    batches += [(1000.1234567 + rng.standard_normal(4000) * 1e-3).astype(np.float32) for _ in range(3)]
    for obs in ("percentile", "entropy"):
        assert (_run(obs, batches, numpy_path=numpy_path)
                == _run(obs, batches, numpy_path=numpy_path, use_numpy=True))
    h = StreamingHistogram(64)
    h.add(batches[0], float(batches[0].min()), float(batches[0].max()))
    assert h._fast is None and h.total == 4000


def test_bin_index_matches_numpy_float32_arithmetic_on_edges(numpy_path):
    """Values at and next to every bin edge, and the range's top, land in the same bins."""
    h_np, h_k = StreamingHistogram(97), StreamingHistogram(97)
    lo, hi = -1.3, 2.7
    for h in (h_np, h_k):
        h._init_range(lo, hi)
    edges = h_np.edges.astype(np.float32)
    vals = np.concatenate([edges, np.nextafter(edges, np.float32(-np.inf)),
                           np.nextafter(edges, np.float32(np.inf))])
    vals = np.clip(vals, np.float32(lo), np.float32(hi)).astype(np.float32)
    mn, mx = float(vals.min()), float(vals.max())
    numpy_path(True)
    h_np.add(vals, mn, mx)
    numpy_path(False)
    h_k.add(vals, mn, mx)
    assert h_k.counts.tolist() == h_np.counts.tolist() and h_k.total == vals.size


def test_scan_counts_nonfinite_and_matches_numpy():
    k = kernels.get()
    assert k is not None
    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(1001).astype(dtype)
        assert kernels.scan(k, x) == (float(x.min()), float(x.max()), 0)
        x[[3, 500, 1000]] = [np.nan, np.inf, -np.inf]
        fin = x[np.isfinite(x)]
        assert kernels.scan(k, x) == (float(fin.min()), float(fin.max()), 3)
        assert kernels.scan(k, np.full(4, np.nan, dtype))[2] == 4


def test_loops_sign_of_zero_clamping_and_empty_arrays():
    """The compiled loops on their edge cases: -0.0 orders below +0.0 in the keys, indices outside the bins
    are clamped to the first / last bin in both binning loops, empty arrays count nothing."""
    k = kernels.get()
    assert k is not None
    z = np.array([0.0, -0.0, 0.0], np.float32)
    assert kernels.scan(k, z) == (0.0, 0.0, 0)
    assert [str(v) for v in kernels.scan(k, z)[:2]] == ["-0.0", "0.0"]
    x = np.array([-5.0, -1.0, 0.0, 0.49, 0.5, 3.99, 4.0, 100.0], np.float32)
    counts = np.zeros(4, np.int64)
    k.bin_f32(x, np.float32(0.0), np.float32(1.0), counts)
    assert counts.tolist() == [5, 0, 0, 3]  # -5 and -1 clamped to 0, 0 .. 0.5 truncated to 0, 3.99 -> 3, 4 and 100 clamped
    counts[:] = 0
    k.bin_f64(x.astype(np.float64), -1.0, 0.5, counts)  # floor((x + 1) / 0.5): -5 -> -8 clamped to 0, -1 -> 0,
    assert counts.tolist() == [2, 0, 2, 4]  # 0 and 0.49 -> 2, 0.5 -> 3, the rest clamped to 3
    empty = np.zeros(0, np.float32)
    assert k.count_nonfinite(empty) == 0 and k.finite_minmax(empty) == (np.inf, -np.inf)
    k.bin_f32(empty, np.float32(0.0), np.float32(1.0), counts)
    assert counts.sum() == 8


def test_bin_f32_blocks_count_every_value_once():
    """bin_f32 works in blocks of BIN_BLOCK values (indices first, then counts): sizes at and next to the block
    boundaries count each value once, in the bin numpy's float32 arithmetic gives, clamped to the bins."""
    from workbench.core.calibration.observers._llvm import BIN_BLOCK

    k = kernels.get()
    assert k is not None
    rng = np.random.default_rng(11)
    lo, inv, bins = np.float32(-2.5), np.float32(7.3), 37
    for n in (1, BIN_BLOCK - 1, BIN_BLOCK, BIN_BLOCK + 1, 3 * BIN_BLOCK + 5):
        x = (rng.standard_normal(n) * 2).astype(np.float32)  # some values below lo and past the last bin
        want = np.bincount(np.clip(((x - lo) * inv).astype(np.int64), 0, bins - 1), minlength=bins)
        counts = np.full(bins, 3, np.int64)  # added to, not overwritten
        k.bin_f32(x, lo, inv, counts)
        assert (counts - 3).tolist() == want.tolist() and counts.sum() == 3 * bins + n


def test_bin_scan_f32_is_scan_plus_bin_and_undoes_itself():
    """bin_scan_f32 gives minmax_keys32's keys and bin_f32's counts in one pass at sizes next to the block
    boundaries, and a second call with inc -1 takes exactly the same counts out again, also for NaN, +-Inf and
    values whose float32 index overflows (they land in the first / last bin, repeatably)."""
    from workbench.core.calibration.observers._llvm import BIN_BLOCK

    k = kernels.get()
    assert k is not None
    rng = np.random.default_rng(12)
    lo, inv, bins = np.float32(-2.5), np.float32(7.3), 37
    absmask, shift = np.int32(0x7FFFFFFF), np.int32(31)
    for n in (1, BIN_BLOCK - 1, BIN_BLOCK, BIN_BLOCK + 1, 3 * BIN_BLOCK + 5):
        x = (rng.standard_normal(n) * 2).astype(np.float32)
        want = np.full(bins, 3, np.int64)
        k.bin_f32(x, lo, inv, want)
        counts = np.full(bins, 3, np.int64)
        assert k.bin_scan_f32(x, lo, inv, counts) == k.minmax_keys32(x.view(np.int32), absmask, shift)
        assert counts.tolist() == want.tolist()
        bad = x.copy()
        bad[[0, n // 2, n - 1]] = [np.nan, np.inf, -np.inf]
        if n > 3:
            bad[1:3] = [np.float32(3e38), np.float32(-3e38)]
        keys = k.bin_scan_f32(bad, lo, inv, counts)
        assert keys == k.minmax_keys32(bad.view(np.int32), absmask, shift) and keys[2] >= kernels.EXPONENT_F32
        assert counts.sum() == 3 * bins + 2 * n
        k.bin_scan_f32(bad, lo, inv, counts, -1)
        assert counts.tolist() == want.tolist()
    z = np.array([0.0, -0.0, 0.0], np.float32)
    kmin, kmax, _ = k.bin_scan_f32(z, np.float32(0.0), np.float32(1.0), np.zeros(4, np.int64))
    assert [str(v) for v in kernels.key_floats(kmin, kmax, np.float32)] == ["-0.0", "0.0"]


def _histogram_stream(seed: int) -> list[np.ndarray]:
    """Large float32 batches (the one-pass path's size) around the bins of the first one: inside them, with NaN /
    +-Inf at block edges, past either end (growth), exactly on the extremes, signed zeros, all-NaN; small,
    float16 and float64 batches between them."""
    from workbench.core.calibration.observers._llvm import BIN_BLOCK

    rng = np.random.default_rng(seed)
    first = (rng.standard_normal(6000) * 2).astype(np.float32)
    lo, hi = float(first.min()), float(first.max())
    out = [first]
    for n in (4096, 4097, 5 * BIN_BLOCK - 1, 5 * BIN_BLOCK, 5 * BIN_BLOCK + 1, 9000):
        out.append(np.clip(rng.standard_normal(n), lo, hi).astype(np.float32))
    x = np.clip(rng.standard_normal(5 * BIN_BLOCK), lo, hi).astype(np.float32)
    x[[BIN_BLOCK - 1, BIN_BLOCK, 3 * BIN_BLOCK]] = [np.nan, np.inf, -np.inf]
    out.append(x)
    out.append(np.full(4096, np.nan, np.float32))
    y = np.clip(rng.standard_normal(4500), lo, hi).astype(np.float32)
    y[[0, -1]] = [lo, hi]  # exactly the extremes: still inside
    out.append(y)
    out.append(np.concatenate([y, [np.float32(hi * 3)]]))  # past the top: the bins grow
    out.append(np.concatenate([y, [np.float32(lo * 5 - 1)]]))  # below bin 0
    out.append(np.zeros(3, np.float32))  # buffered: the next large batches take the usual path, which flushes it
    out.append(np.full(4096, np.nan, np.float32))  # (not this one: all NaN, it leaves the buffer as it is)
    zeros = np.zeros(4096, np.float32)
    zeros[7] = -0.0
    out.append(zeros)
    out.append(zeros[::-1].copy())  # the buffer is empty again: one pass, -0.0 and +0.0 as the extremes
    out.append(np.clip(rng.standard_normal(4096), lo, hi).astype(np.float16))
    out.append(np.clip(rng.standard_normal(4096), lo, hi).astype(np.float64))
    out.append((rng.standard_normal((3, 40, 50)) * 4).astype(np.float32))  # 6000 values, 3-D
    return out


@pytest.mark.parametrize("observer", ["percentile", "mse", "entropy"])
@pytest.mark.parametrize("seed", [0, 1])
def test_one_pass_histogram_batches_give_the_scan_then_bin_state(observer, seed, monkeypatch, numpy_path):
    """Histogram observers bin a large float32 batch that the bins already cover in one pass (add_inside); the
    state, range and counts are those of scanning it first and then binning it (the path before), and of the
    numpy code, whether the batch is inside, holds NaN / Inf, grows the bins or is all NaN."""
    from workbench.core.calibration.observers import histogram

    batches = _histogram_stream(seed)
    taken = []
    add_inside = histogram.StreamingHistogram.add_inside

    def counted(self, k, values):
        took = add_inside(self, k, values)
        taken.append(took)
        return took

    monkeypatch.setattr(histogram.StreamingHistogram, "add_inside", counted)
    one_pass = _run(observer, batches, numpy_path=numpy_path)
    # the first batch (no bins yet), then one pass for the 6 batches inside; the usual path for NaN / Inf and all
    # NaN; one pass for the extremes; the usual path for growth past either end; the batches after the buffered one
    # and the float16 / 64 ones never try; one pass for the reversed zeros and the 3-D batch
    assert taken == [False] + [True] * 6 + [False, False, True, False, False, True, True], taken
    monkeypatch.setattr(histogram.HistogramObserver, "_add_at_once", lambda self, x: False)
    scan_then_bin = _run(observer, batches, numpy_path=numpy_path)
    numpy_state = _run(observer, batches, numpy_path=numpy_path, use_numpy=True)
    assert json.dumps(one_pass) == json.dumps(scan_then_bin) == json.dumps(numpy_state)
    assert one_pass[0]["nonfinite"] == 3 + 2 * 4096 and one_pass[0]["count"] == sum(b.size for b in batches) - 3 - 2 * 4096


def test_llvmlite_import_failure_falls_back_to_numpy_with_one_warning(monkeypatch, caplog):
    import sys

    monkeypatch.setitem(sys.modules, "workbench.core.calibration.observers._llvm", None)  # import raises ImportError
    monkeypatch.setattr(kernels, "_impl", None)
    monkeypatch.setattr(kernels, "ENABLED", None)
    x = np.random.default_rng(4).standard_normal(1 << 16).astype(np.float32)
    with caplog.at_level("WARNING", logger="workbench.core.calibration.observers.kernels"):
        obs = make_observer(QuantSpec(observer="percentile"))
        obs.update(x)
        obs.update(x * 2)
        assert kernels.get() is None
    assert len([r for r in caplog.records if "compiled observer loops are not usable" in r.getMessage()]) == 1
    assert obs.count == 2 * x.size and obs.hists[0].total == 2 * x.size
    monkeypatch.setattr(kernels, "ENABLED", None)


def test_small_arrays_stay_on_numpy():
    assert not kernels.usable(np.zeros(kernels.MIN_SIZE - 1, np.float32))
    assert kernels.usable(np.zeros(kernels.MIN_SIZE, np.float32))
    assert not kernels.usable(np.zeros(kernels.MIN_SIZE, np.float16))
    assert not kernels.usable(np.zeros((2, kernels.MIN_SIZE), np.float32)[:, 0])


def test_minmax_alone_never_loads_the_compiled_loops():
    """A MinMax-only job keeps to numpy (no llvmlite import, no compile) and gets the kernels' range."""
    x = "(np.arange(1 << 16, dtype=np.float32) - 7.5) * np.float32(0.25)"
    code = ("import json, sys, numpy as np; from workbench.core.calibration.observers import make_observer; "
            "from workbench.core.recipe.spec import QuantSpec; o = make_observer(QuantSpec(observer='minmax')); "
            f"o.update({x}); o.update({x} * np.float32(-2)); lo, hi = o.compute_range(); "
            "print(json.dumps([float(np.ravel(lo)[0]), float(np.ravel(hi)[0]), 'numba' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lo, hi, imported = json.loads(out.stdout)
    assert imported is False
    k = kernels.get()
    big = (np.arange(1 << 16, dtype=np.float32) - 7.5) * np.float32(0.25)
    want = [kernels.scan(k, v) for v in (big, big * np.float32(-2))]
    assert (lo, hi) == (min(w[0] for w in want), max(w[1] for w in want)) == (-32763.75, 16381.875)


def test_key_floats_float32_matches_the_numpy_round_trip():
    """key_floats reads float32 order keys with int arithmetic and struct: the same values, bit for bit, as
    the numpy round trip (signed zeros, subnormals, the float32 extremes, every exponent)."""
    rng = np.random.default_rng(11)
    bits = rng.integers(-(2**31), 2**31, 20000, dtype=np.int64).astype(np.int32)
    x = bits.view(np.float32)
    x = np.concatenate([x[np.isfinite(x)], np.float32([0.0, -0.0, 1e-45, -1e-45, 3.4028235e38, -3.4028235e38])])
    b = x.view(np.int32)
    keys = (b ^ ((b >> np.int32(31)) & np.int32(0x7FFFFFFF)))[: x.size // 2 * 2]
    got = [kernels.key_floats(int(a), int(c), np.dtype(np.float32)) for a, c in zip(keys[::2], keys[1::2], strict=True)]
    want = (keys ^ ((keys >> np.int32(31)) & np.int32(0x7FFFFFFF))).view(np.float32).astype(np.float64)
    assert np.array(got).reshape(-1).tobytes() == want.tobytes()


@pytest.mark.parametrize("observer", ["percentile", "entropy", "mse"])
def test_loaded_kernels_bin_small_batches_with_the_numpy_state(observer, monkeypatch):
    """Once loaded, the compiled loops also take batches under MIN_SIZE values (ppocrv4_rec at batch 1: 52 of its
    87 tensors), in one pass when the bins cover them; the state is the numpy code's, buffered batches included.
    Not yet loaded, small batches never load them."""
    from workbench.core.calibration.observers import histogram

    rng = np.random.default_rng(3)
    batches = [(rng.standard_normal(n) * (1 + 0.2 * i)).astype(np.float32)
               for i, n in enumerate([6000, 5000, 300, 7000, 20000, 40, 9000, 31000])]
    batches[1] = np.clip(batches[1], -1, 1)  # inside the first batch's bins
    batches.append(np.clip(batches[0] * 0.5, -1, 1).reshape(2, 3000))  # inside, 2-D
    taken = []
    add_inside = histogram.StreamingHistogram.add_inside

    def counted(self, k, values):
        took = add_inside(self, k, values)
        taken.append((values.size, took))
        return took

    def run(enabled: bool) -> str:
        monkeypatch.setattr(kernels, "ENABLED", enabled)
        obs = make_observer(QuantSpec(observer=observer), name="t")
        for b in batches:
            obs.update(b)
        return json.dumps([obs.state(), [float(v) for v in obs.compute_range()]])

    assert kernels.get() is not None
    monkeypatch.setattr(histogram.StreamingHistogram, "add_inside", counted)
    fast = run(True)
    # the first batch sets the bins; one pass inside them; the 300 and 40 values are buffered and the batch after
    # each takes the usual path (it flushes them); wider batches grow the bins (the usual path)
    assert taken == [(6000, False), (5000, True), (20000, False), (31000, False), (6000, True)], taken
    assert fast == run(False)
    monkeypatch.setattr(kernels, "ENABLED", None)
    monkeypatch.setattr(kernels, "_impl", None)
    assert kernels.for_array(np.zeros(100, np.float32)) is None and kernels._impl is None  # not loaded by a small one


def _numpy_bins(x: np.ndarray, lo: np.float32, inv: np.float32, bins: int) -> np.ndarray:
    """np.bincount of bin_scan_f32's indices: ``(x - lo) * inv`` in float32, NaN to 0, clamped to the bins in
    float32, then truncated."""
    y = (x - lo) * inv
    y = np.clip(np.where(np.isnan(y), np.float32(0), y), np.float32(0), np.float32(bins - 1))
    return np.bincount(y.astype(np.int64), minlength=bins)


@pytest.mark.parametrize("split", [True, False])
def test_bin_scan_f32_counts_match_numpy_with_and_without_sub_histograms(split, monkeypatch):
    """bin_scan_f32 counts runs of one bin into _llvm.WAYS int32 sub-histograms added up at the end (from
    SPLIT_PER_BIN values a bin) or straight into counts: either way the counts are np.bincount of the float32
    indices, for long runs of one bin, many distinct bins, NaN / +-Inf and sizes that are not a multiple of WAYS
    or of BIN_BLOCK; inc -1 takes them out again; the keys are minmax_keys32's."""
    from workbench.core.calibration.observers import _llvm

    k = kernels.get()
    assert k is _llvm
    monkeypatch.setattr(_llvm, "SPLIT_PER_BIN", 0 if split else 1 << 40)
    taken = {"split": 0, "one": 0}
    loop = _llvm._bin_scan32

    def spy(*args):  # the last argument: the sub-histograms' address, or None
        taken["one" if args[-1] is None else "split"] += 1
        return loop(*args)
    monkeypatch.setattr(_llvm, "_bin_scan32", spy)
    rng = np.random.default_rng(13)
    lo, inv, bins = np.float32(-2.5), np.float32(7.3), 37
    absmask, shift = np.int32(0x7FFFFFFF), np.int32(31)
    calls = 0
    for n in (1, 2, 3, 5, 1023, 1024, 1025, 4097):
        normal = (rng.standard_normal(n) * 2).astype(np.float32)  # many distinct bins, some clamped
        runs = np.repeat(np.float32([0.0, -9.0, 1.3]), [n // 2, n // 4, n - n // 2 - n // 4])  # -9.0: clamped to 0
        spiky = np.where(rng.random(n) < 0.6, np.float32(0), normal)  # post-Relu like: most values in one bin
        spiky[rng.integers(0, n, max(1, n // 100))] = np.nan
        spiky[[0, -1]] = [np.inf, -np.inf]  # to the last / first bin
        for x in (normal, runs, spiky, np.full(n, np.nan, np.float32)):
            counts = np.full(bins, 3, np.int64)  # added to, not overwritten
            keys = k.bin_scan_f32(x, lo, inv, counts)
            assert (counts - 3).tolist() == _numpy_bins(x, lo, inv, bins).tolist()
            assert keys == k.minmax_keys32(x.view(np.int32), absmask, shift)
            k.bin_scan_f32(x, lo, inv, counts, -1)
            assert counts.tolist() == [3] * bins
            calls += 2
    assert taken == ({"split": calls, "one": 0} if split else {"split": 0, "one": calls})


def test_bin_scan_f32_sub_counts_never_overflow_int32(monkeypatch):
    """The int32 sub-histograms are used only while a sub-count stays below 2**31: a large ``inc`` (each value
    adding 2**29, 2**33 in all) is counted straight into the int64 counts, exactly; a read-only array is read too."""
    from workbench.core.calibration.observers import _llvm

    monkeypatch.setattr(_llvm, "SPLIT_PER_BIN", 0)
    x = np.zeros(16, np.float32)
    x.flags.writeable = False
    counts = np.zeros(2, np.int64)
    _llvm.bin_scan_f32(x, np.float32(0), np.float32(1), counts, 1 << 29)
    assert counts.tolist() == [16 << 29, 0]
    _llvm.bin_scan_f32(x[:3], np.float32(0), np.float32(1), counts, -(1 << 29))
    assert counts.tolist() == [13 << 29, 0]
