"""Calibration runner: ranges against the float model's real values, progress, cancel, reuse,
caches, non-finite bookkeeping, large-model path."""

from __future__ import annotations

import json
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from workbench.core.calibration import calibrate as calib_mod
from workbench.core.calibration import instrument as instr_mod
from workbench.core.calibration.calibrate import CalibrationResult, calibrate
from workbench.core.calibration.instrument import instrument, output_infos
from workbench.core.data.loader import open_data
from workbench.core.errors import CalibrationError, Cancelled
from workbench.core.model.load import prepare_proto
from workbench.core.progress import CancelToken
from workbench.core.recipe.spec import QuantSpec

TENSORS = ["X", "C", "R", "M", "Y"]


class Plan:
    """Minimal plan: only ``activations`` is read by calibrate."""

    def __init__(self, activations):
        self.activations = activations


def _plan(observer="minmax", tensors=TENSORS, **kw):
    return Plan({t: QuantSpec(dtype="uint8", symmetric=False, observer=observer, **kw) for t in tensors})


def _model(batch="N"):
    """X[N,3,6,6] -> Conv -> C -> Relu -> R -> Flatten -> MatMul -> M -> Add -> Y."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.5, "W")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "B")
    wm = numpy_helper.from_array(rng.standard_normal((64, 5)).astype(np.float32) * 0.2, "WM")
    bias = numpy_helper.from_array(np.linspace(-1, 1, 5, dtype=np.float32), "BM")
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["C"], name="conv"),
             helper.make_node("Relu", ["C"], ["R"], name="relu"),
             helper.make_node("Flatten", ["R"], ["F"], name="flat"),
             helper.make_node("MatMul", ["F", "WM"], ["M"], name="mm"),
             helper.make_node("Add", ["M", "BM"], ["Y"], name="add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [batch, 3, 6, 6])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [batch, 5])], [w, b, wm, bias])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _data(tmp_path, n=10, seed=1, scale=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3, 6, 6)).astype(np.float32)
    if scale is not None:
        x *= np.asarray(scale, np.float32).reshape(n, 1, 1, 1)
    path = tmp_path / "calib.npz"
    np.savez(path, X=x)
    return path, x


def _reference_ranges(proto, x):
    """min / max of every tensor over all samples, from onnx.reference run one sample at a time."""
    ref = ReferenceEvaluator(proto)
    lo, hi = {}, {}
    for i in range(len(x)):
        vals = ref.run(None, {"X": x[i:i + 1]}, intermediate=True)
        vals["X"] = x[i:i + 1]
        for t in TENSORS:
            lo[t] = min(lo.get(t, np.inf), float(np.min(vals[t])))
            hi[t] = max(hi.get(t, -np.inf), float(np.max(vals[t])))
    return lo, hi


@pytest.mark.parametrize("batch_size", [None, 1, 3, 32])
def test_minmax_ranges_equal_float_model_values(tmp_path, batch_size):
    proto = _model()
    model = prepare_proto(proto)
    path, x = _data(tmp_path)
    res = calibrate(model, _plan(), open_data(path, model), batch_size=batch_size)
    lo, hi = _reference_ranges(proto, x)
    assert res.samples_seen == 10 and set(res.observers) == set(TENSORS)
    for t in TENSORS:
        rmin, rmax = res.observers[t].compute_range()
        assert float(rmin) == pytest.approx(lo[t], rel=1e-5, abs=1e-5), t
        assert float(rmax) == pytest.approx(hi[t], rel=1e-5, abs=1e-5), t
    assert res.observers["X"].count == x.size  # graph input observed from the feed, every sample once
    assert res.observers["C"].count == 10 * 4 * 4 * 4
    assert res.nonfinite == [] and res.empty == []


def test_sample_limit_and_progress_monotonic(tmp_path):
    model = prepare_proto(_model())
    path, x = _data(tmp_path, n=10)
    calls = []
    res = calibrate(model, _plan(), open_data(path, model), samples=7, batch_size=2,
                    progress=lambda d, t, m: calls.append((d, t, m)))
    done = [d for d, _, _ in calls]
    assert done == [0, 2, 4, 6, 7]  # the phase is announced at 0 before the first batch runs
    assert all(t == 7 for _, t, _ in calls) and "5 tensors" in calls[0][2]
    assert res.samples_seen == 7
    lo, hi = _reference_ranges(_model(), x[:7])
    assert float(res.observers["Y"].compute_range()[1]) == pytest.approx(hi["Y"], rel=1e-5)


def test_default_batch_probe_covers_every_sample_once(tmp_path):
    model = prepare_proto(_model())
    path, x = _data(tmp_path, n=9)
    res = calibrate(model, _plan(), open_data(path, model))
    assert res.samples_seen == 9 and res.batch_size == calib_mod.MAX_BATCH
    assert res.observers["X"].count == x.size
    assert res.observers["M"].count == 9 * 5


def test_histogram_observers_run(tmp_path):
    model = prepare_proto(_model())
    path, x = _data(tmp_path)
    lo, hi = _reference_ranges(_model(), x)
    for obs in ("percentile", "entropy", "mse"):
        res = calibrate(model, _plan(obs), open_data(path, model), batch_size=4)
        for t in TENSORS:
            rmin, rmax = res.observers[t].compute_range()
            assert lo[t] - 1e-5 <= float(rmin) <= float(rmax) <= hi[t] + 1e-5, (obs, t)
        assert all(np.isfinite(q.scale).all() and (q.scale > 0).all() for q in res.qparams().values())


def test_cancel_from_progress_raises_and_leaves_previous_untouched(tmp_path):
    model = prepare_proto(_model())
    path, _ = _data(tmp_path)
    previous = calibrate(model, _plan(tensors=["X", "C"]), open_data(path, model))
    before = json.dumps(previous.to_json(), sort_keys=True)
    token = CancelToken()
    seen = []

    def progress(done, total, msg):
        seen.append(done)
        if done:  # after the announcement (0), at the first batch
            token.cancel()

    with pytest.raises(Cancelled):
        calibrate(model, _plan("percentile"), open_data(path, model), batch_size=2, progress=progress,
                  cancel=token, previous=previous)
    assert seen == [0, 2]  # stopped after the first batch
    assert json.dumps(previous.to_json(), sort_keys=True) == before


def _slow_model():
    """A chain of large MatMuls: one run takes long enough to be cancelled while it runs."""
    w = numpy_helper.from_array(np.eye(768, dtype=np.float32), "W")
    nodes, cur = [], "X"
    for i in range(60):
        nodes.append(helper.make_node("MatMul", [cur, "W"], [f"T{i}"], name=f"mm{i}"))
        cur = f"T{i}"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 512, 768])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, 512, 768])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_cancel_during_a_run_terminates_it(tmp_path):
    model = prepare_proto(_slow_model())
    np.savez(tmp_path / "d.npz", X=np.ones((2, 1, 512, 768), np.float32))
    token = CancelToken()
    timer = threading.Timer(0.05, token.cancel)
    timer.start()
    try:
        with pytest.raises(Cancelled):
            calibrate(model, Plan({"T0": QuantSpec(), "T59": QuantSpec()}), open_data(tmp_path / "d.npz", model),
                      cancel=token)
    finally:
        timer.cancel()


def test_reuse_previous_runs_only_missing_tensors(tmp_path, monkeypatch):
    model = prepare_proto(_model())
    path, _ = _data(tmp_path)
    first = calibrate(model, _plan(), open_data(path, model))
    fetched = []
    real = calib_mod.instrument

    def spy(proto, tensors, **kw):
        fetched.append(list(tensors))
        return real(proto, tensors, **kw)

    monkeypatch.setattr(calib_mod, "instrument", spy)
    same = calibrate(model, _plan(), open_data(path, model), previous=first)
    assert fetched == [] and sorted(same.reused) == sorted(TENSORS)
    assert same.samples_seen == first.samples_seen
    for t in TENSORS:
        assert same.observers[t].state() == first.observers[t].state()
        assert same.observers[t] is not first.observers[t]

    changed = _plan()
    changed.activations["R"] = QuantSpec(dtype="int8", symmetric=True, observer="entropy")
    part = calibrate(model, changed, open_data(path, model), previous=first)
    assert fetched == [["R"]]
    assert sorted(part.reused) == ["C", "M", "X", "Y"]
    assert part.observers["R"].spec.observer == "entropy" and part.observers["R"].count == 10 * 64


def test_json_round_trip(tmp_path):
    model = prepare_proto(_model())
    path, _ = _data(tmp_path)
    plan = _plan()
    plan.activations["M"] = QuantSpec(observer="percentile", observer_args={"percentile": 99.9})
    res = calibrate(model, plan, open_data(path, model))
    back = CalibrationResult.from_json(json.loads(json.dumps(res.to_json(), allow_nan=False)))
    assert back.samples_seen == res.samples_seen and back.seconds == res.seconds
    for t, qp in res.qparams().items():
        q2 = back.qparams()[t]
        np.testing.assert_array_equal(qp.scale, q2.scale)
        np.testing.assert_array_equal(qp.zero_point, q2.zero_point)
    with pytest.raises(CalibrationError):
        CalibrationResult.from_json({"nothing": 1})


def test_nonfinite_counted_per_sample_in_batches(tmp_path, caplog):
    model = prepare_proto(_model())
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 3, 6, 6)).astype(np.float32)
    x[1, 0, 2, 2] = np.nan
    x[4, 2, 0, 1] = np.inf
    x[4, 1, 0, 1] = -np.inf
    np.savez(tmp_path / "d.npz", X=x)
    res = calibrate(model, _plan(), open_data(tmp_path / "d.npz", model), batch_size=3)
    rows = {(t, s): c for t, s, c in res.nonfinite}
    assert rows[("X", 1)] == 1 and rows[("X", 4)] == 2
    assert {s for t, s, _ in res.nonfinite} == {1, 4}
    finite = x[np.isfinite(x)]
    rmin, rmax = res.observers["X"].compute_range()
    assert float(rmin) == finite.min() and float(rmax) == finite.max()
    assert all(np.isfinite(q.scale).all() and (q.scale > 0).all() for q in res.qparams().values())
    data_line, reached = res.warnings  # the data's bad samples once, then every tensor they reach in one line
    assert data_line == "input 'X' of the calibration data holds NaN/Inf: sample 1 (1), sample 4 (2). Check the " \
        "calibration data."
    head = "NaN/Inf of the calibration data left out of the ranges of the 5 tensors they reach: "
    assert reached.startswith(head) and sorted(reached[len(head):-1].split(", ")) == sorted(TENSORS)
    again = calibrate(model, _plan(), open_data(tmp_path / "d.npz", model), previous=res)
    assert again.nonfinite == res.nonfinite and again.reused  # reused observers keep their remarks


def test_large_model_path_through_external_data(tmp_path, monkeypatch):
    monkeypatch.setattr(instr_mod, "MAX_PROTO_BYTES", 0)
    made = []
    real = instr_mod.instrument

    def spy(*a, **kw):
        s = real(*a, **kw)
        made.append(s)
        return s

    monkeypatch.setattr(calib_mod, "instrument", spy)
    proto = _model()
    model = prepare_proto(proto)
    path, x = _data(tmp_path)
    res = calibrate(model, _plan(), open_data(path, model))
    lo, hi = _reference_ranges(proto, x)
    assert float(res.observers["M"].compute_range()[0]) == pytest.approx(lo["M"], rel=1e-5, abs=1e-6)
    assert made and made[0]._tmpdir is None  # closed: folder removed


def test_untyped_outputs_and_int_tensors():
    """An output whose type is unknown is left untyped; onnxruntime infers int64 itself."""
    nodes = [helper.make_node("Relu", ["X"], ["R"]), helper.make_node("Cast", ["R"], ["I"], to=TensorProto.INT64),
             helper.make_node("Cast", ["I"], ["Y"], to=TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    infos = output_infos(m, ["R", "I", "Y"])
    assert [i.name for i in infos] == ["R", "I"] and not infos[0].type.HasField("tensor_type")
    with instrument(m, ["R", "I"]) as s:
        r, i = s.run({"X": np.array([1.5, -2], np.float32)})
    assert i.dtype == np.int64 and i.tolist() == [1, 0] and r.tolist() == [1.5, 0.0]
    typed = output_infos(onnx.shape_inference.infer_shapes(m), ["I"])
    assert typed[0].type.tensor_type.elem_type == TensorProto.INT64


def test_tensor_outside_main_graph_is_a_clear_error(tmp_path):
    model = prepare_proto(_model())
    path, _ = _data(tmp_path)
    with pytest.raises(CalibrationError, match="then_inner"):
        calibrate(model, Plan({"then_inner": QuantSpec()}), open_data(path, model))


def test_pipeline_holds_at_most_two_batches(tmp_path, monkeypatch):
    """One batch is observed while the next runs: when run k + 1 starts (batch k still being
    observed), no output of run k - 1 is alive. The loop used to keep batch k - 1 until batch k
    arrived, three batches at once. Each observation waits until the next run has started, so
    the count does not depend on thread timing."""
    import threading
    import weakref

    model = prepare_proto(_model())
    path, _ = _data(tmp_path, n=12)
    monkeypatch.setattr(calib_mod, "MIN_OVERLAP_SECONDS", 0.0)
    runs: list[list[weakref.ref]] = []
    alive_at_start: list[int] = []
    started = [threading.Event() for _ in range(8)]
    real_run, real_observe = instr_mod.InstrumentedSession.run, calib_mod._Run._observe

    def run(self, feed, run_options=None):
        alive_at_start.append(sum(any(r() is not None for r in refs) for refs in runs))
        started[len(alive_at_start) - 1].set()
        outs = real_run(self, feed, run_options)
        runs.append([weakref.ref(a) for a in outs])
        return outs

    def observe(self, idx, feed, outs):
        k = idx[0] // 2  # batch k (0-based); run k + 1 is started before batch k is handed over
        if 1 <= k < 5:  # batch 0 ran on this thread, run 1 starts after it
            assert started[k + 1].wait(10)
        real_observe(self, idx, feed, outs)

    monkeypatch.setattr(instr_mod.InstrumentedSession, "run", run)
    monkeypatch.setattr(calib_mod._Run, "_observe", observe)
    res = calibrate(model, _plan(), open_data(path, model), batch_size=2)
    assert res.samples_seen == 12 and len(runs) == 6
    # run 0 and 1 run in turn (the first is timed on this thread); from run 2 on, batch k - 1 is observed
    assert alive_at_start == [0, 0, 1, 1, 1, 1]


@pytest.mark.parametrize("observer", ["minmax", "percentile", "mse"])
@pytest.mark.parametrize("batch_size", [3, None])
def test_split_calibration_keeps_the_first_rows_and_equals_one_pass(tmp_path, observer, batch_size, monkeypatch):
    """calibrate_split(at=7) over 10 rows: the full result is one pass over the 10 rows (same
    qparams as calibrate), the first is a calibration of rows 0..6 (finished by merge_shards, it
    equals calibrate(samples=7)); a batch straddling row 7 is run as two."""
    from workbench.core.calibration.calibrate import calibrate_split, merge_shards

    proto = _model()
    model = prepare_proto(proto)
    path, x = _data(tmp_path, n=10)
    source = open_data(path, model)
    plan = _plan(observer)
    if batch_size is not None:
        monkeypatch.setattr(calib_mod, "MAX_BATCH", batch_size)  # batches 0 | 1-3 | 4-6 | 7-9 by default
    runs = []
    real_run = instr_mod.InstrumentedSession.run
    monkeypatch.setattr(instr_mod.InstrumentedSession, "run",
                        lambda self, feed, opts=None: runs.append(len(feed["X"])) or real_run(self, feed, opts))
    first, full = calibrate_split(model, plan, source, at=7)
    assert sum(runs) == 10 and full.samples_seen == 10 and first.samples_seen == 7
    assert 7 in [sum(runs[:i]) for i in range(len(runs) + 1)]  # a batch boundary at row 7
    monkeypatch.setattr(instr_mod.InstrumentedSession, "run", real_run)
    one = calibrate(model, plan, source)
    seven = calibrate(model, plan, source, samples=7)
    done = merge_shards(model, plan, [(0, first)])
    for t in TENSORS:
        for a, b in ((one, full), (seven, done)):
            assert b.observers[t].count == a.observers[t].count, t
            qa, qb = a.observers[t].qparams(), b.observers[t].qparams()
            if observer == "minmax":
                assert float(qb.scale) == float(qa.scale) and int(qb.zero_point) == int(qa.zero_point), t
            else:  # histogram observers: batch boundaries differ from one pass (rows 4-9 were 4-6 | 7-9)
                assert float(qb.scale) == pytest.approx(float(qa.scale), rel=0.02), t
    lo, hi = _reference_ranges(proto, x[:7])
    assert float(done.observers["Y"].compute_range()[1]) == pytest.approx(hi["Y"], rel=1e-5) or observer != "minmax"


def test_split_past_the_data_is_a_clear_error(tmp_path):
    from workbench.core.calibration.calibrate import calibrate_split

    model = prepare_proto(_model())
    path, _ = _data(tmp_path, n=10)
    with pytest.raises(CalibrationError, match="ended after 10 rows, before row 12"):
        calibrate_split(model, _plan(), open_data(path, model), at=12)


def _stacked(tmp_path, n=10, rows=2):
    """Samples of ``rows`` rows each (the model's batch axis is dynamic): x [n, rows, 3, 6, 6]."""
    x = np.random.default_rng(4).standard_normal((n, rows, 3, 6, 6)).astype(np.float32)
    x *= np.linspace(0.5, 3.0, n, dtype=np.float32).reshape(n, 1, 1, 1, 1)  # later samples wider
    path = tmp_path / "stacked.npz"
    np.savez(path, X=x)
    return path, x


def test_multi_row_samples_each_row_observed_once(tmp_path):
    """Sample 0 (run alone to size the batches) has two rows: both are skipped in the batch that
    follows, not only the first (which observed row 1 twice)."""
    model = prepare_proto(_model())
    path, x = _stacked(tmp_path)
    res = calibrate(model, _plan(), open_data(path, model))
    assert res.samples_seen == 10 and res.observers["X"].count == x.size
    assert res.observers["C"].count == 10 * 2 * 4 * 4 * 4


def test_split_keeps_multi_row_samples_whole(tmp_path):
    from workbench.core.calibration.calibrate import calibrate_split, merge_shards

    model = prepare_proto(_model())
    path, x = _stacked(tmp_path)
    source = open_data(path, model)
    first, full = calibrate_split(model, _plan(), source, at=5)
    done = merge_shards(model, _plan(), [(0, first)])
    five = calibrate(model, _plan(), source, samples=5)
    assert done.observers["X"].count == x[:5].size and full.observers["X"].count == x.size
    for t in TENSORS:
        assert [float(v) for v in done.observers[t].compute_range()] == \
            [float(v) for v in five.observers[t].compute_range()], t
    assert float(done.observers["X"].compute_range()[1]) == pytest.approx(float(x[:5].max()))
