"""Observers checked against numpy on the concatenated calibration data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from workbench.core.calibration.observers import OBSERVERS, Observer, StreamingHistogram, make_observer
from workbench.core.errors import CalibrationError, RecipeError
from workbench.core.formats.numerics import compute_qparams, fake_quantize
from workbench.core.recipe.spec import QuantSpec

HIST = ("percentile", "entropy", "mse")


def _batches(seed=0, n=12, heavy=False):
    """Batches of varying sequence length whose range grows over time (forces re-binning)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        shape = (2, int(rng.integers(3, 40)), 16)
        x = rng.standard_t(3, size=shape) if heavy else rng.standard_normal(shape)
        out.append((x * (1 + 0.3 * i)).astype(np.float32))
    return out


def _cat(batches):
    return np.concatenate([b.ravel() for b in batches])


def _spec(observer="minmax", **kw):
    return QuantSpec(observer=observer, **kw)


# --- MinMax --------------------------------------------------------------------------------------

def test_minmax_per_tensor_exact_and_streaming_equals_one_shot():
    data = _batches()
    obs = make_observer(_spec(dtype="uint8", symmetric=False))
    for b in data:
        obs.update(b)
    rmin, rmax = obs.compute_range()
    allx = _cat(data)
    assert rmin.dtype == np.float32 and rmin.shape == ()
    assert float(rmin) == allx.min() and float(rmax) == allx.max()
    one = make_observer(_spec(dtype="uint8", symmetric=False))
    one.update(allx)
    assert one.qparams().to_json() == obs.qparams().to_json()
    assert obs.count == allx.size and obs.nonfinite == 0 and obs.batches == len(data)
    ref = compute_qparams(allx.min(), allx.max(), "uint8", symmetric=False)
    assert float(obs.qparams().scale) == float(ref.scale)
    assert int(obs.qparams().zero_point) == int(ref.zero_point)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_minmax_per_channel_matches_numpy(axis):
    rng = np.random.default_rng(3)
    shapes = [(4, 6, 5), (4, 6, 5)]
    if axis == 1:  # other dims may vary between batches
        shapes = [(2, 6, 5), (7, 6, 3), (1, 6, 9)]
    data = [rng.standard_normal(s).astype(np.float32) * rng.uniform(0.1, 5) for s in shapes]
    obs = make_observer(_spec(granularity="per_channel", axis=axis))
    for b in data:
        obs.update(b)
    ax = axis % 3
    red = tuple(i for i in range(3) if i != ax)
    exp_min = np.min([b.min(axis=red) for b in data], axis=0)
    exp_max = np.max([b.max(axis=red) for b in data], axis=0)
    rmin, rmax = obs.compute_range()
    np.testing.assert_array_equal(rmin, exp_min)
    np.testing.assert_array_equal(rmax, exp_max)
    qp = obs.qparams()
    assert qp.axis == ax and qp.scale.shape == (data[0].shape[ax],)
    ref = compute_qparams(exp_min, exp_max, "int8", symmetric=True, axis=ax)
    np.testing.assert_array_equal(qp.scale, ref.scale)


def test_minmax_per_block_non_dividing_block_size():
    rng = np.random.default_rng(4)
    w = rng.standard_normal((10, 6)).astype(np.float32)  # axis 0 of length 10, block_size 4 -> 3 blocks
    obs = make_observer(_spec(dtype="int4", granularity="per_block", block_size=4), axis=0)
    obs.update(w)
    rmin, rmax = obs.compute_range()
    assert rmin.shape == (3, 6)
    for b in range(3):
        blk = w[b * 4:(b + 1) * 4]
        np.testing.assert_array_equal(rmin[b], blk.min(axis=0))
        np.testing.assert_array_equal(rmax[b], blk.max(axis=0))
    qp = obs.qparams()
    assert qp.block_size == 4 and qp.axis == 0 and qp.scale.shape == (3, 6)
    assert np.all(np.abs(fake_quantize(w, qp) - w) <= qp.scale.max() / 2 + 1e-6)


def test_minmax_moving_average():
    obs = make_observer(_spec(observer_args={"averaging_constant": 0.5}, symmetric=False, dtype="uint8"))
    obs.update(np.array([0.0, 2.0], np.float32))
    obs.update(np.array([-2.0, 4.0], np.float32))
    rmin, rmax = obs.compute_range()
    assert float(rmin) == -1.0 and float(rmax) == 3.0


def test_per_channel_count_change_is_a_clear_error():
    obs = make_observer(_spec(granularity="per_channel", axis=1), name="conv1_out")
    obs.update(np.ones((1, 4, 2), np.float32))
    with pytest.raises(CalibrationError, match="conv1_out"):
        obs.update(np.ones((1, 5, 2), np.float32))


# --- histogram observers ---------------------------------------------------------------------

@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("pct", [99.999, 99.9, 99.0, 90.0])
@pytest.mark.parametrize("kind", ["normal", "heavy", "relu"])
def test_percentile_within_one_bin_of_numpy(symmetric, pct, kind):
    data = _batches(seed=7, heavy=kind == "heavy")
    if kind == "relu":
        data = [np.maximum(b, 0) for b in data]
    obs = make_observer(_spec("percentile", symmetric=symmetric, dtype="int8" if symmetric else "uint8",
                              observer_args={"percentile": pct}))
    for b in data:
        obs.update(b)
    allx = _cat(data)
    width = obs.hists[0].width
    rmin, rmax = (float(v) for v in obs.compute_range())
    if symmetric:
        ref = np.percentile(np.abs(allx), pct)
        assert abs(max(-rmin, rmax) - ref) <= width
    else:
        assert abs(rmin - np.percentile(allx, 100 - pct)) <= width
        assert abs(rmax - np.percentile(allx, pct)) <= width


def test_rebinning_invents_nothing():
    """After many range-growing batches the counts equal a direct histogram on the final edges."""
    data = _batches(seed=11, n=30)
    h = StreamingHistogram(256)
    for b in data:
        h.add(b.ravel(), float(b.min()), float(b.max()))
    allx = _cat(data)
    direct, _ = np.histogram(allx.astype(np.float64), bins=h.edges)
    assert h.total == allx.size
    assert np.abs(direct - h.counts).sum() <= 2e-4 * allx.size  # float32 rounding at edges only (2 of 16960)
    assert h.edges[0] <= allx.min() and h.edges[-1] >= allx.max()


def test_histogram_growth_from_constant_batch():
    h = StreamingHistogram(64)
    h.add(np.zeros(100, np.float32), 0.0, 0.0)
    big = np.linspace(-1e3, 1e4, 1000, dtype=np.float32)
    h.add(big, float(big.min()), float(big.max()))
    assert h.total == 1100 and h.edges[0] <= -1e3 and h.edges[-1] >= 1e4
    assert h.counts[np.searchsorted(h.edges, 0.0, side="right") - 1] >= 100


@pytest.mark.parametrize("name", list(OBSERVERS))
def test_streaming_equals_one_shot_when_extremes_come_first(name):
    """Histograms are additive: with the global range in the first batch, streaming == one shot."""
    data = _batches(seed=5, heavy=True)
    allx = _cat(data)
    first = np.concatenate([[allx.min(), allx.max()], data[0].ravel()]).astype(np.float32)
    batches = [first] + data[1:]
    spec = _spec(name, dtype="uint8", symmetric=False)
    stream, one = make_observer(spec), make_observer(spec)
    for b in batches:
        stream.update(b)
    one.update(_cat(batches))
    assert stream.qparams().to_json() == one.qparams().to_json()


@pytest.mark.parametrize("name", list(OBSERVERS))
def test_state_size_is_constant(name):
    data = _batches(seed=2, n=100)
    spec = _spec(name)
    a, b = make_observer(spec), make_observer(spec)
    a.update(data[0])
    for x in data:
        b.update(x)

    def sizes(o):
        arrays = [v for v in vars(o).values() if isinstance(v, np.ndarray)]
        arrays += [h.counts for h in getattr(o, "hists", [])]
        return [x.nbytes for x in arrays]

    assert sizes(a) == sizes(b)
    sa, sb = a.state()["data"], b.state()["data"]
    if name != "minmax":
        assert len(sa["hists"][0]["counts"]) == len(sb["hists"][0]["counts"]) == 2048
    assert len(json.dumps(sb)) < 2 * len(json.dumps(sa)) + 100


@pytest.mark.parametrize("name", list(OBSERVERS))
@pytest.mark.parametrize("granularity", ["per_tensor", "per_channel"])
def test_nonfinite_counted_and_ignored(name, granularity):
    rng = np.random.default_rng(9)
    clean = [rng.standard_normal((2, 3, 8)).astype(np.float32) for _ in range(4)]
    dirty = [c.copy() for c in clean]
    dirty[1][0, 1, 3] = np.nan
    dirty[2][1, 0, 0] = np.inf
    dirty[2][1, 2, 5] = -np.inf
    spec = _spec(name, granularity=granularity, axis=1 if granularity == "per_channel" else None)
    a, b = make_observer(spec), make_observer(spec)
    for c, d in zip(clean, dirty, strict=True):
        mask = np.isfinite(d)
        a.update(d)
        b.update(c if mask.all() else np.where(mask, d, c))  # same finite data, other values finite
    assert a.nonfinite == 3 and a.count == 4 * 48 - 3
    qp = a.qparams()
    assert np.all(np.isfinite(qp.scale)) and np.all(qp.scale > 0)
    if name == "minmax":  # exact: the range of the finite values only
        fin = np.concatenate([d[np.isfinite(d)] for d in dirty]) if granularity == "per_tensor" else None
        if fin is not None:
            rmin, rmax = a.compute_range()
            assert float(rmin) == fin.min() and float(rmax) == fin.max()
    only_nan = make_observer(spec)
    only_nan.update(np.full((1, 3, 2), np.nan, np.float32))
    assert only_nan.nonfinite == 6 and only_nan.count == 0
    assert np.all(np.isfinite(only_nan.qparams().scale))


@pytest.mark.parametrize("name", list(OBSERVERS))
def test_empty_tensors_are_skipped(name):
    obs = make_observer(_spec(name, dtype="uint8", symmetric=False))
    obs.update(np.zeros((1, 4, 0), np.float32))
    assert obs.batches == 0 and obs.count == 0
    rmin, rmax = obs.compute_range()
    assert float(rmin) == 0.0 and float(rmax) == 0.0
    qp = obs.qparams()
    assert float(qp.scale) == 1.0 and int(qp.zero_point) == 0
    x = np.linspace(-1, 3, 50, dtype=np.float32)
    obs.update(x)
    obs.update(np.empty((0, 16), np.float32))
    assert obs.batches == 1 and obs.count == 50


@pytest.mark.parametrize("name", list(OBSERVERS))
def test_variable_sequence_lengths(name):
    """Case 11: samples of seq 5/7/9/12 (and float16 / float64 batches) all work."""
    rng = np.random.default_rng(11)
    data = [rng.standard_normal((1, t, 16)).astype(np.float32) for t in (5, 7, 9, 12)]
    obs = make_observer(_spec(name, dtype="uint8", symmetric=False))
    for b in data:
        obs.update(b)
    obs.update(data[0].astype(np.float16))
    obs.update(data[1].astype(np.float64))
    allx = _cat(data)
    rmin, rmax = obs.compute_range()
    assert allx.min() <= float(rmin) <= 0 <= float(rmax) <= allx.max()
    assert obs.count == allx.size + data[0].size + data[1].size


@pytest.mark.parametrize("name,granularity", [(n, g) for n in OBSERVERS for g in ("per_tensor", "per_channel")]
                         + [("minmax", "per_block")])
def test_state_round_trip_gives_identical_qparams(name, granularity):
    kw = {"per_tensor": {}, "per_channel": {"axis": 0}, "per_block": {"axis": 1, "block_size": 3}}[granularity]
    spec = _spec(name, dtype="int8", granularity=granularity, power_of_two=name == "mse", **kw)
    obs = make_observer(spec, name="act/3")
    data = _batches(seed=1, n=5) if granularity == "per_tensor" else [
        np.random.default_rng(1).standard_normal((4, 10)).astype(np.float32)]
    for b in data:
        obs.update(b)
    obs.update(np.array([np.nan] * data[0].size, np.float32).reshape(data[0].shape))
    text = json.dumps(obs.state(), allow_nan=False)
    back = Observer.from_state(json.loads(text))
    assert type(back) is type(obs) and back.tensor == "act/3"
    assert back.count == obs.count and back.nonfinite == obs.nonfinite
    assert back.qparams().to_json() == obs.qparams().to_json()
    back.update(data[0])  # a restored observer keeps streaming
    obs.update(data[0])
    assert back.qparams().to_json() == obs.qparams().to_json()


def test_malformed_state_is_a_clear_error():
    with pytest.raises(CalibrationError, match="recalibrate"):
        Observer.from_state({"observer": "minmax"})
    with pytest.raises(CalibrationError):
        Observer.from_state({"observer": "nope", "spec": {}})


@pytest.mark.parametrize("name", list(OBSERVERS))
def test_merge_partial_observers(name):
    data = _batches(seed=8, n=8)
    spec = _spec(name, dtype="uint8", symmetric=False)
    whole, a, b = make_observer(spec), make_observer(spec), make_observer(spec)
    for i, x in enumerate(data):
        whole.update(x)
        (a if i < 4 else b).update(x)
    a.merge(b)
    assert a.count == whole.count and a.batches == whole.batches
    ra, rw = (np.array(r, np.float64) for r in (a.compute_range(), whole.compute_range()))
    if name == "minmax":
        np.testing.assert_array_equal(ra, rw)
    else:  # merging unaligned layouts redistributes counts within bins
        width = max(h.width for h in a.hists + whole.hists)
        assert np.all(np.abs(ra - rw) <= 3 * width) if name == "percentile" else np.all(
            np.abs(ra - rw) <= 0.05 * np.abs(rw).max())
    with pytest.raises(CalibrationError):
        a.merge(make_observer(_spec(name, dtype="int8")))


@pytest.mark.parametrize("dtype,symmetric", [("int8", True), ("uint8", False), ("int4", True),
                                             ("float8e4m3fn", True)])
def test_entropy_and_mse_clip_heavy_tails_and_mse_beats_minmax(dtype, symmetric):
    rng = np.random.default_rng(21)
    data = [rng.standard_t(2.5, size=(8, 500)).astype(np.float32) for _ in range(6)]
    allx = _cat(data)
    obs = {n: make_observer(_spec(n, dtype=dtype, symmetric=symmetric)) for n in OBSERVERS}
    for b in data:
        for o in obs.values():
            o.update(b)
    width = {n: float(np.ptp(np.array(o.compute_range(), np.float64))) for n, o in obs.items()}
    if dtype != "float8e4m3fn":  # float8's log-spaced grid may legitimately keep every outlier
        assert width["entropy"] < width["minmax"]
        assert width["mse"] < width["minmax"]

    def qmse(o):
        return float(np.mean((fake_quantize(allx, o.qparams()) - allx) ** 2))

    assert qmse(obs["mse"]) < qmse(obs["minmax"])


@pytest.mark.parametrize("dtype,symmetric,reduce_range", [("uint8", False, False), ("int8", True, False),
                                                         ("uint8", False, True), ("uint16", False, False),
                                                         ("int16", True, False), ("int4", True, False)])
def test_mse_errors_of_integer_types_equal_fake_quantize(dtype, symmetric, reduce_range):
    """The MSE search's integer fast path gives the same errors, bit for bit, as fake-quantizing the
    sample points with :func:`fake_quantize` (ONNX QuantizeLinear / DequantizeLinear numerics)."""
    from workbench.core.calibration.observers.base import as_f32
    from workbench.core.calibration.observers.mse import _sample_points

    obs = make_observer(_spec("mse", dtype=dtype, symmetric=symmetric, reduce_range=reduce_range))
    obs.update((np.random.default_rng(31).standard_t(3, size=100_000) * 3 + 1).astype(np.float32))
    pts, wts = _sample_points(obs.hists[0])
    rmin, rmax = np.linspace(-20.0, -0.5, 64), np.linspace(0.5, 30.0, 64)
    got = obs.errors(pts, wts, rmin, rmax)
    qp = compute_qparams(as_f32(rmin), as_f32(rmax), dtype, symmetric=symmetric, reduce_range=reduce_range,
                         axis=0)
    d = fake_quantize(np.broadcast_to(pts, (64, pts.size)), qp).astype(np.float64) - pts
    np.testing.assert_array_equal(got, (d * d) @ wts)


def test_mse_is_near_a_brute_force_optimum():
    rng = np.random.default_rng(22)
    x = rng.laplace(size=20000).astype(np.float32)
    obs = make_observer(_spec("mse", dtype="int4", symmetric=True))
    obs.update(x)
    got = float(np.mean((fake_quantize(x, obs.qparams()) - x) ** 2))
    ts = np.linspace(0.05, 1.0, 200) * np.abs(x).max()
    brute = min(float(np.mean((fake_quantize(x, compute_qparams(-t, t, "int4", symmetric=True)) - x) ** 2))
                for t in ts)
    assert got <= brute * 1.02


def test_entropy_threshold_reasonable_on_gaussian():
    """Migacz 2017: for a Gaussian, int8 keeps nearly the whole range; int4 clips more."""
    x = np.random.default_rng(23).standard_normal(200000).astype(np.float32)
    t = {}
    for dt in ("int8", "int4"):
        o = make_observer(_spec("entropy", dtype=dt))
        o.update(x)
        t[dt] = float(o.compute_range()[1])
    absmax = float(np.abs(x).max())
    assert 0.7 * absmax < t["int8"] <= absmax
    assert 0.4 * absmax < t["int4"] < t["int8"]


def test_entropy_on_relu_output_is_not_dragged_to_zero():
    x = np.maximum(np.random.default_rng(24).standard_normal(200000), 0).astype(np.float32)
    o = make_observer(_spec("entropy", dtype="uint8", symmetric=False))
    o.update(x)
    rmin, rmax = (float(v) for v in o.compute_range())
    assert rmin == 0.0 and 0.7 * x.max() < rmax <= x.max()


@pytest.mark.parametrize("name", HIST)
def test_histogram_observers_per_channel(name):
    rng = np.random.default_rng(25)
    w = rng.standard_normal((3, 400)).astype(np.float32) * np.array([[0.1], [1.0], [10.0]], np.float32)
    obs = make_observer(_spec(name, granularity="per_channel"), axis=0)
    obs.update(w)
    rmin, rmax = obs.compute_range()
    assert rmax.shape == (3,) and np.all(np.diff(rmax) > 0)
    assert np.all(rmax <= np.abs(w).max(axis=1))
    assert obs.qparams().scale.shape == (3,)


def test_bad_specs_are_recipe_errors():
    with pytest.raises(RecipeError, match="per_block"):
        make_observer(_spec("percentile", granularity="per_block", block_size=32, axis=0))
    with pytest.raises(RecipeError, match="axis"):
        make_observer(_spec("minmax", granularity="per_channel"))
    # out-of-range observer_args are refused by QuantSpec itself (test_recipe_observer_args_range); the
    # observers check again for a spec built without validation (model_construct / model_copy)
    with pytest.raises(RecipeError, match="bins"):
        make_observer(QuantSpec.model_construct(observer="entropy", observer_args={"bins": 4}))
    with pytest.raises(RecipeError, match="percentile"):
        make_observer(QuantSpec.model_construct(observer="percentile", observer_args={"percentile": 20}))
    obs = make_observer(_spec("minmax", granularity="per_channel", axis=3), name="t")
    with pytest.raises(CalibrationError, match="axis 3"):
        obs.update(np.ones((2, 2), np.float32))


def test_bins_argument_sets_resolution():
    obs = make_observer(_spec("percentile", observer_args={"bins": 128}))
    obs.update(np.random.default_rng(0).standard_normal(1000).astype(np.float32))
    assert obs.hists[0].counts.shape == (128,) and obs.hists[0].total == 1000


def test_case05_nan_inf_samples(cases):
    """Case 05 calibration data: one NaN and one +Inf pixel are counted, never in the range."""
    data = np.load(cases / "05_nan_inf_calibration.npz")["X"]
    for name in OBSERVERS:
        obs = make_observer(_spec(name, dtype="uint8", symmetric=False), name="X")
        for i in range(data.shape[0]):
            obs.update(data[i])
        assert obs.nonfinite == 2
        rmin, rmax = obs.compute_range()
        fin = data[np.isfinite(data)]
        assert fin.min() <= float(rmin) and float(rmax) <= fin.max()
        assert np.isfinite(obs.qparams().scale).all()


def test_case11_ragged_samples(cases):
    npz = np.load(cases / "11_histogram_calib_variable_seq.npz")
    samples = [npz[k] for k in sorted(npz.files)]
    assert len({s.shape for s in samples}) > 1
    for name in OBSERVERS:
        obs = make_observer(_spec(name, dtype="uint8", symmetric=False))
        for s in samples:
            obs.update(s)
        assert obs.count == sum(s.size for s in samples)
        assert float(obs.compute_range()[1]) > 0


@pytest.mark.parametrize("dtype,symmetric,nonneg", [("int8", True, False), ("uint8", False, True),
                                                    ("int4", True, False), ("float8e5m2", True, False)])
def test_entropy_closed_form_equals_direct_kl(dtype, symmetric, nonneg):
    """The vectorised KL of every candidate equals the per-candidate definition (Migacz 2017)."""
    from workbench.core.calibration.observers.entropy import (
        EntropyObserver,
        kl_divergence_at,
        kl_scores,
        level_ids,
    )

    rng = np.random.default_rng(31)
    n = 700
    hist = rng.poisson(rng.exponential(40, n) * np.exp(-np.arange(n) / 150)).astype(np.float64)
    hist[rng.integers(0, n, 150)] = 0
    hist[0] += 5000  # a ReLU-style spike of exact zeros
    obs = EntropyObserver(_spec("entropy", dtype=dtype, symmetric=symmetric))
    mids, grid_max = obs.level_grid(nonneg)
    cands = np.arange(max(2, mids.size), n + 1)
    fast = kl_scores(hist, cands, mids, grid_max)
    direct = np.array([kl_divergence_at(hist, i, level_ids(i, mids, grid_max)) for i in cands])
    np.testing.assert_allclose(fast, direct, rtol=1e-9, atol=1e-12)
    assert np.all(np.diff(level_ids(n, mids, grid_max)) >= 0)


def test_per_block_nonfinite_blocks():
    w = np.arange(24, dtype=np.float32).reshape(6, 4) - 10
    w[0, 1] = np.nan
    w[3:6, 2] = np.inf  # a whole block of non-finite values -> neutral (0, 0) range
    obs = make_observer(_spec(granularity="per_block", block_size=3), axis=0)
    obs.update(w)
    rmin, rmax = obs.compute_range()
    assert obs.nonfinite == 4 and obs.count == 20
    np.testing.assert_array_equal(rmin, [[-10, -5, -8, -7], [2, 3, 0, 5]])
    np.testing.assert_array_equal(rmax, [[-2, -1, 0, 1], [10, 11, 0, 13]])
    assert np.all(obs.qparams().scale > 0)


def test_small_batches_are_buffered_in_order_with_bounded_memory():
    rng = np.random.default_rng(41)
    obs = make_observer(_spec("percentile", dtype="uint8", symmetric=False))
    sizes = [10, 3000, 50_000, 7, 4095, 4096, 1, 20_000] + [100] * 300
    data = [rng.standard_normal(n).astype(np.float32) * (1 + i % 5) for i, n in enumerate(sizes)]
    for x in data:
        obs.update(x)
        assert obs._pending_n < 16384 + 4096  # never more than one flush threshold buffered
    allx = _cat(data)
    h = obs.hists[0]
    assert obs._pending_n == 0 and h.total == allx.size == obs.count
    direct, _ = np.histogram(allx.astype(np.float64), bins=h.edges)
    # float32 binning puts a value within 1e-3 bin widths of an edge of the layout of its time in the
    # neighbour bin (the float32 offset may sit that far below ``lo``): 12 of 111,209 values here
    assert np.abs(direct - h.counts).sum() <= 2e-4 * allx.size


@pytest.mark.parametrize("name", HIST)
def test_small_tensors_give_one_histogram_whatever_the_batch_size(name):
    """Calibration feeds sample 0 alone, then batches whose size follows the plan. A tensor of a few
    hundred values per sample used to be buffered across batches, so the values that set the bin
    lattice were those of the first flush, which moved with the batch size (ppocrv4_rec's
    GlobalAveragePool output: MSE max 5.149 at batch 2 against 5.315 at batch 1)."""
    rng = np.random.default_rng(5)
    rows = [rng.standard_normal(480).astype(np.float32) * (1 + 0.3 * i) + 0.05 * i for i in range(40)]
    ranges, lattices = [], []
    for batch in (1, 2, 3, 7):
        obs = make_observer(_spec(name, dtype="uint8", symmetric=False))
        obs.update(rows[0])
        for i in range(1, len(rows), batch):
            obs.update(np.concatenate(rows[i:i + batch]))
        h = obs.hists[0]
        lattices.append((h.lo, h.width, h.counts.tolist()))
        ranges.append(tuple(float(v) for v in obs.compute_range()))
    assert all(lat == lattices[0] for lat in lattices[1:])
    assert all(r == ranges[0] for r in ranges[1:])


@pytest.mark.parametrize("name", HIST)
def test_float64_beyond_float32_range(name):
    x = np.array([-1e300, 0.0, 1.0, 2.0, 1e300])
    obs = make_observer(_spec(name, dtype="uint8", symmetric=False, observer_args={"percentile": 100.0})
                        if name == "percentile" else _spec(name, dtype="uint8", symmetric=False))
    for _ in range(3):
        obs.update(x)
        obs.update(np.linspace(-1e5, 1e5, 5000))  # a large batch too
    assert obs.hists[0].total == 3 * 5005 and obs.nonfinite == 0
    rmin, rmax = obs.compute_range()  # saturated to the float32 range, never +-inf
    assert np.isfinite(rmin) and np.isfinite(rmax) and rmin <= 0 <= rmax
    assert np.isfinite(obs.qparams().scale) and obs.qparams().scale > 0
    if name == "percentile":
        assert rmax == np.finfo(np.float32).max


def test_minmax_float64_beyond_float32_range():
    obs = make_observer(_spec(dtype="uint8", symmetric=False))
    obs.update(np.array([-1e300, 1.0]))
    rmin, rmax = obs.compute_range()
    assert rmin == -np.finfo(np.float32).max and rmax == 1.0
    assert np.isfinite(obs.qparams().scale)


def test_a_copy_keeps_its_range_search_only_for_the_same_spec():
    """``Observer.copy``: the same spec keeps the MSE range already searched (and equals a search of
    its own); a 16-bit spec searches again over the same histogram and clips less."""
    rng = np.random.default_rng(2)
    spec = QuantSpec(dtype="uint8", symmetric=False, observer="mse")
    obs = make_observer(spec, name="t")
    obs.update(np.concatenate([rng.standard_normal(20000), [40.0]]).astype(np.float32))
    lo, hi = obs.compute_range()
    same = obs.copy(spec)
    assert same._range is not None and same.spec == spec
    assert np.array_equal(same.compute_range()[1], hi)
    same._range = None
    assert np.array_equal(same.compute_range()[1], hi)  # searched again: the same range
    wide = obs.copy(spec.model_copy(update={"dtype": "uint16"}))
    assert wide._range is None and wide.spec.dtype == "uint16"
    assert float(wide.compute_range()[1]) > float(hi)  # 16 bits: less clipping of the 40.0 outlier
