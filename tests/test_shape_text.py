"""Node output shapes on the canvas: a dim named by the model's author shows by name, the names
onnx / onnxruntime shape inference generates ("unk__2") and dim expressions show as "?" (the
MiniLM canvas showed "unk__2xunk__3x384")."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from workbench.core.graph.layout import graph_structure


def _model(dims_by_tensor: dict[str, list]) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"), helper.make_node("Relu", ["a"], ["b"], name="r2"),
             helper.make_node("Relu", ["b"], ["y"], name="r3")]
    vi = {t: helper.make_tensor_value_info(t, TensorProto.FLOAT, dims) for t, dims in dims_by_tensor.items()}
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 384])],
                              [vi.pop("y")], value_info=list(vi.values()))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_generated_dim_names_show_as_question_marks():
    proto = _model({"a": ["unk__2", "unk__3", 384], "b": ["batch", "floor(h/2)", 7], "y": ["unk__x", "seq_len", 1]})
    onnx.checker.check_model(proto)
    assert graph_structure(proto).out_shapes == ["?x?x384", "batch x ? x 7", "unk__x x seq_len x 1"]


def test_negative_dim_values_show_as_question_marks():
    """Exporters write -1 for an unknown size; the canvas drew ppocr_mobile_v2_cls's outputs as
    "-1 x 8 x ? x ?" (a "-" read as a name, so the spaced form)."""
    proto = _model({"a": [-1, 8, "?", "?"], "b": [-1, 384], "y": ["batch", -1]})
    assert graph_structure(proto).out_shapes == ["?x8x?x?", "?x384", "batch x ?"]
