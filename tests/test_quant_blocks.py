"""Flat-name blocks of a quantized model line up with its quantized units: the Q/DQ pair of the activation
a Conv reads, the DequantizeLinear of its weight and bias, and onnxruntime's DynamicQuantizeLinear with the
Mul/Div/Floor/Cast chain quantizing the bias belong to that Conv's block, not to the block before it (where
model order puts them). A float model's blocks are cut as before."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core.graph.hierarchy import build_hierarchy
from workbench.core.graph.layout import graph_structure


def _init(name: str, value, dtype=np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def _model(nodes, inits) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _blocks(proto) -> list[list[str]]:
    s = graph_structure(proto, collapse_qdq=False)
    h = build_hierarchy(s.names, s.op_types, s.edges)
    assert h.source == "blocks"
    return [[s.names[i] for i in h.members(g)] for g in range(len(h))]


def _qdq_model() -> onnx.ModelProto:
    """conv0 -> add0 -> relu0, then relu0's Q/DQ pair and the DequantizeLinear of conv1's weight and bias
    (model order: before conv1), conv1 -> relu1 -> add1."""
    h = helper.make_node
    nodes = [
        h("Conv", ["x", "w0"], ["c0"], name="conv0"),
        h("Add", ["c0", "one"], ["a0"], name="add0"),
        h("Relu", ["a0"], ["r0"], name="relu0"),
        h("QuantizeLinear", ["r0", "s", "z"], ["r0_q"], name="relu0_q"),
        h("DequantizeLinear", ["r0_q", "s", "z"], ["r0_dq"], name="relu0_dq"),
        h("DequantizeLinear", ["w1_q", "s"], ["w1"], name="w1_dq"),
        h("DequantizeLinear", ["b1_q", "sb"], ["b1"], name="b1_dq"),
        h("Conv", ["r0_dq", "w1", "b1"], ["c1"], name="conv1"),
        h("Relu", ["c1"], ["r1"], name="relu1"),
        h("Add", ["r1", "one"], ["y"], name="add1"),
    ]
    inits = [_init("w0", np.ones((1, 1, 1, 1))), _init("one", 1.0), _init("s", 0.1), _init("z", 0, np.uint8),
             _init("sb", 0.01), _init("w1_q", np.ones((1, 1, 1, 1)), np.int8), _init("b1_q", [0], np.int32)]
    return _model(nodes, inits)


def test_qdq_pair_and_weight_dequantize_join_the_conv_they_feed():
    assert _blocks(_qdq_model()) == [
        ["conv0", "add0", "relu0"],
        ["relu0_q", "relu0_dq", "w1_dq", "b1_dq", "conv1", "relu1", "add1"],
    ]  # was conv0 .. b1_dq (7 nodes) and conv1, relu1, add1


def test_without_edges_blocks_follow_model_order():
    s = graph_structure(_qdq_model(), collapse_qdq=False)
    h = build_hierarchy(s.names, s.op_types)
    assert [[s.names[i] for i in h.members(g)] for g in range(len(h))] == [
        ["conv0", "add0", "relu0", "relu0_q", "relu0_dq", "w1_dq", "b1_dq"], ["conv1", "relu1", "add1"]]


def test_a_float_relu_before_the_next_conv_stays_in_its_block():
    """relu0 feeds only conv1 but computes the model, not a quantization: blocks as model order cuts them."""
    h = helper.make_node
    nodes = [h("Conv", ["x", "w0"], ["c0"], name="conv0"), h("Add", ["c0", "one"], ["a0"], name="add0"),
             h("Relu", ["a0"], ["r0"], name="relu0"), h("Conv", ["r0", "w0"], ["c1"], name="conv1"),
             h("Relu", ["c1"], ["r1"], name="relu1"), h("Add", ["r1", "one"], ["y"], name="add1")]
    assert _blocks(_model(nodes, [_init("w0", np.ones((1, 1, 1, 1))), _init("one", 1.0)])) == [
        ["conv0", "add0", "relu0"], ["conv1", "relu1", "add1"]]


def _dynamic_unit(x: str, k: int) -> list[onnx.NodeProto]:
    """onnxruntime's dynamic quantization of a Conv (ddddocr_common_old_int8's node order): quantize x,
    quantize the bias with x's scale, ConvInteger, add the bias, scale the output; then a Sigmoid-Mul."""
    h = helper.make_node
    return [
        h("DynamicQuantizeLinear", [x], [f"{x}_q", f"{x}_s", f"{x}_z"], name=f"{x}_QuantizeLinear"),
        h("Mul", [f"{x}_s", "ws"], [f"bs{k}"], name=f"b{k}_scale_node"),
        h("Div", ["bias", f"bs{k}"], [f"bt{k}"], name=f"b{k}_tmp_quant"),
        h("Floor", [f"bt{k}"], [f"bf{k}"], name=f"b{k}_quant_rounded"),
        h("Cast", [f"bf{k}"], [f"bq{k}"], name=f"b{k}_quantized_node", to=TensorProto.INT32),
        h("ConvInteger", [f"{x}_q", "wq", f"{x}_z", "wz"], [f"ci{k}"], name=f"Conv_{k}_quant"),
        h("Reshape", [f"bq{k}", "shape"], [f"br{k}"], name=f"b{k}_reshape"),
        h("Add", [f"ci{k}", f"br{k}"], [f"ba{k}"], name=f"b{k}_bias_add"),
        h("Cast", [f"ba{k}"], [f"bc{k}"], name=f"b{k}_bias_add_cast", to=TensorProto.FLOAT),
        h("Mul", [f"{x}_s", "ws"], [f"sm{k}"], name=f"Conv_{k}_quant_scales_mul"),
        h("Mul", [f"bc{k}", f"sm{k}"], [f"o{k}"], name=f"Conv_{k}_quant_output_scale_mul"),
        h("Sigmoid", [f"o{k}"], [f"sg{k}"], name=f"Sigmoid_{k}"),
        h("Mul", [f"o{k}", f"sg{k}"], [f"m{k}"], name=f"Mul_{k}"),
    ]


def test_dynamic_quantize_chain_joins_the_conv_integer_it_feeds():
    nodes = _dynamic_unit("x", 0) + _dynamic_unit("m0", 3)
    nodes.append(helper.make_node("Identity", ["m3"], ["y"], name="out"))
    inits = [_init("ws", 0.02), _init("bias", [0.5]), _init("shape", [1, 1, 1, 1], np.int64),
             _init("wq", np.ones((1, 1, 1, 1)), np.uint8), _init("wz", 0, np.uint8)]
    unit = ["{x}_QuantizeLinear", "b{k}_scale_node", "b{k}_tmp_quant", "b{k}_quant_rounded", "b{k}_quantized_node",
            "Conv_{k}_quant", "b{k}_reshape", "b{k}_bias_add", "b{k}_bias_add_cast", "Conv_{k}_quant_scales_mul",
            "Conv_{k}_quant_output_scale_mul", "Sigmoid_{k}", "Mul_{k}"]
    first = [n.format(x="x", k=0) for n in unit]
    second = [n.format(x="m0", k=3) for n in unit] + ["out"]
    # was: the first 5 nodes a block of their own, and Conv_0's block ending with the 5 that quantize Conv_3's input
    assert _blocks(_model(nodes, inits)) == [first, second]
    s = graph_structure(_model(nodes, inits), collapse_qdq=False)
    h = build_hierarchy(s.names, s.op_types, s.edges)
    assert h.titles == ["Conv_0_quant \u2013 Mul_0", "Conv_3_quant \u2013 out"]  # the Conv first, not the scale Mul
