"""node_facts: attributes written compactly, tensor dtypes / shapes / weights, Q/DQ looked through."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.inspection.node_facts import attr_fact


def test_attributes_are_written_compactly_with_the_whole_value_kept():
    assert attr_fact(helper.make_attribute("epsilon", 1e-5)) == api.AttrFact("epsilon", "1e-05")
    assert attr_fact(helper.make_attribute("to", TensorProto.FLOAT16)) == api.AttrFact("to", "float16 (10)")
    assert attr_fact(helper.make_attribute("mode", "nearest")) == api.AttrFact("mode", "nearest")
    long = attr_fact(helper.make_attribute("sizes", list(range(12))))
    assert long.text == "[0, 1, 2, 3, 4, 5, 6, 7, …] (12 values)"
    assert long.full == "[" + ", ".join(map(str, range(12))) + "]"
    value = numpy_helper.from_array(np.array([0.5, 2.0], np.float32))
    assert attr_fact(helper.make_attribute("value", value)).text == "float32 [2] = [0.5, 2]"
    big = numpy_helper.from_array(np.zeros((4, 4), np.float32))
    assert attr_fact(helper.make_attribute("value", big)) == api.AttrFact("value", "float32 [4, 4]")


def test_tensors_of_a_custom_op_after_a_qdq_pair():
    w = numpy_helper.from_array(np.ones((3, 5), np.int8), "w")
    inits = [w, numpy_helper.from_array(np.float32(0.1), "s"), numpy_helper.from_array(np.uint8(3), "z")]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["q"], name="q"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dq"),
             helper.make_node("Fancy", ["d", "w", ""], ["y"], name="fancy", domain="com.example", k=3)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits,
                              value_info=[helper.make_tensor_value_info("d", TensorProto.FLOAT, ["n", "unk__2"])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    facts = api.node_facts(proto, "fancy")
    assert (facts.op_type, facts.domain, facts.attributes) == ("Fancy", "com.example", (api.AttrFact("k", "3"),))
    d, weight, absent = facts.inputs
    assert (d.slot, d.dtype_text, d.shape_text, d.producer, d.source) == ("input 0", "float32", "[n, ?]", "dq", "relu")
    assert (weight.weight, weight.dtype, weight.shape, weight.size, weight.nbytes) == (True, "int8", (3, 5), 15, 15)
    assert absent == api.TensorFact("input 2", "")
    (y,) = facts.outputs
    assert (y.slot, y.dtype_text, y.shape_text, y.graph_output) == ("output 0", "float32", "?", True)
    relu = api.NodeFactsIndex(proto).facts("relu")
    assert relu.inputs[0].slot == "X" and relu.outputs[0].readers == ("fancy",)
