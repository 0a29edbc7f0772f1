"""QOperator biases in the quantization parameters: QLinearConv's input B and QGemm's input C (int32, no scale input
of their own) were missing; they are listed as "bias" with scale input_scale * weight_scale, zero point 0."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from quant_bias_models import quantized_model

from workbench.core.inspection.quant_reader import format_param, read_quant_params
from workbench.core.inspection.quant_summary import params_around_nodes


@pytest.mark.parametrize("per_channel", [False, True])
def test_qoperator_int32_biases_are_listed_with_their_scale(tmp_path, per_channel):
    """QLinearConv's B and QGemm's C: role "bias", int32, scale exactly input_scale * weight_scale as the file
    stores those two (per output channel with per-channel weights: axis 0), zero point 0; and the bias the file
    holds, dequantized with that scale, is the float model's bias to within half a step."""
    folder = tmp_path
    proto = onnx.load(str(quantized_model(folder, "QOperator", per_channel)))
    floats = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(folder / "float.onnx")).graph.initializer}
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    nodes = {n.op_type: n for n in proto.graph.node}
    params = {p.tensor: p for p in read_quant_params(proto)}
    for op, b_idx, float_bias in (("QLinearConv", 8, "cb"), ("QGemm", 6, "gb")):
        node = nodes[op]
        bias = node.input[b_idx]
        p = params[bias]
        assert (p.role, p.dtype, p.kind, p.node, p.consumers) == ("bias", "int32", "QOperator", node.name, [node.name])
        expected = inits[node.input[1]] * inits[node.input[4]]  # input_scale * weight_scale, float32
        assert p.scale.dtype == np.float32 and np.array_equal(p.scale, expected)
        assert p.scale.size == (len(floats[float_bias]) if per_channel else 1)
        assert p.axis == (0 if per_channel else None) and p.granularity == ("per_channel" if per_channel else "per_tensor")
        assert np.array_equal(p.zero_point, np.zeros(p.scale.shape, np.int32))
        step = np.broadcast_to(p.scale, inits[bias].shape)
        assert np.all(np.abs(inits[bias] * step.astype(np.float64) - floats[float_bias]) <= step / 2 + 1e-7)
        # the inspector's lines for the node (params_around_nodes, what QuantParamsBox shows) list it
        lines = [format_param(q) for q in params_around_nodes(proto)[node.name]]
        assert [line for line in lines if line.startswith("bias ")] == [format_param(p)]
    assert sum(p.role == "bias" for p in params.values()) == 2


def _qgemm_2d_bias(alpha: float) -> tuple[onnx.ModelProto, np.ndarray]:
    """A com.microsoft QGemm (transB, per-channel int8 weight) whose int32 C has shape (1, N), as a MatMul + Add
    fused into Gemm leaves it; C quantized with the step QGemm adds it at, alpha * x_scale * w_scale. Returns the
    model and the float C."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(6)
    n, k = 8, 16
    w = (rng.standard_normal((n, k)) * 0.2).astype(np.float32)
    c = (rng.standard_normal((1, n)) * 0.5).astype(np.float32)
    x_scale, w_scale = np.float32(0.02), (np.abs(w).max(1) / 127).astype(np.float32)
    step = (np.float32(alpha) * x_scale * w_scale).astype(np.float32)
    inits = {"xs": np.array(x_scale), "xz": np.array(128, np.uint8), "wq": np.round(w / w_scale[:, None]).astype(np.int8),
             "ws": w_scale, "wz": np.zeros(n, np.int8), "cq": np.round(c / step).astype(np.int32),
             "ys": np.array(np.float32(0.05)), "yz": np.array(128, np.uint8)}
    node = helper.make_node("QGemm", ["xq", *inits], ["yq"], domain="com.microsoft", name="qgemm", transB=1,
                            alpha=alpha)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("xq", TensorProto.UINT8, [1, k])],
                              [helper.make_tensor_value_info("yq", TensorProto.UINT8, [1, n])],
                              [numpy_helper.from_array(v, name) for name, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model, c


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_qgemm_2d_bias_per_channel_on_its_last_axis_with_alpha(alpha):
    """QGemm's C of shape (1, N) with a per-channel weight: the per-channel scale runs along axis 1 (it read axis 0,
    which dequantizes a (1, N) C into an (N, N) block), and is alpha * x_scale * w_scale (it read x_scale * w_scale,
    twice the step at alpha 0.5). Checked against onnxruntime: its output equals alpha * x W^T + the C dequantized
    with the listed scale and axis, to within half an output step."""
    import onnxruntime as ort

    model, c = _qgemm_2d_bias(alpha)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    p = next(q for q in read_quant_params(model) if q.role == "bias")
    assert (p.tensor, p.axis, p.scale.shape) == ("cq", 1, (8,))
    assert np.array_equal(p.scale, (np.float32(alpha) * inits["xs"] * inits["ws"]).astype(np.float32))
    c_listed = inits["cq"] * p.scale.reshape(1, -1).astype(np.float64)
    assert np.all(np.abs(c_listed - c) <= p.scale / 2 + 1e-7)
    x = np.random.default_rng(1).integers(100, 156, (1, 16)).astype(np.uint8)
    y = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"xq": x})[0]
    x_float = (x.astype(np.float64) - 128) * inits["xs"]
    expected = alpha * x_float @ (inits["wq"] * inits["ws"][:, None].astype(np.float64)).T + c_listed
    assert np.abs((y.astype(np.float64) - 128) * 0.05 - expected).max() <= 0.05 / 2 + 1e-6


def test_qlinear_conv_transpose_lists_input_weight_bias_output():
    """com.microsoft QLinearConvTranspose (inputs as QLinearConv's, W of shape C_in x C_out x k x k): it had no
    entry in the reader's QOperator table, so the Inspector listed nothing for it (its bias neither, though the
    bias table named it). Its per-channel weight scale runs along W's axis 1; dequantized with the listed scales the
    file's W and B are the float ones to within half a step (onnxruntime's CPU provider has no kernel for it)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((3, 4, 2, 2)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(4) * 0.5).astype(np.float32)
    x_scale, w_scale = np.float32(0.02), (np.abs(w).max((0, 2, 3)) / 127).astype(np.float32)
    inits = {"xs": np.array(x_scale), "xz": np.array(128, np.uint8),
             "wq": np.round(w / w_scale[None, :, None, None]).astype(np.int8), "ws": w_scale,
             "wz": np.zeros(4, np.int8), "ys": np.array(np.float32(0.05)), "yz": np.array(128, np.uint8),
             "bq": np.round(b / (x_scale * w_scale)).astype(np.int32)}
    node = helper.make_node("QLinearConvTranspose", ["xq", *inits], ["yq"], domain="com.microsoft", name="up",
                            kernel_shape=[2, 2], strides=[2, 2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("xq", TensorProto.UINT8, [1, 3, 3, 3])],
                              [helper.make_tensor_value_info("yq", TensorProto.UINT8, [1, 4, 6, 6])],
                              [numpy_helper.from_array(v, name) for name, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    params = read_quant_params(model)
    assert [(p.role, p.tensor, p.axis) for p in params] == [("input", "xq", None), ("weight", "wq", 1),
                                                            ("bias", "bq", 0), ("output", "yq", None)]
    weight, bias = params[1], params[2]
    w_step = weight.scale.reshape(1, -1, 1, 1)
    assert np.all(np.abs(inits["wq"] * w_step - w) <= w_step / 2 + 1e-7)
    assert np.array_equal(bias.scale, (x_scale * w_scale).astype(np.float32))
    assert np.all(np.abs(inits["bq"] * bias.scale.astype(np.float64) - b) <= bias.scale / 2 + 1e-7)


def test_a_grouped_qlinear_conv_transpose_says_its_per_channel_layout():
    """A grouped QLinearConvTranspose (group 2): W is C_in x C_out/group x k x k (6 x 4 x 2 x 2) and its scale has
    C_out = 8 entries, so 'axis 1' with 8 scales did not fit W's 4 columns. The listed weight says which scale each
    W[i, j] takes; dequantized that way the file's W is the float one within half a step, and the bias (8 values)
    has input_scale * weight_scale per output channel."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(1)
    group, c_in, cols = 2, 6, 4
    w = (rng.standard_normal((c_in, cols, 2, 2)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(group * cols) * 0.5).astype(np.float32)
    # output channel o = g * cols + j reads rows g * 3 .. g * 3 + 2 of W's column j
    by_group = w.reshape(group, c_in // group, cols, 2, 2)
    w_scale = (np.abs(by_group).max((1, 3, 4)).reshape(-1) / 127).astype(np.float32)
    step = w_scale.reshape(group, 1, cols, 1, 1)
    x_scale = np.float32(0.02)
    inits = {"xs": np.array(x_scale), "xz": np.array(128, np.uint8),
             "wq": np.round(by_group / step).astype(np.int8).reshape(w.shape), "ws": w_scale,
             "wz": np.zeros(group * cols, np.int8), "ys": np.array(np.float32(0.05)), "yz": np.array(128, np.uint8),
             "bq": np.round(b / (x_scale * w_scale)).astype(np.int32)}
    node = helper.make_node("QLinearConvTranspose", ["xq", *inits], ["yq"], domain="com.microsoft", name="up",
                            kernel_shape=[2, 2], strides=[2, 2], group=group)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("xq", TensorProto.UINT8, [1, c_in, 3, 3])],
                              [helper.make_tensor_value_info("yq", TensorProto.UINT8, [1, group * cols, 6, 6])],
                              [numpy_helper.from_array(v, name) for name, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    params = {p.tensor: p for p in read_quant_params(model)}
    weight, bias = params["wq"], params["bq"]
    assert (weight.axis, weight.scale.size, bias.axis, bias.scale.size) == (1, 8, 0, 8)
    assert weight.note == ("group 2: 8 scales, one per output channel; W's axis 1 holds the 4 columns of one group, "
                           "so W[i, j] takes scale[(i // 3) * 4 + j] (6 input channels, 3 per group)")
    assert format_param(weight).endswith(f"({weight.note})")
    # the layout the note gives dequantizes the file's W to the float W
    i, j = np.meshgrid(np.arange(c_in), np.arange(cols), indexing="ij")
    per_element = weight.scale[(i // 3) * 4 + j][:, :, None, None]
    assert np.all(np.abs(inits["wq"] * per_element - w) <= per_element / 2 + 1e-7)
    assert np.array_equal(bias.scale, (x_scale * w_scale).astype(np.float32))
    assert np.all(np.abs(inits["bq"] * bias.scale.astype(np.float64) - b) <= bias.scale / 2 + 1e-7)
