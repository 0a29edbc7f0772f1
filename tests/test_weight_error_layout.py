"""Per-output-channel weight SQNR where the weight's layout is not [out, ...]: a grouped ConvTranspose
and a Gemm(transB=1) that the weight-only int4 writer turns into MatMul of the transposed weight."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_weight_error import reference_dequantized

from workbench.core import api
from workbench.core.analysis.weight_error import weight_errors


def channel_sqnr(w: np.ndarray, d: np.ndarray) -> list[float]:
    """SQNR (dB) per row of the [channels, elements] arrays ``w`` and ``d``, in float64."""
    w, e = w.astype(np.float64), w.astype(np.float64) - d.astype(np.float64)
    return [10 * math.log10(float(np.sum(a * a)) / float(np.sum(b * b))) for a, b in zip(w, e, strict=True)]


def save(tmp_path, nodes, x_shape, y_shape, inits, opset):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 8
    onnx.save(m, tmp_path / "m.onnx")
    return api.open_model(tmp_path / "m.onnx")


def test_grouped_conv_transpose_ranks_every_output_channel(tmp_path):
    """ConvTranspose group=2, weight [C=4, M/group=3, 3, 3]: output channel g*3 + j reads rows 2g, 2g+1
    of column j. Output channel 3 (group 1, column 0) is 100x smaller than channel 0, with which it
    shares its per-channel scale (axis 1): it is the worst of the 6."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
    w[2:, 0] *= 0.01
    model = save(tmp_path, [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv", group=2)],
                 ["N", 4, 5, 5], ["N", 6, 7, 7], [numpy_helper.from_array(w, "w")], 17)
    np.savez(tmp_path / "calib.npz", x=rng.normal(size=(8, 4, 5, 5)).astype(np.float32))
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(tmp_path / "calib.npz"))
    (e,) = weight_errors(result.plan, model.proto, result.proto)
    d = reference_dequantized(result.proto, "deconv", 1)
    # output channel o = g * 3 + j: rows 2g..2g+1, column j
    per_out = np.stack([w[2 * g:2 * g + 2, j].ravel() for g in range(2) for j in range(3)])
    dq_out = np.stack([d[2 * g:2 * g + 2, j].ravel() for g in range(2) for j in range(3)])
    per = channel_sqnr(per_out, dq_out)
    assert e.channels == 6 and e.worst_channel == 3 == int(np.argmin(per))
    assert e.worst_channel_db == pytest.approx(per[3], abs=1e-9)
    assert e.sqnr_db == pytest.approx(channel_sqnr(w.reshape(1, -1), d.reshape(1, -1))[0], abs=1e-9)


@pytest.mark.parametrize("n", [8, 64])  # non-square (was left out) and square (was compared transposed)
def test_int4_gemm_trans_b_written_as_matmul_is_compared_in_the_float_layout(tmp_path, n):
    rng = np.random.default_rng(1)
    w = rng.normal(size=(n, 64)).astype(np.float32)  # Gemm(transB=1): [N, K]
    model = save(tmp_path, [helper.make_node("Gemm", ["x", "w"], ["y"], name="gemm", transB=1)],
                 ["N", 64], ["N", n], [numpy_helper.from_array(w, "w")], 21)
    result = api.quantize(model, api.make_recipe("w4-block"))
    assert [x.op_type for x in result.proto.graph.node] == ["DequantizeLinear", "MatMul"]
    d = reference_dequantized(result.proto, "gemm", 1)  # [K, N]
    assert d.shape == (64, n)
    (e,) = weight_errors(result.plan, model.proto, result.proto)
    per = channel_sqnr(w, d.T)
    assert e.channels == n and e.worst_channel == int(np.argmin(per))
    assert e.worst_channel_db == pytest.approx(min(per), abs=1e-9)
    assert e.sqnr_db == pytest.approx(channel_sqnr(w.reshape(1, -1), d.T.reshape(1, -1))[0], abs=1e-9)
