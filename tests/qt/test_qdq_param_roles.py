"""The inspector's "Quantization parameters" of a node in a QDQ file tell its input from its output.

onnxruntime's QDQ minilm_l6_v2 (quantize_static) showed /bert/encoder/layer.0/attention/self/query/MatMul as
"activation .../LayerNorm_output_0_QuantizeLinear_Output ...", "weight ...", "activation
.../MatMul_output_0_QuantizeLinear_Output ...": two "activation" lines, told apart only by reading the
tensor names, where a QOperator file's node says "input" and "output". A QDQ activation is now named by
the role it plays for the node selected.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _qdq_conv() -> onnx.ModelProto:
    """x -> Q/DQ (int8, scale 0.5, zero_point 3) -> Conv (weight DQ int8, scale 0.25) -> Q/DQ (scale 0.125,
    zero_point -2) -> Relu -> y."""
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "xs"), numpy_helper.from_array(np.array(3, np.int8), "xz"),
             numpy_helper.from_array(np.ones((2, 2, 1, 1), np.int8), "wq"),
             numpy_helper.from_array(np.array(0.25, np.float32), "ws"), numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.125, np.float32), "cs"), numpy_helper.from_array(np.array(-2, np.int8), "cz")]
    h = helper.make_node
    nodes = [h("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="x_q"), h("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="x_dq"),
             h("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="w_dq"),
             h("Conv", ["xd", "wd"], ["c"], name="conv", kernel_shape=[1, 1]),
             h("QuantizeLinear", ["c", "cs", "cz"], ["cq"], name="c_q"), h("DequantizeLinear", ["cq", "cs", "cz"], ["cd"], name="c_dq"),
             h("Relu", ["cd"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_qdq_activations_read_as_input_and_output(qtbot, window, open_file, tmp_path):
    path = tmp_path / "qdq.onnx"
    onnx.save(_qdq_conv(), str(path))
    open_file(window, path, timeout=60_000)
    window.focus_node("conv")
    box = window.inspector.quant_params
    qtbot.waitUntil(lambda: not box.isHidden())
    assert box.label.text().splitlines() == [
        "conv:",
        "  input xq: int8 per_tensor; scale 0.5; zero_point 3",  # was "activation xq"
        "  weight wq: int8 per_tensor; scale 0.25; zero_point 0",
        "  output cq: int8 per_tensor; scale 0.125; zero_point -2",  # was "activation cq"
    ]


def _qop_conv() -> onnx.ModelProto:
    """x -> QuantizeLinear -> QLinearConv (int8; x scale 0.5 zero_point 3, weight 0.25, y 0.125 / -2) ->
    DequantizeLinear -> y: onnxruntime's QOperator layout."""
    f = np.float32
    inits = [numpy_helper.from_array(np.array(v, dtype), n) for n, v, dtype in (
        ("xs", 0.5, f), ("xz", 3, np.int8), ("ws", 0.25, f), ("wz", 0, np.int8), ("ys", 0.125, f), ("yz", -2, np.int8))]
    inits.append(numpy_helper.from_array(np.ones((2, 2, 1, 1), np.int8), "wq"))
    h = helper.make_node
    nodes = [h("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="x_q"),
             h("QLinearConv", ["xq", "xs", "xz", "wq", "ws", "wz", "ys", "yz"], ["yq"], name="conv_quant",
               kernel_shape=[1, 1]),
             h("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="y_dq")]
    graph = helper.make_graph(nodes, "qop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_qoperator_activation_reads_as_input(qtbot, window, open_file, tmp_path):
    """A QLinearConv's x read "activation xq" (its y already read "output"): now "input", as in a QDQ file."""
    path = tmp_path / "qop.onnx"
    onnx.save(_qop_conv(), str(path))
    open_file(window, path, timeout=60_000)
    window.focus_node("conv_quant")
    box = window.inspector.quant_params
    qtbot.waitUntil(lambda: not box.isHidden())
    assert box.label.text().splitlines() == [
        "conv_quant:",
        "  input xq: int8 per_tensor; scale 0.5; zero_point 3",
        "  weight wq: int8 per_tensor; scale 0.25; zero_point 0",
        "  output yq: int8 per_tensor; scale 0.125; zero_point -2",
    ]
