"""Derived observers: y = f(x) for element-wise monotonic f, built from x's observer instead of
fetching y, must give what observing y directly gives (exact for MinMax, within a bin for the
histogram observers) on a real onnxruntime model."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core.calibration import calibrate as calib_mod
from workbench.core.calibration.calibrate import calibrate
from workbench.core.calibration.instrument import instrument
from workbench.core.calibration.observers import StreamingHistogram
from workbench.core.calibration.observers.derived import Deriver, find_derivations
from workbench.core.data.loader import open_data
from workbench.core.model.load import prepare_proto
from workbench.core.recipe.spec import QuantSpec

ACTS = {"S": ("Sigmoid", {}), "T": ("Tanh", {}), "R": ("Relu", {}), "L": ("LeakyRelu", {"alpha": 0.1}),
        "H": ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), "K": ("Clip", {}), "E": ("Elu", {"alpha": 0.7}),
        "N": ("LeakyRelu", {"alpha": -0.5})}  # negative slope: not monotonic, must be fetched
DERIVED = {"S", "T", "R", "L", "H", "K", "E"}
TENSORS = ["X", "C", *ACTS, "Y"]


def _model(spread: float = 0.3):
    """X -> Conv -> C; C -> each activation of ACTS; Sum of them -> Y (the only graph output)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * spread, "W")
    inits = [w, numpy_helper.from_array(np.float32(-0.5), "cmin"), numpy_helper.from_array(np.float32(1.5), "cmax")]
    nodes = [helper.make_node("Conv", ["X", "W"], ["C"], name="conv")]
    for out, (op, attrs) in ACTS.items():
        ins = ["C", "cmin", "cmax"] if op == "Clip" else ["C"]
        nodes.append(helper.make_node(op, ins, [out], name=f"act_{out}", **attrs))
    nodes.append(helper.make_node("Sum", list(ACTS), ["Y"], name="sum"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 4, 6, 6])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


class Plan:
    def __init__(self, activations):
        self.activations = activations


def _plan(observer: str, **kw) -> Plan:
    return Plan({t: QuantSpec(dtype="uint8", symmetric=False, observer=observer, **kw) for t in TENSORS})


def _data(tmp_path, n=12):
    x = np.random.default_rng(1).standard_normal((n, 3, 8, 8)).astype(np.float32)
    x[3] *= 4.0  # one sample with a wider range: the histograms grow
    path = tmp_path / "calib.npz"
    np.savez(path, X=x)
    return path, x


def _both(tmp_path, observer, monkeypatch, spread=0.3, source=None, **kw):
    model = prepare_proto(_model(spread))
    path, x = _data(tmp_path)
    plan = _plan(observer, **kw)
    if source is not None:  # another observer on the source tensor C
        plan.activations["C"] = plan.activations["C"].model_copy(update={"observer": source})
    out = {}
    for derive in (False, True):
        monkeypatch.setattr(calib_mod, "DERIVE", derive)
        out[derive] = calibrate(model, plan, open_data(path, model), batch_size=4)
    return model, x, out[False], out[True]


def _values(model, x) -> dict[str, np.ndarray]:
    """Every observed tensor's values over all samples, fetched from onnxruntime."""
    names = [t for t in TENSORS if t != "X"]
    with instrument(model.proto, names) as s:
        outs = [s.run({"X": x[i:i + 4]}) for i in range(0, len(x), 4)]
    return {t: np.concatenate([o[k].ravel() for o in outs]) for k, t in enumerate(names)}


def test_which_tensors_are_derived():
    model = prepare_proto(_model())
    specs = _plan("minmax").activations
    assert set(find_derivations(model.proto, specs, set(TENSORS))) == DERIVED
    # a source that is not observed directly, a graph output, per-channel, moving average, histogram from minmax
    assert find_derivations(model.proto, specs, set(TENSORS) - {"C"}) == {}
    assert "R" not in find_derivations(model.proto, {**specs, "R": specs["R"].model_copy(
        update={"granularity": "per_channel", "axis": 1})}, set(TENSORS))
    avg = specs["C"].model_copy(update={"observer_args": {"averaging_constant": 0.01}})
    assert find_derivations(model.proto, {**specs, "C": avg}, set(TENSORS)) == {}
    pct = {t: s.model_copy(update={"observer": "percentile"}) for t, s in specs.items()}
    assert find_derivations(model.proto, {**pct, "C": specs["C"]}, set(TENSORS)) == {}
    assert set(find_derivations(model.proto, {**specs, "C": pct["C"]}, set(TENSORS))) == DERIVED  # minmax from hist


def test_derived_minmax_equals_direct_and_real_values(tmp_path, monkeypatch):
    model, x, direct, derived = _both(tmp_path, "minmax", monkeypatch)
    vals = _values(model, x)
    assert float(np.abs(vals["C"]).max()) > 3.0  # Sigmoid / Tanh well into their curved range
    for t in TENSORS[1:]:
        a, b = direct.observers[t], derived.observers[t]
        assert [float(v) for v in a.compute_range()] == [float(v) for v in b.compute_range()], t
        assert a.qparams().scale == b.qparams().scale and a.qparams().zero_point == b.qparams().zero_point, t
        assert (a.count, a.nonfinite) == (b.count, b.nonfinite), t
        assert float(b.compute_range()[1]) == float(vals[t].max()), t
        assert float(b.compute_range()[0]) == float(vals[t].min()), t
    assert float(derived.observers["R"].compute_range()[0]) == 0.0  # Relu of negative data: exactly 0


def test_derived_minmax_from_a_histogram_source_is_exact(tmp_path, monkeypatch):
    model, x, direct, derived = _both(tmp_path, "minmax", monkeypatch, source="entropy")
    for t in DERIVED:
        assert [float(v) for v in direct.observers[t].compute_range()] == \
               [float(v) for v in derived.observers[t].compute_range()], t


def test_derived_minmax_in_saturation_within_ulps(tmp_path, monkeypatch):
    """onnxruntime's Sigmoid / Tanh kernels are not monotonic in the last ulp where they saturate
    (Tanh gives -1.0000001 for some inputs and -1.0 for smaller ones), so max f(x_i) may differ from
    f(max x_i) by an ulp or two there; everything else is exact."""
    model, x, direct, derived = _both(tmp_path, "minmax", monkeypatch, spread=3.0)
    for t in TENSORS[1:]:
        ra, rb = (np.array([float(v) for v in o.observers[t].compute_range()]) for o in (direct, derived))
        tol = 2 * np.spacing(np.float32(1.0)) if t in ("S", "T") else 0.0
        assert np.abs(ra - rb).max() <= tol, t


@pytest.mark.parametrize("observer", ["percentile", "entropy", "mse"])
def test_derived_histograms_match_direct(tmp_path, monkeypatch, observer):
    model, x, direct, derived = _both(tmp_path, observer, monkeypatch)
    vals = _values(model, x)
    for t in DERIVED:
        a, b = direct.observers[t], derived.observers[t]
        ha, hb = a.hists[0], b.hists[0]
        assert (hb.vmin, hb.vmax) == (ha.vmin, ha.vmax) and hb.total == ha.total == vals[t].size, t
        # the pushed-forward histogram: its CDF at every bin edge is the real one within one bin of y
        # (horizontally) and the count of one bin of x (vertically; values inside a bin are spread)
        tol = derived.observers["C"].hists[0].counts.max()
        real = np.searchsorted(np.sort(vals[t]), hb.edges, side="left")
        cdf = np.concatenate([[0], np.cumsum(hb.counts)])
        lower, upper = np.concatenate([[0], real[:-1]]), np.concatenate([real[1:], [real[-1]]])
        assert np.all(cdf >= lower - tol) and np.all(cdf <= upper + tol), t
        if observer == "percentile":  # both within about one (direct) bin of numpy's exact percentile
            exact = np.percentile(vals[t].astype(np.float64), [0.001, 99.999])
            got = np.array([float(v) for v in b.compute_range()])
            assert np.abs(got - exact).max() <= 1.5 * ha.width, t
        else:
            ra, rb = (np.array([float(v) for v in o.compute_range()]) for o in (a, b))
            assert np.abs(ra - rb).max() <= 0.05 * (ha.vmax - ha.vmin), t
    for t in set(TENSORS) - DERIVED:  # the rest is untouched
        assert [float(v) for v in direct.observers[t].compute_range()] == \
               [float(v) for v in derived.observers[t].compute_range()], t


def test_nonfinite_source_marks_derived_tensor(tmp_path, monkeypatch):
    model = prepare_proto(_model())
    path, x = _data(tmp_path)
    x[5, 0, 0, 0] = np.nan
    np.savez(path, X=x)
    res = calibrate(model, _plan("minmax"), open_data(path, model), batch_size=4)
    rows = {t: [(s, c) for tt, s, c in res.nonfinite if tt == t] for t in ("C", "S", "R")}
    assert rows["C"] and rows["S"] == rows["C"] and rows["R"] == rows["C"]
    assert res.observers["S"].nonfinite == res.observers["C"].nonfinite > 0
    assert np.isfinite(res.qparams()["S"].scale)


def test_from_cdf_identity_and_monotone_map():
    rng = np.random.default_rng(3)
    v = rng.standard_normal(5000)
    h = StreamingHistogram(64)
    h.add(v.astype(np.float32), float(v.astype(np.float32).min()), float(v.astype(np.float32).max()))
    cdf = np.concatenate([[0], np.cumsum(h.counts)])
    same = StreamingHistogram.from_cdf(np.clip(h.edges, h.vmin, h.vmax), cdf, 64)
    np.testing.assert_array_equal(same.counts, h.counts)  # identical layout: counts unchanged
    lin = StreamingHistogram.from_cdf(2.0 * np.clip(h.edges, h.vmin, h.vmax) + 1.0, cdf, 64)
    np.testing.assert_array_equal(lin.counts, h.counts)  # affine map: same bins, scaled
    assert (lin.vmin, lin.vmax) == (2.0 * h.vmin + 1.0, 2.0 * h.vmax + 1.0)


def test_refused_derivation_falls_back_to_fetching(tmp_path, monkeypatch, caplog):
    from workbench.core.calibration.observers import derived as derived_mod

    def refuse(self, proto):
        raise RuntimeError("no kernel")

    monkeypatch.setattr(derived_mod.Deriver, "_build", refuse)
    model, x, direct, derived = _both(tmp_path, "minmax", monkeypatch)
    assert "Derived observers disabled" in caplog.text
    for t in TENSORS[1:]:
        assert [float(v) for v in direct.observers[t].compute_range()] == \
               [float(v) for v in derived.observers[t].compute_range()], t


def test_the_derived_session_runs_on_one_thread():
    """The cones run once on a few points: a second intra-op thread only cost its start and its spinning."""
    model = prepare_proto(_model())
    specs = _plan("minmax").activations
    deriver = Deriver(model.proto, find_derivations(model.proto, specs, set(TENSORS)))
    assert set(deriver.derivations) == DERIVED
    assert deriver._session.get_session_options().intra_op_num_threads == 1
