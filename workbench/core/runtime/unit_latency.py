"""Does one Conv, AveragePool or activation x activation MatMul unit's Q/DQ pay? Two tiny models measured
in onnxruntime, cached.

Inside a quantized chain a Conv unit runs either as onnxruntime's integer kernel
(``DQ(x) -> Conv(DQ(int8 w), int32 bias) -> Q``, fused into QLinearConv) or, kept float, as
``DQ(x) -> Conv(float w) -> Q`` (its neighbours stay quantized; the float probe's session has
``session.disable_quant_qdq`` so that onnxruntime does not re-quantize it). :func:`conv_unit_latency` builds
both as tiny models with the unit's attributes and weight shape (weights drawn from a fixed seed by
:mod:`~workbench.core.runtime.probe_values`, not ``numpy.random``, whose import loads OpenSSL, so the bytes
and the cache key depend only on the shapes) and measures them on one uint8 input of
the unit's real input shape (:func:`workbench.core.runtime.latency.compare`: 1 thread, a low percentile of
alternating runs, cached on disk). ``ratio`` > 1 means the integer kernel is the slower one.

Measured here (onnxruntime 1.32, x86_64 AVX512-VNNI, 2 shared cores, rough): the 11 depthwise
Convs of ppocr_mobile_v2_cls (input 1x3x48x192) run slower as QLinearConv than in float; keeping
them float took the whole model from 1.6x to about 1.25x float latency.

A MatMul of two activations (attention's Q Kᵀ and P V) has no weight to pack: quantized, it pays a
QuantizeLinear on each input on every run. :func:`matmul_unit_latency` measures
``Q(a), Q(b) -> DQ, DQ -> MatMul`` (with the unit's output Q/DQ when the plan quantizes it) against
the float MatMul, on float inputs of the unit's real shapes.

An AveragePool unit runs as onnxruntime's QLinearAveragePool (``DQ -> AveragePool -> Q`` fused) or, kept
float, as that chain unfused. :func:`pool_unit_latency` measures the two. QLinearAveragePool measured
slower here at every size tried (onnxruntime 1.32, x86_64 AVX512-VNNI, load average 4.5 on 2 cores):
1.15x at 1x64x4x4 (digits_cnn's), 4.7-5.0x at 1x64x32x32, 5.6x at 1x256x8x80, kernel 2x2 stride 2;
QLinearGlobalAveragePool measured faster (0.47-0.88x at 1x16x24x96 to 1x576x7x7), so it is not probed.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core.runtime import probe_values
from workbench.core.runtime.latency import LatencyComparison, compare

#: Seconds of running per probe (both variants together).
PROBE_BUDGET_S = 0.3


def _model(nodes, inits, x_shape, opset: int) -> bytes:
    g = helper.make_graph(nodes, "probe", [helper.make_tensor_value_info("x", TensorProto.UINT8, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", max(opset, 13))])
    m.ir_version = 8
    return m.SerializeToString()


def conv_probe_models(attrs: dict, weight_shape: list[int], x_shape: list[int], has_bias: bool,
                      opset: int = 17) -> tuple[bytes, bytes]:
    """(float-Conv model, QDQ-Conv model) bytes for one Conv unit (see the module docstring).

    ``attrs``: the Conv's attributes (``group``, ``strides``, ``pads``, ``dilations``, ...);
    ``weight_shape``: ``[M, C/group, k...]``; ``x_shape``: the input's static shape ``[N, C, ...]``.
    """
    m = weight_shape[0]
    w = (probe_values.standard_normal(weight_shape, 0) * 0.1).astype(np.float32)
    scale = np.float32(0.02)
    common = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(np.uint8(128), "z")]
    dq_x = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"])
    q_y = helper.make_node("QuantizeLinear", ["yf", "s", "z"], ["y"])
    bias_f = [numpy_helper.from_array(np.zeros(m, np.float32), "b")] if has_bias else []
    conv_f = helper.make_node("Conv", ["xf", "w"] + (["b"] if has_bias else []), ["yf"], **attrs)
    float_model = _model([dq_x, conv_f, q_y], common + [numpy_helper.from_array(w, "w")] + bias_f, x_shape, opset)
    w_scale = (np.abs(w).reshape(m, -1).max(axis=1) / 127).astype(np.float32)
    w_q = np.clip(np.round(w / w_scale.reshape([m] + [1] * (w.ndim - 1))), -127, 127).astype(np.int8)
    inits = common + [numpy_helper.from_array(w_q, "wq"), numpy_helper.from_array(w_scale, "ws"),
                      numpy_helper.from_array(np.zeros(m, np.int8), "wz")]
    nodes = [dq_x, helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wf"], axis=0)]
    ins = ["xf", "wf"]
    if has_bias:
        inits += [numpy_helper.from_array(np.zeros(m, np.int32), "bq"),
                  numpy_helper.from_array((w_scale * scale).astype(np.float32), "bs")]
        nodes.append(helper.make_node("DequantizeLinear", ["bq", "bs"], ["bf"], axis=0))
        ins.append("bf")
    nodes += [helper.make_node("Conv", ins, ["yf"], **attrs), q_y]
    return float_model, _model(nodes, inits, x_shape, opset)


def matmul_probe_models(a_shape: list[int], b_shape: list[int], quantized_output: bool,
                        opset: int = 17) -> tuple[bytes, bytes]:
    """(float-MatMul model, QDQ-MatMul model) bytes for one MatMul of two activations (module docstring).

    Inputs ``a``, ``b`` are float32 of ``a_shape`` / ``b_shape``; the QDQ model quantizes both to uint8
    (onnxruntime fuses it into MatMulIntegerToFloat, or QLinearMatMul when ``quantized_output`` adds
    the output pair); the output ``y`` is float32 in both.
    """
    vi = helper.make_tensor_value_info
    inputs = [vi("a", TensorProto.FLOAT, a_shape), vi("b", TensorProto.FLOAT, b_shape)]
    outputs = [vi("y", TensorProto.FLOAT, None)]

    def build(nodes, inits) -> bytes:
        m = helper.make_model(helper.make_graph(nodes, "probe", inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", max(opset, 13))])
        m.ir_version = 8
        return m.SerializeToString()

    float_model = build([helper.make_node("MatMul", ["a", "b"], ["y"])], [])
    inits = [numpy_helper.from_array(np.float32(0.02), "s"), numpy_helper.from_array(np.uint8(128), "z")]
    nodes = []
    for x in ("a", "b"):
        nodes += [helper.make_node("QuantizeLinear", [x, "s", "z"], [f"{x}q"]),
                  helper.make_node("DequantizeLinear", [f"{x}q", "s", "z"], [f"{x}f"])]
    if quantized_output:
        nodes += [helper.make_node("MatMul", ["af", "bf"], ["yf"]),
                  helper.make_node("QuantizeLinear", ["yf", "s", "z"], ["yq"]),
                  helper.make_node("DequantizeLinear", ["yq", "s", "z"], ["y"])]
    else:
        nodes.append(helper.make_node("MatMul", ["af", "bf"], ["y"]))
    return float_model, build(nodes, inits)


def matmul_unit_latency(a_shape: list[int], b_shape: list[int], quantized_output: bool,
                        opset: int = 17) -> LatencyComparison:
    """Quantized vs float latency of a MatMul of two activations of shapes ``a_shape`` and ``b_shape``
    (ratio = quantized / float; :func:`matmul_probe_models`).

    Raises
    ------
    onnxruntime's exceptions when a probe cannot run (callers treat that as "no decision").
    """
    f, q = matmul_probe_models(a_shape, b_shape, quantized_output, opset)
    feed = {"a": probe_values.standard_normal(a_shape, 1).astype(np.float32),
            "b": probe_values.standard_normal(b_shape, 3).astype(np.float32)}
    return compare(f, q, feed, budget_s=PROBE_BUDGET_S)


def pool_probe_models(attrs: dict, x_shape: list[int], opset: int = 17) -> tuple[bytes, bytes]:
    """(float model, QDQ model) bytes for one AveragePool unit with ``attrs`` at input shape ``x_shape``:
    ``DQ -> AveragePool -> Q`` on a uint8 input ``x`` to a uint8 output ``y``, the same bytes twice (the
    float side is the session with ``session.disable_quant_qdq``, :func:`pool_unit_latency`)."""
    inits = [numpy_helper.from_array(np.float32(0.02), "s"), numpy_helper.from_array(np.uint8(128), "z")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
             helper.make_node("AveragePool", ["xf"], ["yf"], **attrs),
             helper.make_node("QuantizeLinear", ["yf", "s", "z"], ["y"])]
    model = _model(nodes, inits, x_shape, opset)
    return model, model


def pool_unit_latency(node: onnx.NodeProto, x_shape: list[int], opset: int = 17) -> LatencyComparison:
    """QLinearAveragePool vs float AveragePool (between the same DQ and Q) latency of ``node`` at input
    shape ``x_shape`` (ratio = int8 / float).

    Raises
    ------
    onnxruntime's exceptions when a probe cannot run (callers treat that as "no decision").
    """
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
    f, q = pool_probe_models(attrs, x_shape, opset)
    feed = {"x": probe_values.uint8(x_shape, 1)}
    return compare(f, q, feed, budget_s=PROBE_BUDGET_S, float_config={"session.disable_quant_qdq": "1"})


def conv_unit_latency(node: onnx.NodeProto, weight_shape: list[int], x_shape: list[int],
                      opset: int = 17) -> LatencyComparison:
    """QLinearConv vs float Conv latency of ``node`` at input shape ``x_shape`` (ratio = int8 / float).

    Raises
    ------
    onnxruntime's exceptions when a probe cannot run (callers treat that as "no decision").
    """
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
    has_bias = len(node.input) > 2 and bool(node.input[2])
    f, q = conv_probe_models(attrs, weight_shape, x_shape, has_bias, opset)
    feed = {"x": probe_values.uint8(x_shape, 1)}
    # the float probe runs as written: onnxruntime would otherwise quantize DQ -> float Conv -> Q itself
    return compare(f, q, feed, budget_s=PROBE_BUDGET_S, float_config={"session.disable_quant_qdq": "1"})
