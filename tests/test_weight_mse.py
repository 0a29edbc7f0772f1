"""MSE weight ranges searched exactly on the weight values (workbench.core.writers.weight_mse)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import quantize_tiny, run

from workbench.core.calibration.observers import make_observer
from workbench.core.formats.numerics import compute_qparams, dequantize, quantize, sqnr_db
from workbench.core.recipe.spec import Granularity, PartialSpec, QuantSpec, Rule
from workbench.core.writers.weight_mse import FRACTIONS, mse_weight_qparams

SPEC = QuantSpec(dtype="int8", symmetric=True, granularity=Granularity.per_channel, axis=0)


def _weight(seed: int = 0) -> np.ndarray:
    """``(8, 64, 3, 3)`` Laplace weights (heavy tails: MinMax's step is set by a few large values)."""
    return np.random.default_rng(seed).laplace(0, 0.05, (8, 64, 3, 3)).astype(np.float32)


def _channel_err(w: np.ndarray, qp) -> np.ndarray:
    """Squared rounding error of each output channel (numpy QuantizeLinear / DequantizeLinear)."""
    return np.square(dequantize(quantize(w, qp), qp).astype(np.float64) - w).reshape(w.shape[0], -1).sum(axis=1)


def _brute(w: np.ndarray, fractions: np.ndarray) -> np.ndarray:
    """Per channel, the smallest squared error over ``fractions`` of MinMax (one compute_qparams each)."""
    lo, hi = w.reshape(8, -1).min(axis=1), w.reshape(8, -1).max(axis=1)
    return np.min([_channel_err(w, compute_qparams(lo * f, hi * f, "int8", symmetric=True, axis=0))
                   for f in fractions], axis=0)


def test_each_channel_gets_the_smallest_error_of_the_grid_and_never_more_than_minmax():
    w = _weight()
    qp = mse_weight_qparams(w, SPEC)
    got = _channel_err(w, qp)
    minmax = _brute(w, np.array([1.0]))
    fine = _brute(w, np.round(np.arange(1.0, 0.1999, -0.0025), 4))
    assert np.all(got <= _brute(w, FRACTIONS) * (1 + 1e-5))  # at least the coarse grid's best
    assert np.all(got <= fine * 1.05)  # within 5 % of a grid 4x finer everywhere (here at most 0.3 %)
    assert np.all(got <= minmax) and (got < 0.95 * minmax).sum() >= 3  # clipping the tails: up to 8 % less
    scale = np.asarray(qp.scale)
    assert scale.shape == (8,) and np.all(scale < np.abs(w).reshape(8, -1).max(axis=1) / 127)


def test_a_channel_minmax_rounds_best_keeps_minmax_exactly():
    w = (np.arange(-127, 128, dtype=np.float32) * 0.01).reshape(1, 255)  # every value on MinMax's grid
    qp = mse_weight_qparams(w, SPEC)
    np.testing.assert_array_equal(qp.scale, compute_qparams(w.min(axis=1), w.max(axis=1), "int8",
                                                            symmetric=True, axis=0).scale)
    assert _channel_err(w.reshape(1, 255), qp)[0] == 0.0


def test_smaller_error_than_the_histogram_observer():
    w = _weight(1)
    obs = make_observer(SPEC.model_copy(update={"observer": "mse"}), axis=0, name="W")
    obs.update(w)
    hist = _channel_err(w, obs.qparams()).sum()
    assert _channel_err(w, mse_weight_qparams(w, SPEC)).sum() < 0.997 * hist  # here 0.6 % less


def test_writer_uses_the_exact_search_for_a_weight_observer_mse():
    w = _weight(2)
    g = helper.make_graph([helper.make_node("Conv", ["X", "W"], ["Y"], name="conv", pads=[1, 1, 1, 1])], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 64, 6, 6])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 8, 6, 6])],
                          [numpy_helper.from_array(w, "W")])
    proto = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    feeds = {"X": np.random.default_rng(3).standard_normal((1, 64, 6, 6)).astype(np.float32)}
    model, _, res = quantize_tiny(proto, feeds, rules=[Rule(op_type="Conv", weight=PartialSpec(observer="mse"))])
    inits = {i.name: numpy_helper.to_array(i) for i in res.proto.graph.initializer}
    want = mse_weight_qparams(w, SPEC)
    np.testing.assert_array_equal(inits["W_scale"], want.scale)
    np.testing.assert_array_equal(inits["W_quantized"], quantize(w, want))
    onnx.checker.check_model(res.proto)
    _, _, mm = quantize_tiny(proto, feeds)
    assert np.all(numpy_helper.to_array(next(i for i in mm.proto.graph.initializer if i.name == "W_scale"))
                  >= want.scale)  # MinMax's grid spans the tails
    f, q = run(model.proto, feeds)["Y"], run(res.proto, feeds)["Y"]
    assert 20 < sqnr_db(f, q) < 60  # onnxruntime runs it
