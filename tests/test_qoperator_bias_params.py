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
