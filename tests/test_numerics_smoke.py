"""Smoke checks of numerics against onnx.reference (full coverage lives in test_numerics.py)."""

import numpy as np
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from workbench.core.formats.numerics import compute_qparams, dequantize, quantize


def _ref_qdq(x, scale, zp, axis=1):
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=axis),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=axis)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                          [helper.make_tensor_value_info("q", helper.np_dtype_to_tensor_dtype(zp.dtype), None),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [helper.make_tensor("s", TensorProto.FLOAT, scale.shape, scale.ravel()),
                           helper.make_tensor("z", helper.np_dtype_to_tensor_dtype(zp.dtype), zp.shape,
                                              zp.ravel().astype(np.int64))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    return ReferenceEvaluator(m).run(None, {"x": x})


def test_uint8_per_tensor_matches_reference():
    x = np.random.default_rng(0).normal(size=(4, 3, 5)).astype(np.float32) * 3
    qp = compute_qparams(x.min(), x.max(), "uint8", symmetric=False)
    q_ref, y_ref = _ref_qdq(x, qp.scale, qp.zero_point)
    np.testing.assert_array_equal(quantize(x, qp), q_ref)
    np.testing.assert_array_equal(dequantize(quantize(x, qp), qp), y_ref)


def test_int8_per_channel_matches_reference():
    x = np.random.default_rng(1).normal(size=(4, 3, 5)).astype(np.float32)
    qp = compute_qparams(x.min(axis=(0, 2)), x.max(axis=(0, 2)), "int8", symmetric=True, axis=1)
    assert qp.scale.shape == (3,)
    np.testing.assert_array_equal(qp.zero_point, np.zeros(3, np.int8))
    q_ref, y_ref = _ref_qdq(x, qp.scale, qp.zero_point, axis=1)
    np.testing.assert_array_equal(quantize(x, qp), q_ref)
    np.testing.assert_array_equal(dequantize(quantize(x, qp), qp), y_ref)


def test_zero_range_gives_unit_scale():
    qp = compute_qparams(0.0, 0.0, "uint8")
    assert float(qp.scale) == 1.0 and int(qp.zero_point) == 0
    assert np.all(dequantize(quantize(np.zeros(4, np.float32), qp), qp) == 0)
