"""Derived observers through element-wise cones (SiLU, GELU, x + c, c - x) and merged Concat
observers, against what observing the tensors directly in onnxruntime gives."""

from __future__ import annotations

import concurrent.futures
import math

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core.calibration import calibrate as calib_mod
from workbench.core.calibration.calibrate import calibrate
from workbench.core.calibration.instrument import instrument
from workbench.core.calibration.observers import StreamingHistogram
from workbench.core.calibration.observers.derived import find_derivations
from workbench.core.calibration.observers.merged import find_merges
from workbench.core.calibration.observers.pushforward import push_forward
from workbench.core.data.loader import open_data
from workbench.core.model.load import prepare_proto
from workbench.core.recipe.spec import QuantSpec

# C = Conv(X); SiLU: S = Sigmoid(C), M = C * S; GELU: D = C / sqrt2, E = Erf(D), A = E + 1, G = C * A,
# H = G * 0.5; N = 2 - C (decreasing); Q = C * Z (Z another Conv: two roots, fetched);
# R = 1 / C (x in a denominator, fetched); K = Concat(halves of Split(M), Transpose(H)) (merged);
# P = Concat(MaxPool(M), H) (a MaxPool input: fetched); Y = sum of everything (graph output).
SIGNS = {"S": 1, "M": 0, "E": 1, "A": 1, "G": 0, "H": 0, "N": -1}
DERIVED = set(SIGNS)
MERGED = {"K"}
TENSORS = ["X", "C", "Z", *SIGNS, "Q", "R", "K", "P"]


def _const(name, v):
    return numpy_helper.from_array(np.array(v, np.float32), name)


def _graph_model(nodes, inits, x_shape=(None, 4, 6), outputs=("Y",)):
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "g", [vi("X", TensorProto.FLOAT, ["N", *x_shape[1:]])],
                          [vi(o, TensorProto.FLOAT, None) for o in outputs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return m


def _model(spread: float = 0.6):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * spread, "W"),
             numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * spread, "W2"),
             _const("sqrt2", math.sqrt(2.0)), _const("one", 1.0), _const("half", 0.5), _const("two", 2.0)]
    n = helper.make_node
    nodes = [n("Conv", ["X", "W"], ["C"], name="conv"), n("Conv", ["X", "W2"], ["Z"], name="conv2"),
             n("Sigmoid", ["C"], ["S"], name="sig"), n("Mul", ["C", "S"], ["M"], name="silu"),
             n("Div", ["C", "sqrt2"], ["D"], name="div"), n("Erf", ["D"], ["E"], name="erf"),
             n("Add", ["E", "one"], ["A"], name="add1"), n("Mul", ["C", "A"], ["G"], name="gmul"),
             n("Mul", ["G", "half"], ["H"], name="half"), n("Sub", ["two", "C"], ["N"], name="neg"),
             n("Mul", ["C", "Z"], ["Q"], name="prod"), n("Div", ["one", "C"], ["R"], name="recip"),
             n("Split", ["M"], ["M0", "M1"], name="split", axis=1, num_outputs=2),
             n("Transpose", ["H"], ["HT"], name="turn", perm=[0, 1, 3, 2]),
             n("Concat", ["M1", "HT", "M0"], ["K"], name="cat0", axis=1),
             n("MaxPool", ["M"], ["MP"], name="pool", kernel_shape=[1, 1]),
             n("Concat", ["MP", "H"], ["P"], name="cat1", axis=1),
             n("Concat", ["S", "N"], ["SN"], name="cat2", axis=1),
             n("ReduceSum", ["K"], ["k1"], name="rk", keepdims=0),
             n("ReduceSum", ["P"], ["p1"], name="rp", keepdims=0),
             n("ReduceSum", ["SN"], ["s1"], name="rs", keepdims=0),
             n("ReduceSum", ["Q"], ["q1"], name="rq", keepdims=0),
             n("ReduceSum", ["R"], ["r1"], name="rr", keepdims=0),
             n("Sum", ["k1", "p1", "s1", "q1", "r1"], ["Y"], name="sum")]
    return _graph_model(nodes, inits, x_shape=(None, 3, 8, 8))


class Plan:
    def __init__(self, activations):
        self.activations = activations


def _plan(observer: str) -> Plan:
    return Plan({t: QuantSpec(dtype="uint8", symmetric=False, observer=observer) for t in TENSORS})


def _data(tmp_path, n=12):
    x = np.random.default_rng(1).standard_normal((n, 3, 8, 8)).astype(np.float32)
    x[3] *= 4.0
    path = tmp_path / "calib.npz"
    np.savez(path, X=x)
    return path, x


def _both(tmp_path, observer, monkeypatch):
    model = prepare_proto(_model())
    path, x = _data(tmp_path)
    out = {}
    for derive in (False, True):
        monkeypatch.setattr(calib_mod, "DERIVE", derive)
        out[derive] = calibrate(model, _plan(observer), open_data(path, model), batch_size=4)
    return model, x, out[False], out[True]


def _values(model, x) -> dict[str, np.ndarray]:
    names = [t for t in TENSORS if t != "X"]
    with instrument(model.proto, names) as s:
        outs = [s.run({"X": x[i:i + 4]}) for i in range(0, len(x), 4)]
    return {t: np.concatenate([o[k].ravel() for o in outs]).astype(np.float64) for k, t in enumerate(names)}


def _range(obs) -> np.ndarray:
    return np.array([float(v) for v in obs.compute_range()])


def test_which_tensors_are_derived_and_merged():
    model = prepare_proto(_model())
    specs = _plan("minmax").activations
    direct = set(TENSORS)
    der = find_derivations(model.proto, specs, direct)
    assert {t: d.sign for t, d in der.items()} == SIGNS
    assert {d.source for d in der.values()} == {"C"}
    assert [n.op_type for n in der["H"].nodes] == ["Div", "Erf", "Add", "Mul", "Mul"]
    merges = find_merges(model.proto, specs, direct | set(der), {"C"})
    assert set(merges) == MERGED
    assert merges["K"].sources == ("M", "H")  # the Split's halves stand for M; H through the Transpose
    assert find_merges(model.proto, specs, direct | set(der), {"K"}) == {}  # a derivation source stays fetched
    # a histogram output needs histogram sources: H observed with MinMax blocks the merge
    pct = {t: s.model_copy(update={"observer": "percentile"}) for t, s in specs.items()}
    assert set(find_merges(model.proto, pct, direct | set(der), {"C"})) == MERGED
    assert find_merges(model.proto, {**pct, "H": specs["H"]}, direct | set(der), {"C"}) == {}


def test_cone_minmax_matches_direct_and_real_values(tmp_path, monkeypatch):
    model, x, direct, derived = _both(tmp_path, "minmax", monkeypatch)
    vals = _values(model, x)
    assert vals["C"].min() < -1.28 < vals["C"].max()  # SiLU / GELU dips are inside the data
    for t in TENSORS[1:]:
        a, b = _range(direct.observers[t]), _range(derived.observers[t])
        span = a[1] - a[0]
        assert b[1] == pytest.approx(vals[t].max(), rel=0, abs=4e-7 * span), t
        if SIGNS.get(t, 1) == 0:  # F's dip: a bound at most curvature * (span / GRID)^2 below the data
            assert vals[t].min() - 1e-6 * span <= b[0] <= vals[t].min() + 1e-6 * span, t
        else:
            assert b[0] == pytest.approx(vals[t].min(), rel=0, abs=4e-7 * span), t
        qa, qb = direct.observers[t].qparams(), derived.observers[t].qparams()
        assert int(qa.zero_point) == int(qb.zero_point) and float(qb.scale) == pytest.approx(float(qa.scale), rel=1e-5), t
        assert direct.observers[t].count == derived.observers[t].count == vals[t].size, t
    assert _range(derived.observers["K"]).tolist() == [min(_range(derived.observers["M"])[0], _range(
        derived.observers["H"])[0]), max(_range(derived.observers["M"])[1], _range(derived.observers["H"])[1])]


@pytest.mark.parametrize("observer", ["percentile", "entropy"])
def test_cone_and_merge_histograms_match_direct(tmp_path, monkeypatch, observer):
    model, x, direct, derived = _both(tmp_path, observer, monkeypatch)
    vals = _values(model, x)
    for t in DERIVED | MERGED:
        ha, hb = direct.observers[t].hists[0], derived.observers[t].hists[0]
        assert hb.total == ha.total == vals[t].size, t
        span = ha.vmax - ha.vmin
        assert abs(hb.vmin - ha.vmin) <= 2e-3 * span and abs(hb.vmax - ha.vmax) <= 2e-3 * span, t
        # CDF of the derived histogram vs the real values: within 1% of the count everywhere
        real = np.searchsorted(np.sort(vals[t]), hb.edges, side="left")
        cdf = np.concatenate([[0], np.cumsum(hb.counts)])
        assert np.abs(cdf - real).max() <= 0.01 * vals[t].size, t
        if observer == "percentile":
            exact = np.percentile(vals[t], [0.001, 99.999])
            assert np.abs(_range(derived.observers[t]) - exact).max() <= 2.0 * ha.width, t


def test_nonfinite_source_marks_cone_and_merge(tmp_path):
    model = prepare_proto(_model())
    path, x = _data(tmp_path)
    x[5, 0, 0, 0] = np.nan
    np.savez(path, X=x)
    res = calibrate(model, _plan("minmax"), open_data(path, model), batch_size=4)
    rows = {t: sorted((s, c) for tt, s, c in res.nonfinite if tt == t) for t in ("C", "M", "H", "K")}
    assert rows["C"] and rows["M"] == rows["C"] and rows["H"] == rows["C"]
    assert res.observers["K"].nonfinite == res.observers["M"].nonfinite + res.observers["H"].nonfinite > 0
    assert rows["K"] == [(s, 2 * c) for s, c in rows["M"]]  # one row per sample, M's and H's counts added
    assert all(np.isfinite(float(q.scale)) for q in res.qparams().values())


def test_push_forward_square_and_constant():
    rng = np.random.default_rng(5)
    v = rng.standard_normal(200_000).astype(np.float32)
    h = StreamingHistogram(512)
    h.add(v, float(v.min()), float(v.max()))
    edges = np.clip(h.edges, h.vmin, h.vmax)
    sq = push_forward(edges ** 2, h.counts, 512)  # non-monotonic: both halves land on [0, max^2]
    y = np.sort(v.astype(np.float64) ** 2)
    assert sq.total == v.size and sq.vmin == pytest.approx(0.0, abs=2 * h.width * abs(h.vmin))
    assert sq.vmax == pytest.approx(y[-1], rel=1e-6)
    real = np.searchsorted(y, sq.edges, side="left")
    assert np.abs(np.concatenate([[0], np.cumsum(sq.counts)]) - real).max() <= 0.005 * v.size
    flat = push_forward(np.full(edges.size, 3.0), h.counts, 64)  # a constant F: one point mass
    assert (flat.vmin, flat.vmax, flat.total) == (3.0, 3.0, v.size)
    same = push_forward(edges, h.counts, 512)  # identity: the same histogram
    np.testing.assert_allclose(same.counts, h.counts, atol=1)


@pytest.mark.slow
def test_nudenet_silu_and_concat_ranges_equal_direct(corpus, monkeypatch):
    """nudenet_320n (YOLOv8): the 57 SiLU outputs are derived, the C2f Concats merged, and the
    MinMax qparams of every one equal those of observing it directly."""

    from workbench.core.api import make_recipe
    from workbench.core.model.load import load_model
    from workbench.core.planning.plan import build_plan

    root = corpus / "nudenet_320n"
    model = load_model(root / "model.onnx")
    plan = build_plan(model, make_recipe("cpu-u8s8"))
    specs = {t: s.model_copy(update={"observer": "minmax"}) for t, s in plan.activations.items()}
    direct = set(specs)
    der = find_derivations(model.proto, specs, direct)
    merges = find_merges(model.proto, specs, direct | set(der), {d.source for d in der.values()})
    # independent reference, from the graph's structure: the SiLU outputs (x * Sigmoid(x)) among the
    # planned activations are exactly the derived ones of sign 0; every merge is a Concat output
    producer = {o: n for n in model.proto.graph.node for o in n.output}
    silu = {n.output[0] for n in model.proto.graph.node if n.op_type == "Mul" and any(
        i in producer and producer[i].op_type == "Sigmoid" and producer[i].input[0] in n.input for i in n.input)}
    assert silu and {t for t, d in der.items() if d.sign == 0} == silu & set(specs)
    concats = {n.output[0] for n in model.proto.graph.node if n.op_type == "Concat"}
    assert merges and set(merges) <= concats & set(specs)
    res = {}
    for derive in (False, True):
        monkeypatch.setattr(calib_mod, "DERIVE", derive)
        res[derive] = calibrate(model, Plan(specs), open_data(root / "calib.npz", model), samples=8)
    for t in [*der, *merges]:
        qa, qb = res[False].observers[t].qparams(), res[True].observers[t].qparams()
        assert int(qa.zero_point) == int(qb.zero_point), t
        assert float(qb.scale) == pytest.approx(float(qa.scale), rel=1e-6), t


def test_pipeline_only_for_runs_worth_overlapping(tmp_path, monkeypatch):
    """Batches run on a helper thread only when one run takes at least MIN_OVERLAP_SECONDS; the
    observers end up identical either way."""
    model = prepare_proto(_model())
    path, _ = _data(tmp_path)
    pools = []

    class Pool(concurrent.futures.ThreadPoolExecutor):
        def __init__(self, *a, **kw):
            pools.append(self)
            super().__init__(*a, **kw)

    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", Pool)  # calibrate imports it when it pipelines
    states = []
    for threshold in (60.0, 0.0):  # no run of this model takes a minute; every run takes >= 0 s
        monkeypatch.setattr(calib_mod, "MIN_OVERLAP_SECONDS", threshold)
        res = calibrate(model, _plan("percentile"), open_data(path, model), batch_size=2)
        states.append({t: o.state() for t, o in res.observers.items()})
        assert len(pools) == (0 if threshold else 1)
    assert states[0] == states[1]
    # default batch size: the one-sample probe is not what decides (a full batch is timed first)
    pools.clear()
    for threshold in (60.0, 0.0):
        monkeypatch.setattr(calib_mod, "MIN_OVERLAP_SECONDS", threshold)
        res = calibrate(model, _plan("percentile"), open_data(path, model))
        assert res.batch_size > 1 and len(pools) == (0 if threshold else 1)


@pytest.mark.slow
def test_ppocrv4_rec_minmax_with_mixed_point_counts(corpus, monkeypatch, caplog):
    """ppocrv4_rec (x * HardSigmoid(x) blocks): MinMax derivations evaluate F at 2 points
    (monotonic) and at a grid (not monotonic) in one onnxruntime session; a shared symbolic dim made
    onnxruntime re-use a 2-value buffer for 4097 values and calibration failed (now the trial run at
    set-up would turn that into fetching). Ranges = direct."""

    from workbench.core.api import make_recipe
    from workbench.core.model.load import load_model
    from workbench.core.planning.plan import build_plan

    root = corpus / "ppocrv4_rec"
    model = load_model(root / "model.onnx")
    plan = build_plan(model, make_recipe("cpu-u8s8"))
    der = find_derivations(model.proto, plan.activations, set(plan.activations))
    assert {d.sign for d in der.values()} == {0, 1}
    res = {}
    for derive in (False, True):
        monkeypatch.setattr(calib_mod, "DERIVE", derive)
        res[derive] = calibrate(model, plan, open_data(root / "calib.npz", model), samples=4)
    assert "Derived observers disabled" not in caplog.text  # derived, not fetched after a failed trial run
    for t, d in der.items():
        a, b = _range(res[False].observers[t]), _range(res[True].observers[t])
        span = a[1] - a[0]
        assert b[1] == pytest.approx(a[1], rel=0, abs=1e-6 * span), t
        if d.sign == 0:  # the dip of x * HardSigmoid(x) (-0.375 at -1.5): a bound below the 4 samples' minimum
            assert a[0] - 1e-3 * span <= b[0] <= a[0] + 1e-6 * span, t
        else:
            assert b[0] == pytest.approx(a[0], rel=0, abs=1e-6 * span), t


def test_failed_trial_run_falls_back_to_fetching(tmp_path, monkeypatch, caplog):
    """A derivation session that onnxruntime builds but cannot run (seen: a buffer re-used across
    point counts) is caught by the trial run at set-up: those tensors are fetched, results = direct."""
    from workbench.core.calibration.observers import derived as derived_mod

    class Broken:
        def run(self, *a, **kw):
            raise RuntimeError("Shape mismatch attempting to re-use buffer")

    build = derived_mod.Deriver._build

    def broken_build(self, proto):
        build(self, proto)
        return Broken()

    monkeypatch.setattr(derived_mod.Deriver, "_build", broken_build)
    model, x, direct, derived = _both(tmp_path, "minmax", monkeypatch)
    assert "Derived observers disabled" in caplog.text and "re-use buffer" in caplog.text
    for t in TENSORS[1:]:
        assert _range(direct.observers[t]).tolist() == _range(derived.observers[t]).tolist(), t


# -- regressions found by a bug hunt ------------------------------------------------------------------


def _direct_and_derived(tmp_path, monkeypatch, proto, tensors, observer, x, **spec):
    model = prepare_proto(proto)
    path = tmp_path / "x.npz"
    np.savez(path, X=x)
    specs = Plan({t: QuantSpec(dtype="uint8", symmetric=False, observer=observer, **spec) for t in tensors})
    out = {}
    for derive in (False, True):
        monkeypatch.setattr(calib_mod, "DERIVE", derive)
        out[derive] = calibrate(model, specs, open_data(path, model), batch_size=4)
    return out[False], out[True]


@pytest.mark.parametrize("observer", ["minmax", "percentile"])
def test_cone_constant_with_extra_axes(tmp_path, monkeypatch, observer):
    """A one-value constant of shape [1, 1, 1] broadcasts the derivation's 1-D points to [1, 1, P]."""
    k = numpy_helper.from_array(np.full((1, 1, 1), 0.5, np.float32), "k")
    n = helper.make_node
    nodes = [n("Relu", ["X"], ["R"], name="r"), n("Sub", ["k", "R"], ["A"], name="sub"),
             n("Sigmoid", ["A"], ["S"], name="sig"), n("Mul", ["A", "S"], ["M"], name="silu"),
             n("Add", ["M", "k"], ["Y"], name="out")]
    x = np.random.default_rng(2).standard_normal((12, 4, 6)).astype(np.float32) * 3
    direct, derived = _direct_and_derived(tmp_path, monkeypatch, _graph_model(nodes, [k]), ["R", "A", "M"],
                                          observer, x)
    for t in ("A", "M"):
        a, b = _range(direct.observers[t]), _range(derived.observers[t])
        assert np.abs(a - b).max() <= 2e-3 * (a[1] - a[0]), t
        assert derived.observers[t].count == direct.observers[t].count == x.size, t


def test_merge_with_other_bin_counts(tmp_path, monkeypatch):
    """Concat sources with 512 bins into a 2048-bin output: interpolated, and the state round-trips."""
    from workbench.core.calibration.observers import Observer

    n = helper.make_node
    nodes = [n("Relu", ["X"], ["A"], name="ra"), n("Neg", ["X"], ["B"], name="nb"),
             n("Concat", ["A", "B"], ["Y"], name="cat", axis=1), n("Abs", ["Y"], ["O"], name="out")]
    model = prepare_proto(_graph_model(nodes, [], outputs=("O",)))
    x = np.random.default_rng(3).standard_normal((8, 4, 6)).astype(np.float32)
    path = tmp_path / "x.npz"
    np.savez(path, X=x)
    base = QuantSpec(dtype="uint8", symmetric=False, observer="percentile")
    specs = {"A": base.model_copy(update={"observer_args": {"bins": 512}}),
             "B": base.model_copy(update={"observer_args": {"bins": 512}}), "Y": base}
    assert set(find_merges(model.proto, specs, {"A", "B"})) == {"Y"}
    res = calibrate(model, Plan(specs), open_data(path, model), batch_size=4)
    h = res.observers["Y"].hists[0]
    assert h.bins == h.counts.size == 2048 and h.total == 2 * x.size
    again = Observer.from_state(res.observers["Y"].state())
    assert again.hists[0].counts.tolist() == h.counts.tolist()
    assert _range(res.observers["Y"]).tolist() == pytest.approx(np.percentile(
        np.concatenate([np.maximum(x, 0), -x]).astype(np.float64), [0.001, 99.999]), abs=4 * h.width)


def test_split_with_one_output_observed_is_not_counted_twice(tmp_path, monkeypatch):
    n = helper.make_node
    nodes = [n("Relu", ["X"], ["R"], name="r"), n("Split", ["R"], ["S0", "S1"], name="split", axis=1, num_outputs=2),
             n("Concat", ["S0", "S1"], ["Y"], name="cat", axis=1), n("Identity", ["S0"], ["Z"], name="keep")]
    x = np.random.default_rng(4).standard_normal((8, 4, 6)).astype(np.float32)
    direct, derived = _direct_and_derived(tmp_path, monkeypatch, _graph_model(nodes, [], outputs=("Y", "Z")),
                                          ["R", "S0", "Y"], "minmax", x)
    model = prepare_proto(_graph_model(nodes, [], outputs=("Y", "Z")))
    specs = {t: QuantSpec(dtype="uint8", symmetric=False) for t in ("R", "S0", "Y")}
    # Y is a graph output here, so it is fetched; the merge itself is checked on the source list
    from workbench.core.calibration.observers.merged import _sources

    producer = {o: nd for nd in model.proto.graph.node for o in nd.output}
    assert _sources(["S0", "S1"], producer, {"R", "S0"}) == ["R"]
    assert find_merges(model.proto, specs, {"R", "S0"}) == {}  # graph output: never merged
    assert derived.observers["Y"].count == direct.observers["Y"].count == x.size


@pytest.mark.parametrize("observer", ["minmax", "percentile"])
def test_bounded_bump_on_a_wide_source_is_found(tmp_path, monkeypatch, observer):
    """Tanh(x)^2 over x in [-3000, 3000]: the dip at 0 lies between grid points 1.5 apart."""
    n = helper.make_node
    nodes = [n("Tanh", ["X"], ["T"], name="t"), n("Mul", ["T", "T"], ["T2"], name="sq"),
             n("Add", ["T2", "X"], ["Y"], name="out")]
    x = np.random.default_rng(5).standard_normal((8, 4, 6)).astype(np.float32) * 0.3
    x[0, 0, 0], x[1, 0, 0] = 3000.0, -3001.0
    direct, derived = _direct_and_derived(tmp_path, monkeypatch, _graph_model(nodes, []), ["X", "T2"], observer, x)
    a, b = _range(direct.observers["T2"]), _range(derived.observers["T2"])
    if observer == "minmax":  # the dip found: a bound at or below the data
        assert 0.0 <= a[0] < 1e-4 and -1e-7 <= b[0] <= a[0] + 1e-7
        assert b[1] == pytest.approx(a[1], abs=1e-6)
    else:  # within a bin of y's histogram (the grid alone gave 0.558 for the lower end)
        assert np.abs(a - b).max() <= 2 * derived.observers["T2"].hists[0].width


def test_cone_nodes_out_of_graph_order(tmp_path, monkeypatch):
    n = helper.make_node
    nodes = [n("Sigmoid", ["X"], ["S"], name="sig"), n("Sub", ["S", "S2"], ["B"], name="sub"),
             n("Mul", ["S", "S"], ["S2"], name="sq"), n("Add", ["B", "X"], ["Y"], name="out")]
    proto = _graph_model(nodes, [])
    model = prepare_proto(proto)
    der = find_derivations(model.proto, {t: QuantSpec() for t in ("X", "B")}, {"X"})
    assert [nd.name for nd in der["B"].nodes] == ["sig", "sq", "sub"] and der["B"].sign == 0
    x = np.random.default_rng(6).standard_normal((8, 4, 6)).astype(np.float32) * 3
    direct, derived = _direct_and_derived(tmp_path, monkeypatch, proto, ["X", "B"], "minmax", x)
    a, b = _range(direct.observers["B"]), _range(derived.observers["B"])
    assert b[0] == pytest.approx(a[0], abs=1e-6) and a[1] - 1e-6 <= b[1] <= 0.25 + 1e-7
