"""An 8-bit QDQ MatMul whose weight is a Constant node's value reads as the integer kernel onnxruntime runs.

onnxruntime folds a Constant node into an initializer before its QDQ fusions, so DequantizeLinear(uint8 activation
pair) and DequantizeLinear(int8 weight of a Constant node) around a MatMul become MatMulIntegerToFloat, as with an
initializer weight. The summary took the Constant's DequantizeLinear for an activation pair with no QuantizeLinear
before it: 'QDQ: 1 MatMul uint8/int8 (run in float)', no kernel, and the weight not counted among the constant
weights the per-tensor weights line names. The expected kernel comes from onnxruntime's optimized graph.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import optimized_ops

from workbench.core.inspection.quant_summary import summarize_quantization

K = N = 16


def _model(constant_node: bool) -> onnx.ModelProto:
    """x -> QuantizeLinear / DequantizeLinear (uint8) -> MatMul ``mm`` <- DequantizeLinear <- int8 weight ``w``
    (per tensor), the weight an initializer or a Constant node's value; opset 13."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.integers(-127, 127, (K, N)).astype(np.int8), "w")
    inits = [numpy_helper.from_array(np.float32(0.01), "ws"), numpy_helper.from_array(np.int8(0), "wz"),
             numpy_helper.from_array(np.float32(0.02), "as"), numpy_helper.from_array(np.uint8(128), "az")]
    nodes = [helper.make_node("Constant", [], ["w"], value=w, name="wc")] if constant_node else []
    inits += [] if constant_node else [w]
    nodes += [helper.make_node("QuantizeLinear", ["x", "as", "az"], ["xq"], name="q"),
              helper.make_node("DequantizeLinear", ["xq", "as", "az"], ["xd"], name="dqx"),
              helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], name="dqw"),
              helper.make_node("MatMul", ["xd", "wf"], ["y"], name="mm")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, N])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    return m


def test_a_constant_node_weight_reads_as_the_integer_kernel_as_an_initializer_does(tmp_path):
    for constant_node in (False, True):
        m = _model(constant_node)
        assert optimized_ops(m, tmp_path) == ["QuantizeLinear", "MatMulIntegerToFloat"]
        s = summarize_quantization(m)
        assert s.kernels == {"mm": "QDQ -> MatMulIntegerToFloat"}, constant_node  # failed before with a Constant: {}
        assert s.text() == "QDQ: 1 MatMul uint8/int8"  # failed before: '... uint8/int8 (run in float)'
        assert s.weighted == {"MatMul": 1}  # failed before: {}
