"""One rule for a symbolic dim's name (graph.dim_names.named_dim), used by the canvas's output shapes and the
inspector's node facts: the inspector showed nudenet_320n's output0 as ``floor(floor(...)/2) + 1`` expressions
where the canvas showed ``?``, and a dim named "dynamic" by name on the canvas but ``?`` in the inspector."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from workbench.core import api
from workbench.core.graph.dim_names import named_dim
from workbench.core.graph.layout import graph_structure
from workbench.core.model.shapes import shared_dim_name


@pytest.mark.parametrize("param, named", [
    ("batch", True), ("seq_len", True), ("p2o.DynamicDimension.0", True), ("unk__x", True), ("input_1:0", True),
    ("", False), ("?", False), ("-1", False), ("dynamic", False), ("None", False), ("unknown", False),
    ("unk__3", False), ("floor(height/2) + 1", False), ("2*seq", False), ("N - 1", False),
    ("Dynamic", False), ("UNKNOWN", False), ("NONE", False),  # placeholders in any case: read as names before
])
def test_named_dim_is_the_one_rule(param, named):
    assert named_dim(param) is named and shared_dim_name(param) is named


def _canvas_and_inspector(proto: onnx.ModelProto, node: str) -> tuple[str, str]:
    """The canvas's output shape text of ``node`` and the inspector's, for its first output."""
    s = graph_structure(proto)
    canvas = s.out_shapes[s.names.index(node)]
    return canvas, api.node_facts(proto, node).outputs[0].shape_text


def test_a_dim_named_dynamic_reads_as_unknown_in_both_views():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["dynamic", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["dynamic", "p2o.D.1"])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert _canvas_and_inspector(proto, "r") == ("? x p2o.D.1", "[?, p2o.D.1]")


def test_nudenet_output_expressions_read_as_unknown_in_both_views(corpus):
    proto = onnx.load(corpus / "nudenet_320n" / "model.onnx")
    (last,) = [n.name for n in proto.graph.node if "output0" in n.output]
    expr = proto.graph.output[0].type.tensor_type.shape.dim[2].dim_param
    assert expr.startswith("(floor(floor(floor(height/2 - 1/2)/2)/2) + 1)")  # what the model declares
    assert _canvas_and_inspector(proto, last) == ("batch x 22 x ?", "[batch, 22, ?]")


def test_paddle_dim_names_read_by_name_in_both_views(corpus):
    proto = onnx.load(corpus / "ppocrv4_rec" / "model.onnx")
    (last,) = [n.name for n in proto.graph.node if proto.graph.output[0].name in n.output]
    assert _canvas_and_inspector(proto, last) == ("p2o.DynamicDimension.2 x p2o.DynamicDimension.3 x 6625",
                                                  "[p2o.DynamicDimension.2, p2o.DynamicDimension.3, 6625]")
