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


#: the tall chain of :func:`tall_positions`: 2,000 Relu nodes every 500 scene units (1,000,000 units tall: it fits a
#: 700 px view at about 0.0007), then the Concat
TALL_ROWS, TALL_STEP = 2000, 500.0


def tall_positions() -> dict[str, tuple[float, float]]:
    """Scene positions of ``grid_model(1, TALL_ROWS)``: one column, node ``c0r{r}`` at y = r * TALL_STEP and the
    Concat below the last."""
    positions = {f"c0r{r}": (0.0, r * TALL_STEP) for r in range(TALL_ROWS)}
    positions["cat"] = (0.0, TALL_ROWS * TALL_STEP)
    return positions


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


def constant_add_model(*after: tuple[str, str]) -> onnx.ModelProto:
    """``y = ops(x + k)``: a Constant ``k`` (ones [1, 4]) added to the input by node ``add``, then one node per
    ``(op_type, name)`` of ``after`` in a chain (one-input ops: Relu, Identity ...), opset 17."""
    import numpy as np
    from onnx import numpy_helper

    k = numpy_helper.from_array(np.ones((1, 4), np.float32), "c")
    nodes = [helper.make_node("Constant", [], ["k"], name="const", value=k),
             helper.make_node("Add", ["x", "k"], ["t0"], name="add")]
    for i, (op, name) in enumerate(after):
        nodes.append(helper.make_node(op, [f"t{i}"], [f"t{i + 1}"], name=name))
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
