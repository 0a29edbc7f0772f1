"""Small float graphs for canvas tests (no Qt here): parallel Relu chains and chains of name scopes."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper


def grid_model(columns: int, rows: int) -> onnx.ModelProto:
    """``columns`` parallel chains of ``rows`` Relu nodes from one input to one Concat."""
    nodes, ends = [], []
    for c in range(columns):
        prev = "x"
        for r in range(rows):
            nodes.append(helper.make_node("Relu", [prev], [f"c{c}r{r}"], name=f"c{c}r{r}"))
            prev = f"c{c}r{r}"
        ends.append(prev)
    nodes.append(helper.make_node("Concat", ends, ["y"], name="cat", axis=0))
    graph = helper.make_graph(nodes, "grid", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph)


def blocks_model(blocks: int, per_block: int) -> onnx.ModelProto:
    """A chain of ``blocks`` name scopes (``/blk{b}/Relu_{i}``) of ``per_block`` Relu nodes each."""
    nodes, prev = [], "x"
    for b in range(blocks):
        for i in range(per_block):
            out = f"b{b}_{i}"
            nodes.append(helper.make_node("Relu", [prev], [out], name=f"/blk{b}/Relu_{i}"))
            prev = out
    graph = helper.make_graph(nodes, "blocks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 8])])
    return helper.make_model(graph)
