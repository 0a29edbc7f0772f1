"""Models onnx.checker (full check) refuses, each with the one line errors.checker_line gives of its message."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, initializers=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _w():
    return numpy_helper.from_array(np.ones((3, 5), np.float32), "w")


#: name -> (model, its one line)
CHECKER_FAILURES = {
    "unknown attribute": (_model([helper.make_node("Relu", ["x"], ["y"], name="r", foo=3)]),
                          "node 'r' (Relu): Unrecognized attribute: foo for operator Relu."),
    "unsorted": (_model([helper.make_node("Relu", ["h"], ["y"], name="relu1"),
                         helper.make_node("Relu", ["x"], ["h"], name="relu0")]),
                 "node 'relu1' (Relu): its input 'h' is not the output of any node before it (the nodes must be in "
                 "topological order, each input made before it is read)."),
    "shapes of two nodes": (_model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                                    helper.make_node("Softmax", ["h"], ["y"], name="sm", axis=9)], [_w()]),
                            "node 'mm' (MatMul): Incompatible dimensions for matrix multiplication (and 1 more node)."),
    "attribute value": (_model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=7)]),
                        "node 'sm' (Softmax): 'axis' must be in [-2 , 1]. Its actual value is: 7."),
}
