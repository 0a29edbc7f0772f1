"""Bias correction's input means are streamed: onnxruntime runs each batch in slices of rows no larger
than ``RUN_BYTES`` fetched (an 8-row batch of ppocrv4_rec's 38 Conv inputs was 166 MiB in one run), and
the float64 sums are the same bits as summing whole batches, so the corrected model does not change."""

from __future__ import annotations

import threading

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core.formats.numerics import dequantize, quantize
from workbench.core.formats.qparams import QParams
from workbench.core.runtime import run_ahead
from workbench.core.transforms import bias_correction
from workbench.core.transforms.bias_correction import input_means

_MAKE_SESSION = bias_correction.make_session
_QP = QParams(np.array(0.05, np.float32), np.array(7, np.uint8), "uint8")


def _relu_conv_model() -> onnx.ModelProto:
    """x -> Relu -> r -> Conv -> y, spatial axes dynamic: ``r`` is the Conv input whose mean is taken."""
    w = np.random.default_rng(0).normal(size=(2, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, None, None])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _whole_batch_means(batches: list[np.ndarray]) -> dict:
    """The means as summing each whole batch at once gives them: float64 sum over axis 0 of the batch,
    added to the total; a batch of another spatial size adds its rows' spatial means to the total's."""
    sums: dict = {}
    counts: dict = {}
    for x in batches:
        r = np.maximum(x, 0)
        for key, a in (("r", r), (("r", "rounded"), dequantize(quantize(r, _QP), _QP))):
            a = np.asarray(a, np.float64)
            m, prev = a.sum(axis=0, keepdims=True), sums.get(key)
            if prev is not None and prev.shape != m.shape:
                m = a.mean(axis=(2, 3), keepdims=True).sum(axis=0, keepdims=True)
                prev = prev.mean(axis=(2, 3), keepdims=True)
            sums[key] = m if prev is None else prev + m
            counts[key] = counts.get(key, 0) + a.shape[0]
    return {k: s / counts[k] for k, s in sums.items()}


class _Recorder:
    """Wraps a session and records the rows of each run's feed."""

    def __init__(self, sess, rows: list[int]):
        self.sess, self.rows = sess, rows

    def run(self, names, feed):
        self.rows.append(feed["x"].shape[0])
        return self.sess.run(names, feed)


def _batches(rng) -> list[np.ndarray]:
    # long-tailed values over many magnitudes, so the float64 sums round and their order shows
    def batch(n, h, w):
        return (rng.normal(size=(n, 3, h, w)) * np.exp(rng.uniform(-25, 25, (n, 3, h, w)))).astype(np.float32)
    return [batch(8, 6, 5), batch(8, 6, 5), batch(3, 6, 5), batch(8, 4, 7), batch(1, 6, 5)]


def _means_with_runs(monkeypatch, batches, run_bytes: int) -> tuple[dict, list[int]]:
    rows: list[int] = []
    monkeypatch.setattr(bias_correction, "make_session", lambda *a, **k: _Recorder(_MAKE_SESSION(*a, **k), rows))
    monkeypatch.setattr(bias_correction, "RUN_BYTES", run_bytes)
    means = input_means(_relu_conv_model(), ["r"], [{"x": x} for x in batches], {"r": _QP})
    return means, rows


def test_each_run_fetches_at_most_run_bytes_and_the_means_are_the_whole_batch_bits(monkeypatch):
    batches = _batches(np.random.default_rng(3))
    row_bytes = 3 * 6 * 5 * 4  # one row of r, float32
    means, rows = _means_with_runs(monkeypatch, batches, 3 * row_bytes)
    # the first row alone sets the slice (3 rows of 360 bytes), then every batch runs in slices of 3
    assert rows == [1, 3, 3, 1, 3, 3, 2, 3, 3, 3, 2, 1]
    expected = _whole_batch_means(batches)
    assert set(means) == set(expected) == {"r", ("r", "rounded")}
    for k in expected:
        assert means[k].shape == expected[k].shape == (1, 3, 1, 1)  # the 4x7 batch: spatial means
        assert means[k].tobytes() == expected[k].tobytes(), k


def test_row_by_row_runs_give_the_same_bits_as_whole_batches(monkeypatch):
    batches = _batches(np.random.default_rng(4))[:3]  # one spatial size: per-position means
    one, rows_one = _means_with_runs(monkeypatch, batches, 1)
    whole, rows_whole = _means_with_runs(monkeypatch, batches, 1 << 30)
    assert rows_one == [1] * 19
    assert rows_whole == [1, 7, 8, 3]
    expected = _whole_batch_means(batches)
    for k in expected:
        assert one[k].shape == (1, 3, 6, 5)
        assert one[k].tobytes() == whole[k].tobytes() == expected[k].tobytes(), k


def test_runs_ahead_on_a_helper_thread_give_the_slices_and_bits_of_runs_in_turn(monkeypatch):
    """The float run of the next slice overlaps the sums of this one (run_ahead): the same slices, in the same
    order, and the same bits as running each slice only when the one before is summed."""
    batches = _batches(np.random.default_rng(5))
    threads: list[str] = []
    real_run = _Recorder.run

    def run(self, names, feed):
        threads.append(threading.current_thread().name)
        return real_run(self, names, feed)
    monkeypatch.setattr(_Recorder, "run", run)
    monkeypatch.setattr(run_ahead, "MIN_OVERLAP_SECONDS", 0.0)
    ahead, rows_ahead = _means_with_runs(monkeypatch, batches, 3 * 3 * 6 * 5 * 4)
    assert threads[0] == threading.current_thread().name and len(threads) == 12
    assert all(t.startswith("workbench-ahead") for t in threads[1:])
    monkeypatch.setattr(run_ahead, "PIPELINE", False)
    in_turn, rows_in_turn = _means_with_runs(monkeypatch, batches, 3 * 3 * 6 * 5 * 4)
    assert rows_ahead == rows_in_turn == [1, 3, 3, 1, 3, 3, 2, 3, 3, 3, 2, 1]
    assert set(ahead) == set(in_turn) == {"r", ("r", "rounded")}
    for k in in_turn:
        assert ahead[k].tobytes() == in_turn[k].tobytes(), k


def _slow_means(a_slices: list[np.ndarray], qp: QParams) -> np.ndarray:
    """The rounded mean summed row by row (every slice its own batch), without tables."""
    sums = bias_correction._Sums()
    for a in a_slices:
        sums.add("k", bias_correction._rounded(a, qp))
        sums.end_batch()
    return sums.means()["k"]


def _grids() -> list[QParams]:
    return [_QP, QParams(np.array(1e-4, np.float32), np.array(0, np.int8), "int8"),
            QParams(np.array(3.3e-3, np.float32), np.array(30001, np.uint16), "uint16"),
            QParams(np.array(0.7, np.float32), np.array(-5, np.int16), "int16"),
            QParams(np.array(1e-40, np.float32), np.array(128, np.uint8), "uint8")]  # a subnormal scale


def test_grid_tables_sum_slices_at_once_to_the_bits_of_rounded_rows_summed_one_by_one():
    rng = np.random.default_rng(11)
    x = (rng.normal(size=(12, 3, 5, 4)) * np.exp(rng.uniform(-12, 12, (12, 3, 5, 4)))).astype(np.float32)
    x[0, 0, 0, :3] = [np.nan, np.inf, -np.inf]
    for qp in _grids():
        table = bias_correction._Table.of(qp)
        assert table is not None and table.values.size == qp.qt.qmax - qp.qt.qmin + 1
        rounded = bias_correction._rounded(x, qp)
        assert np.array_equal(table.values[np.searchsorted(table.values, rounded)], rounded)  # values: the rounded ones
        sums = bias_correction._Sums()
        for part in (x[:5], x[5:6], x[6:]):  # one batch in three slices
            assert sums.add_exact("k", part, table)
        sums.end_batch()
        assert sums.add_exact("k", x[:3], table)  # a second batch
        sums.end_batch()
        slow = bias_correction._Sums()
        for part in (x, x[:3]):
            slow.add("k", rounded[:part.shape[0]] if part is x else bias_correction._rounded(part, qp))
            slow.end_batch()
        assert sums.means()["k"].tobytes() == slow.means()["k"].tobytes(), qp
        assert sums.counts["k"] == 15
    # a batch of another spatial size is summed row by row (spatial means), as without tables
    sums = bias_correction._Sums()
    table = bias_correction._Table.of(_QP)
    assert sums.add_exact("k", x[:4], table)
    sums.end_batch()
    assert not sums.add_exact("k", x[:2, :, :3], table) and sums.counts["k"] == 4


def test_grids_without_an_exact_table_are_rounded_row_by_row():
    assert bias_correction._Table.of(QParams(np.array(0.1, np.float32), np.array(0, np.int32), "int32")) is None
    per_channel = QParams(np.array([0.1, 0.2], np.float32), np.array([0, 0], np.uint8), "uint8", 0)
    assert bias_correction._Table.of(per_channel) is None
    table = bias_correction._Table.of(QParams(np.array(2.0 ** 100, np.float32), np.array(0, np.uint16), "uint16"))
    assert table is not None and table.rows == 2 ** 53 // (65535 * 2 ** 23)  # rows whose sums stay exact
    sums = bias_correction._Sums()
    big = np.zeros((table.rows + 1, 1, 1, 1), np.float32)
    assert not sums.add_exact("k", big, table) and "k" not in sums.counts


def _summed(x: np.ndarray, qp: QParams) -> dict:
    """Means of ``x`` and of it rounded on ``qp``, in two batches of slices through ``_Sums``."""
    sums, table = bias_correction._Sums(), bias_correction._Table.of(qp)
    for batch in (x[:7], x[7:]):
        for part in (batch[:1], batch[1:3], batch[3:]):
            sums.add("x", part)
            assert sums.add_exact("q", part, table)
        sums.end_batch()
    return sums.means()


def test_the_compiled_loops_add_the_bits_numpy_adds(monkeypatch):
    rng = np.random.default_rng(5)
    x = (rng.normal(size=(12, 3, 5, 4)) * np.exp(rng.uniform(-30, 30, (12, 3, 5, 4)))).astype(np.float32)
    x[0, 0, 0, :3] = [np.nan, np.inf, -np.inf]
    x[1, 1, 1, :4] = [-0.0, 1e-45, -1e-45, 3e38]
    x[2, 2] = -1e-6  # rounds to -0 on most grids
    monkeypatch.setattr(bias_correction, "KERNEL_MIN_SIZE", 1)
    for qp in _grids():
        monkeypatch.setattr(bias_correction, "KERNELS", False)
        slow = _summed(x, qp)
        monkeypatch.setattr(bias_correction, "KERNELS", None)
        fast = _summed(x, qp)
        assert bias_correction.KERNELS not in (None, False)  # the loops ran
        for key in ("x", "q"):
            assert fast[key].tobytes() == slow[key].tobytes(), (qp, key)
