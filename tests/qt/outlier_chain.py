"""A small model the recipe choice keeps one unit of float: a MatMul chain whose first MatMul reads an outlier."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROWS, FEAT, DEPTH = 40, 16, 8


def outlier_chain(folder):
    """x [N, 16] -> MatMul mm0 -> Clip(-4, 4) -> 7 more MatMuls -> y, and calib.npz beside it: row 0 holds one
    value of 400 in x, so mm0's 8-bit input grid holds the output noise (the choice keeps mm0 float)."""
    rng = np.random.default_rng(5)
    nodes, inits, prev = [], [], "x"
    for i in range(DEPTH):
        w = np.linalg.qr(rng.standard_normal((FEAT, FEAT)))[0].astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"mm{i}"))
        prev = f"m{i}"
        if i == 0:
            inits += [numpy_helper.from_array(np.array(-4, np.float32), "lo"),
                      numpy_helper.from_array(np.array(4, np.float32), "hi")]
            nodes.append(helper.make_node("Clip", ["m0", "lo", "hi"], ["c0"], name="clip"))
            prev = "c0"
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEAT])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", FEAT])], inits)
    path = folder / "chain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    x = rng.standard_normal((ROWS, FEAT)).astype(np.float32)
    x[0, 3] = 400.0
    np.savez(folder / "calib.npz", x=x)
    return path
