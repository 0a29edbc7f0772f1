"""Fold ``Cast(float16 / bfloat16 weight -> float32)`` into a float32 initializer.

A model converted to float16 with its inputs and outputs kept float32 (onnxconverter-common's
``keep_io_types``, mixed-precision exports; case 17's variant) reaches every weight through a Cast of
a 16-bit initializer: no Conv / Gemm / MatMul then reads a constant float32 weight, so none was
quantized (onnxruntime issue #13358). Every float16 and bfloat16 value is exactly a float32 value,
so the Cast's output is computed once here (numpy / ml_dtypes ``astype``, the same values onnxruntime's
Cast gives) and stored as a float32 initializer under the Cast's output name; the Cast node goes.

A Cast is folded when it is in the default domain, casts to FLOAT (``to`` = 1), reads a float16 or
bfloat16 initializer of its own graph, and its output is not a graph output. The 16-bit initializer is
removed when nothing else reads it (in any graph or as a graph output). Other Casts (an int64 shape
constant, float64 -> float32, which rounds) are left alone.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from workbench.core.graph.walk import NameAllocator, fold_each_graph, iter_graphs
from workbench.core.io.external import tensor_array

_HALF = {onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}


def fold_weight_casts(proto: onnx.ModelProto) -> list[str]:
    """Fold every Cast of a float16 / bfloat16 initializer to float32 in ``proto`` (in place, every graph).

    Returns
    -------
    list of str
        Names of the removed Cast nodes.
    """
    outputs = {o.name for _, g in iter_graphs(proto.graph) for o in g.output}
    return fold_each_graph(proto, lambda g, uses, names: _fold_graph(g, uses, names, outputs))


def _to(node: onnx.NodeProto) -> int | None:
    return next((a.i for a in node.attribute if a.name == "to"), None)


def _fold_graph(graph: onnx.GraphProto, uses: dict[str, int], names: NameAllocator,
                outputs: set[str]) -> list[str]:
    del names  # the float32 tensor takes the Cast's output name: no new name
    inits = {t.name: t for t in graph.initializer}
    done: list[str] = []
    for node in list(graph.node):
        if node.op_type != "Cast" or node.domain not in ("", "ai.onnx") or _to(node) != onnx.TensorProto.FLOAT:
            continue
        src = inits.get(node.input[0]) if node.input else None
        if src is None or src.data_type not in _HALF or node.output[0] in outputs:
            continue
        value = np.asarray(tensor_array(src)).astype(np.float32)
        graph.initializer.append(numpy_helper.from_array(value, node.output[0]))
        graph.node.remove(node)
        for vi in [v for v in graph.value_info if v.name == node.output[0]]:
            graph.value_info.remove(vi)
        uses[src.name] -= 1
        if uses[src.name] == 0 and src.name not in outputs:
            graph.initializer.remove(inits.pop(src.name))
        done.append(node.name)
    return done
