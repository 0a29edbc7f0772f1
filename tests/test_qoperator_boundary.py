"""The QuantizeLinear / DequantizeLinear nodes around a QOperator model's integer kernels count as QOperator, not
as QDQ: onnxruntime's QOperator export of digits_cnn was summarised "QOperator + QDQ" for its input's
QuantizeLinear and its output's DequantizeLinear. Real Q -> DQ pairs and weight DequantizeLinear nodes beside
QOperator kernels still count as QDQ."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from workbench.core.inspection.qoperator_boundary import qoperator_boundary, quantization_kinds
from workbench.core.inspection.quant_summary import summarize_quantization
from workbench.core.inspection.tensor_dtypes import tensor_dtypes


def _inits(rng) -> list[onnx.TensorProto]:
    f = lambda v, n: numpy_helper.from_array(np.array(v, np.float32), n)  # noqa: E731
    i8 = lambda v, n: numpy_helper.from_array(np.array(v, np.int8), n)  # noqa: E731
    return [f(0.05, "s"), i8(0, "zp"), f(0.02, "ws"), i8(0, "wzp"), f(0.1, "ys"), i8(3, "yzp"),
            i8(rng.integers(-20, 20, (2, 1, 3, 3)), "w1"), i8(rng.integers(-20, 20, (2, 2, 1, 1)), "w2"),
            f(rng.normal(0, 0.3, (2, 2, 1, 1)), "wf"), f(0.01, "fs")]


def _qconv(x: str, w: str, y: str, name: str) -> onnx.NodeProto:
    return helper.make_node("QLinearConv", [x, "s", "zp", w, "ws", "wzp", "ys", "yzp"], [y], name=name,
                            pads=[1, 1, 1, 1] if w == "w1" else [0, 0, 0, 0])


def _model(extra_qdq: bool) -> onnx.ModelProto:
    """x -> Q -> MaxPool (int8) -> QLinearConv -> DQ -> Softmax (float) -> Q -> QLinearConv -> DQ -> y, the
    QOperator pattern around an op left float; with ``extra_qdq`` y also goes through a Q -> DQ pair into a
    float Conv whose weight is a DequantizeLinear of an int8 initializer (QDQ)."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], name="q_in"),
        helper.make_node("MaxPool", ["xq"], ["mq"], name="pool", kernel_shape=[1, 1]),
        _qconv("mq", "w1", "c1", "conv1"),
        helper.make_node("DequantizeLinear", ["c1", "ys", "yzp"], ["c1f"], name="dq_mid"),
        helper.make_node("Softmax", ["c1f"], ["sm"], name="softmax", axis=1),
        helper.make_node("QuantizeLinear", ["sm", "s", "zp"], ["smq"], name="q_mid"),
        _qconv("smq", "w2", "c2", "conv2"),
        helper.make_node("DequantizeLinear", ["c2", "ys", "yzp"], ["y"], name="dq_out"),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])]
    inits = _inits(rng)
    if extra_qdq:
        wq = numpy_helper.from_array(rng.integers(-50, 50, (2, 2, 1, 1)).astype(np.int8), "wq")
        inits.append(wq)
        nodes += [helper.make_node("QuantizeLinear", ["y", "s", "zp"], ["yq"], name="q_pair"),
                  helper.make_node("DequantizeLinear", ["yq", "s", "zp"], ["yd"], name="dq_pair"),
                  helper.make_node("DequantizeLinear", ["wq", "fs"], ["wd"], name="dq_weight"),
                  helper.make_node("Conv", ["yd", "wd"], ["z"], name="conv_f")]
        outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 2, 4, 4]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                              outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_q_and_dq_around_integer_kernels_are_qoperator():
    proto = _model(extra_qdq=False)
    onnx.checker.check_model(proto, full_check=True)
    x = np.random.default_rng(1).normal(0, 1, (1, 1, 4, 4)).astype(np.float32)
    (y,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert y.shape == (1, 2, 4, 4)  # a graph onnxruntime runs
    nodes = list(proto.graph.node)
    edge = qoperator_boundary(nodes, tensor_dtypes(proto), {i.name for i in proto.graph.initializer})
    # q_in reaches conv1 through the int8 MaxPool; the Softmax left float has a DQ before and a Q after it
    assert {nodes[i].name: k for i, k in edge.items()} == {
        "q_in": "QOperator", "dq_mid": "QOperator", "q_mid": "QOperator", "dq_out": "QOperator"}
    s = summarize_quantization(proto)
    assert s.kinds == {"QOperator": 6}  # 2 QLinearConv, 2 Q, 2 DQ (was {"QDQ": 4, "QOperator": 2})
    assert s.text() == "QOperator: 2 Conv int8/int8"


def test_pairs_and_weight_dequantization_beside_qoperator_stay_qdq():
    proto = _model(extra_qdq=True)
    onnx.checker.check_model(proto, full_check=True)
    nodes = list(proto.graph.node)
    edge = qoperator_boundary(nodes, tensor_dtypes(proto), {i.name for i in proto.graph.initializer})
    assert sorted(nodes[i].name for i in edge) == ["dq_mid", "dq_out", "q_in", "q_mid"]
    assert quantization_kinds(proto, tensor_dtypes(proto)) == {"QOperator": 6, "QDQ": 3}
    # conv_f reads two DequantizeLinear outputs but writes float: no QLinearConv (onnxruntime runs it in float)
    assert summarize_quantization(proto).text() == "QOperator + QDQ: 3 Conv int8/int8 (2 integer kernels, 1 in float)"


def test_a_quantizer_shared_by_a_kernel_and_a_pair_stays_qdq():
    """q_in feeds conv1 (through the MaxPool) and a DequantizeLinear: a Q -> DQ pair, so QDQ."""
    proto = _model(extra_qdq=False)
    proto.graph.node.append(helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], name="dq_tap"))
    proto.graph.output.append(helper.make_tensor_value_info("xd", TensorProto.FLOAT, [1, 1, 4, 4]))
    nodes = list(proto.graph.node)
    edge = qoperator_boundary(nodes, tensor_dtypes(proto), {i.name for i in proto.graph.initializer})
    assert sorted(nodes[i].name for i in edge) == ["dq_mid", "dq_out", "q_mid"]
    assert quantization_kinds(proto, tensor_dtypes(proto)) == {"QOperator": 5, "QDQ": 2}
