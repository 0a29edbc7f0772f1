"""Quant numerics bit-exact against onnx.reference and onnxruntime (opset 21), and scale/zero-point
against onnxruntime's quantization helpers.

Every dtype x granularity: QuantizeLinear / DequantizeLinear run by ``onnx.reference`` on values
that hit rounding ties (x.5 steps, float8 midpoints) and saturation, compared bit for bit with
``workbench.core.formats.numerics``.
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnxruntime.quantization.quant_utils import compute_scale_zp, get_qmin_qmax_for_qType

from workbench.core.errors import RecipeError
from workbench.core.formats.numerics import (
    compute_qparams,
    dequantize,
    expand_param,
    fake_quantize,
    int_squared_error,
    qrange,
    quantize,
    sqnr_db,
)
from workbench.core.formats.qparams import QParams
from workbench.core.formats.qtypes import QTYPES, get_qtype

QDQ_DTYPES = ("int8", "uint8", "int16", "uint16", "int4", "uint4", "float8e4m3fn", "float8e5m2")
SHAPE = (5, 7, 6)
GRANULARITIES = [("per_tensor", None, None)] + [("per_channel", a, None) for a in (0, 1, 2, -1)] + [
    ("per_block", 0, 2), ("per_block", 1, 3), ("per_block", 2, 4), ("per_block", -2, 5)]


def _qdq_model(qt, scale, zp, axis, block_size, opset=21):
    attrs = {}
    if axis is not None:
        attrs["axis"] = axis
    if block_size:
        attrs["block_size"] = block_size
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], **attrs),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], **attrs)]
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("q", qt.onnx_type, None),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(scale.astype(np.float32), "s"),
         numpy_helper.from_array(zp.astype(qt.storage), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _ranges(rng, shape, symmetric):
    rmin = -rng.uniform(0.0, 4.0, shape).astype(np.float32)
    rmax = rng.uniform(0.0, 4.0, shape).astype(np.float32)
    if not symmetric and rmin.size > 1:  # ranges that exclude zero are widened to include it
        flat_min, flat_max = rmin.reshape(-1), rmax.reshape(-1)
        flat_min[0], flat_max[0] = 0.5, 3.0
        flat_min[-1], flat_max[-1] = -3.0, -0.25
    return rmin, rmax


def _param_shape(granularity, axis, block_size):
    if granularity == "per_tensor":
        return ()
    ax = axis % len(SHAPE)
    if granularity == "per_channel":
        return (SHAPE[ax],)
    blocked = list(SHAPE)
    blocked[ax] = -(-SHAPE[ax] // block_size)
    return tuple(blocked)


def _float8_grid(storage):
    """Non-negative finite values of a float8 type and the midpoints between neighbours (ties)."""
    vals = np.arange(256, dtype=np.uint8).view(storage).astype(np.float32)
    vals = np.unique(vals[np.isfinite(vals) & (vals >= 0)])
    return vals, ((vals[:-1] + vals[1:]) / 2).astype(np.float32)  # exact in float32


def _test_values(rng, qt, qp):
    """float32 values hitting ties and saturation for ``qp`` (shape SHAPE)."""
    scale = expand_param(qp.scale, SHAPE, qp.axis, qp.block_size)
    pick = rng.integers(0, 4, SHAPE)
    if qt.is_float:
        vals, mids = _float8_grid(qt.storage)
        sign = rng.choice([-1, 1], SHAPE)
        ties = rng.choice(mids, SHAPE) * sign
        sat = rng.choice([1.03, 1.5, 10.0], SHAPE) * qt.qmax * sign
        rand = rng.uniform(-qt.qmax, qt.qmax, SHAPE)
        exact = rng.choice(vals, SHAPE) * sign
        u = np.choose(pick, [ties, sat, rand, exact]).astype(np.float32)
        return (u * scale).astype(np.float32)
    zp = expand_param(qp.zero_point.astype(np.float64), SHAPE, qp.axis, qp.block_size)
    span = qt.qmax - qt.qmin
    ties = rng.integers(qt.qmin - 2, qt.qmax + 2, SHAPE) + 0.5
    sat = rng.uniform(qt.qmin - 3 * span, qt.qmax + 3 * span, SHAPE)
    rand = rng.uniform(qt.qmin, qt.qmax, SHAPE)
    exact = rng.integers(qt.qmin, qt.qmax + 1, SHAPE).astype(np.float64)
    u = np.choose(pick, [ties, sat, rand, exact])
    return ((u - zp) * scale).astype(np.float32)


def _bits(a):
    """Bit patterns (float8 / float32) or integer values, so NaN and -0 compare exactly."""
    a = np.asarray(a)
    if a.dtype in (np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)):
        return a.view(np.uint8)
    if a.dtype == np.float32:
        return a.view(np.uint32)
    return a.astype(np.int64)


@pytest.mark.parametrize("power_of_two", [False, True], ids=["scale", "pow2"])
@pytest.mark.parametrize("granularity,axis,block_size", GRANULARITIES,
                         ids=[f"{g}-{a}-{b}" for g, a, b in GRANULARITIES])
@pytest.mark.parametrize("dtype", QDQ_DTYPES)
def test_qdq_bit_exact_against_onnx_reference(dtype, granularity, axis, block_size, power_of_two):
    qt = get_qtype(dtype)
    rng = np.random.default_rng(zlib.crc32(repr((dtype, granularity, axis, block_size, power_of_two)).encode()))
    symmetric = bool(rng.integers(0, 2)) if qt.signed else False
    rmin, rmax = _ranges(rng, _param_shape(granularity, axis, block_size), symmetric)
    qp = compute_qparams(rmin, rmax, dtype, symmetric=symmetric, power_of_two=power_of_two,
                         axis=axis, block_size=block_size)
    x = _test_values(rng, qt, qp)
    q_ref, y_ref = ReferenceEvaluator(_qdq_model(qt, qp.scale, qp.zero_point, axis, block_size)).run(
        None, {"x": x})
    q = quantize(x, qp)
    assert q.dtype == qt.storage and q.shape == x.shape
    np.testing.assert_array_equal(_bits(q), _bits(q_ref))
    np.testing.assert_array_equal(_bits(dequantize(q, qp)), _bits(y_ref))
    np.testing.assert_array_equal(_bits(fake_quantize(x, qp)), _bits(y_ref))
    if not qt.is_float:  # the test really exercised ties (exact with power-of-two scales) and saturation
        y = x / expand_param(qp.scale, SHAPE, axis, block_size)
        assert not power_of_two or np.any(y - np.floor(y) == 0.5)
        assert np.any(q_ref.astype(np.int64) == qt.qmin) and np.any(q_ref.astype(np.int64) == qt.qmax)


@pytest.mark.parametrize("granularity,axis,block_size", GRANULARITIES,
                         ids=[f"{g}-{a}-{b}" for g, a, b in GRANULARITIES])
@pytest.mark.parametrize("dtype", QDQ_DTYPES)
def test_qdq_bit_exact_against_onnxruntime(dtype, granularity, axis, block_size):
    """Same values through onnxruntime's CPU kernels (int4 / float8e5m2 q cannot be fetched: y only)."""
    qt = get_qtype(dtype)
    rng = np.random.default_rng(zlib.crc32(repr(("ort", dtype, granularity, axis, block_size)).encode()))
    symmetric = bool(rng.integers(0, 2)) if qt.signed else False
    rmin, rmax = _ranges(rng, _param_shape(granularity, axis, block_size), symmetric)
    qp = compute_qparams(rmin, rmax, dtype, symmetric=symmetric, power_of_two=True, axis=axis,
                         block_size=block_size)
    x = _test_values(rng, qt, qp)
    sess = ort.InferenceSession(_qdq_model(qt, qp.scale, qp.zero_point, axis, block_size).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    fetch_q = qt.bits in (8, 16) and dtype != "float8e5m2"
    outs = sess.run(["q", "y"] if fetch_q else ["y"], {"x": x})
    np.testing.assert_array_equal(_bits(fake_quantize(x, qp)), _bits(outs[-1]))
    if fetch_q:
        np.testing.assert_array_equal(_bits(quantize(x, qp)), _bits(outs[0]))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int4", "uint4"])
def test_round_half_to_even_on_exact_ties(dtype):
    qt = get_qtype(dtype)
    qp = QParams(np.array(0.5, np.float32), np.array(0 if qt.signed else 2, qt.storage), dtype)
    x = np.array([0.25, 0.75, 1.25, -0.25, -0.75], np.float32)  # x / s = 0.5, 1.5, 2.5, -0.5, -1.5
    expect = np.clip(np.array([0, 2, 2, -0, -2]) + int(qp.zero_point), qt.qmin, qt.qmax)
    np.testing.assert_array_equal(quantize(x, qp).astype(np.int64), expect)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16"])
def test_saturation_of_inf_nan_and_huge_values_matches_onnxruntime(dtype):
    qt = get_qtype(dtype)
    qp = compute_qparams(-1.0, 3.0, dtype, symmetric=False)
    x = np.array([np.inf, -np.inf, np.nan, 1e30, -1e30, 3e9, -3e9, 0.0, 1.0, 2.9999], np.float32)
    sess = ort.InferenceSession(_qdq_model(qt, qp.scale, qp.zero_point, None, None).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    q_ort, y_ort = sess.run(None, {"x": x})
    np.testing.assert_array_equal(quantize(x, qp), q_ort)
    np.testing.assert_array_equal(_bits(fake_quantize(x, qp)), _bits(y_ort))


# --- scale / zero point against onnxruntime.quantization.quant_utils ----------------------------

ORT_CASES = [(d, s, r) for d in ("int8", "uint8", "int16", "uint16", "int4", "uint4")
             for s in (False, True) for r in (False, True)
             if not (r and get_qtype(d).bits != 8) and not (s and d in ("int4",))]


@pytest.mark.parametrize("dtype,symmetric,reduce_range", ORT_CASES)
def test_scale_zero_point_equal_onnxruntime(dtype, symmetric, reduce_range):
    qt = get_qtype(dtype)
    qmin_o, qmax_o = get_qmin_qmax_for_qType(qt.onnx_type, reduce_range=reduce_range, symmetric=symmetric)
    assert (float(qmin_o), float(qmax_o)) == qrange(qt, symmetric, reduce_range)
    rng = np.random.default_rng(qt.onnx_type * 4 + 2 * symmetric + reduce_range)
    lo = np.concatenate([-rng.exponential(2.0, 300), rng.uniform(0, 1, 20), [0.0, 0.0, -1e-30, -3e4]])
    hi = np.concatenate([rng.exponential(2.0, 300), -rng.uniform(0, 1, 20), [0.0, 1e-7, 1e-30, 1e-3]])
    lo, hi = np.minimum(lo, hi).astype(np.float32), np.maximum(lo, hi).astype(np.float32)
    ours = compute_qparams(lo, hi, dtype, symmetric=symmetric, reduce_range=reduce_range, axis=0)
    for i in range(lo.size):
        zp_o, scale_o = compute_scale_zp(np.array(lo[i]), np.array(hi[i]), qmin_o, qmax_o, symmetric)
        assert np.asarray(scale_o).dtype == np.float32
        np.testing.assert_array_max_ulp(ours.scale[i], np.float32(scale_o), maxulp=1)
        assert int(ours.zero_point[i]) == int(zp_o), (lo[i], hi[i])


def test_int4_symmetric_uses_the_symmetric_range():
    """Deliberate difference: onnxruntime has no symmetric int4 range ([-8, 7]); we use [-7, 7]."""
    qp = compute_qparams(-7.0, 3.0, "int4", symmetric=True)
    assert qrange("int4", symmetric=True) == (-7.0, 7.0)
    assert float(qp.scale) == 1.0 and int(qp.zero_point) == 0


def test_float8_scale_maps_absmax_to_the_largest_finite_value():
    for dtype, fmax in (("float8e4m3fn", 448.0), ("float8e5m2", 57344.0)):
        qp = compute_qparams(-2.0, 7.0, dtype)
        assert float(qp.scale) == np.float32(7.0 / fmax)
        assert float(dequantize(quantize(np.float32(7.0), qp), qp)) == np.float32(fmax) * qp.scale
        assert qp.zero_point.dtype == get_qtype(dtype).storage and float(qp.zero_point) == 0


def test_power_of_two_and_zero_range():
    qp = compute_qparams(-3.0, 5.0, "uint8", symmetric=False, power_of_two=True)
    assert float(qp.scale) == 2.0**-4  # 8/255 = 0.03137 > 2^-5, rounded up to 2^-4
    assert int(qp.zero_point) == 48  # round(0 - (-3) / 0.0625); the grid still covers [-3, 5]
    zero = compute_qparams(np.zeros(3, np.float32), np.zeros(3, np.float32), "int8", axis=0)
    np.testing.assert_array_equal(zero.scale, np.ones(3, np.float32))
    with pytest.raises(RecipeError, match="non-finite"):
        compute_qparams(np.float32(np.nan), 1.0, "int8")
    with pytest.raises(RecipeError, match="8-bit"):
        qrange("int16", reduce_range=True)


def test_qparams_json_round_trip_all_dtypes():
    for name in QTYPES:
        qp = compute_qparams(np.array([-1.0, -2.0], np.float32), np.array([3.0, 0.5], np.float32), name,
                             symmetric=get_qtype(name).signed, axis=1)
        back = QParams.from_json(qp.to_json())
        np.testing.assert_array_equal(back.scale, qp.scale)
        np.testing.assert_array_equal(_bits(back.zero_point), _bits(qp.zero_point))
        assert back.zero_point.dtype == qp.zero_point.dtype and back.axis == 1


def test_sqnr_db():
    ref = np.array([1.0, -1.0, 2.0, 0.0])
    assert sqnr_db(ref, ref) == np.inf
    assert sqnr_db(np.zeros(3), np.ones(3)) == -np.inf
    assert sqnr_db(ref, ref * 0.9) == pytest.approx(20.0)  # error = 0.1 * signal -> 20 dB


@pytest.mark.parametrize("dtype,symmetric", [("int8", True), ("uint8", False), ("int16", True), ("uint4", False)])
def test_int_squared_error_is_the_fake_quantize_error_on_each_grid(dtype, symmetric):
    # (C, K) rows against (C, 1) channel grids, and (1, P) points against (K, 1) candidate grids; values past
    # the grid saturate (int8 to -128), as QuantizeLinear does
    rows = np.random.default_rng(5).laplace(0, 1.0, (4, 300)).astype(np.float32)
    qp = compute_qparams(rows.min(axis=1) * 0.6, rows.max(axis=1) * 0.6, dtype, symmetric=symmetric, axis=0)
    want = np.square(fake_quantize(rows, qp).astype(np.float64) - rows)
    got = int_squared_error(rows, qp.scale.reshape(-1, 1), qp.zero_point.astype(np.float32).reshape(-1, 1), qp.qt)
    assert got.dtype == np.float64 and got.shape == (4, 300)
    np.testing.assert_array_equal(got, want)
    assert (quantize(rows, qp) == qp.qt.qmin).any()  # some values saturate at the bottom of the type
    pts = rows[0]
    each = [np.square(fake_quantize(pts, compute_qparams(pts.min() * f, pts.max() * f, dtype,
                                                         symmetric=symmetric)).astype(np.float64) - pts)
            for f in (1.0, 0.5, 0.25)]
    cands = compute_qparams(pts.min() * np.array([1.0, 0.5, 0.25], np.float32),
                            pts.max() * np.array([1.0, 0.5, 0.25], np.float32), dtype, symmetric=symmetric, axis=0)
    got = int_squared_error(pts[None, :], cands.scale.reshape(-1, 1),
                            cands.zero_point.astype(np.float32).reshape(-1, 1), cands.qt)
    np.testing.assert_array_equal(got, np.stack(each))


def _quantize_in_steps(x: np.ndarray, qp: QParams) -> np.ndarray:
    """quantize() as written before it worked in place: a temporary per step, the cast through int32."""
    qt = qp.qt
    scale = np.asarray(qp.scale, np.float32).reshape([-1 if i == (qp.axis or 0) % max(x.ndim, 1) and np.size(qp.scale) > 1
                                                      else 1 for i in range(x.ndim)])
    zp = np.asarray(qp.zero_point, np.float32).reshape(scale.shape)
    q = np.asarray(np.rint(np.asarray(x, np.float32) / scale) + zp, dtype=np.float32)
    np.clip(q, qt.qmin, qt.qmax, out=q)
    q[np.isnan(q)] = qt.qmin
    return q.astype(np.int32).astype(qt.storage)


@pytest.mark.parametrize("dtype", sorted(n for n, q in QTYPES.items() if not q.is_float))
def test_quantize_in_place_gives_the_bits_of_the_step_by_step_formula(dtype):
    qt = get_qtype(dtype)
    rng = np.random.default_rng(zlib.crc32(dtype.encode()))
    x = (rng.standard_normal((6, 37)) * 4).astype(np.float32)
    x[0, :4] = [np.nan, np.inf, -np.inf, 3e38]
    x[1, :4] = [0.5, 1.5, -2.5, -0.5]  # ties at scale 1
    zps = rng.integers(int(qt.qmin), int(qt.qmax) + 1, 37) if qt.qmin < 0 < qt.qmax else np.full(37, int(qt.qmin))
    scalar = QParams(np.float32(0.25), np.asarray(zps[0]).astype(qt.storage), dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # 3e38 / 0.01 overflows to inf, then saturates
        for qp in (QParams(np.float32(1.0), np.asarray(zps[0]).astype(qt.storage), dtype),
                   QParams(rng.uniform(0.01, 2, 37).astype(np.float32), zps.astype(qt.storage), dtype, axis=1)):
            got = quantize(x, qp)
            want = _quantize_in_steps(x, qp)
            assert got.dtype == want.dtype and np.array_equal(got.astype(np.int64), want.astype(np.int64))
        assert quantize(np.float32(1.3), scalar).astype(np.int64) == \
            _quantize_in_steps(np.float32(1.3), scalar).astype(np.int64)
