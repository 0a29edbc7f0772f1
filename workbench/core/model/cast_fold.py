"""Fold ``Cast(float16 / bfloat16 weight -> float32)`` into a float32 initializer.

A model converted to float16 with its inputs and outputs kept float32 (onnxconverter-common's
``keep_io_types``, mixed-precision exports; case 17's variant) reaches every weight through a Cast of
a 16-bit initializer: no Conv / Gemm / MatMul then reads a constant float32 weight, so none was
quantized (onnxruntime issue #13358). Every float16 and bfloat16 value is exactly a float32 value,
so the Cast's output is computed once here (numpy / ml_dtypes ``astype``, the same values onnxruntime's
Cast gives) and stored as a float32 initializer under the Cast's output name; the Cast node goes.

A Cast is folded when it is in the default domain, casts to FLOAT (``to`` = 1), reads a float16 or
bfloat16 initializer its graph sees (its own, or an enclosing graph's that no input or node output of a graph
in between hides: a Cast in an If / Loop / Scan body of an outer weight, as exporters write a weight used
inside a loop), and its output is not a graph output. The float32 initializer goes into the Cast's graph (a body's
initializer is a constant of that body, read at each iteration as the Cast's output was). The 16-bit
initializer stays in its graph while anything else reads it (any node of any graph, at float16, or a graph
output), and is removed otherwise. Other Casts (an int64 shape constant, float64 -> float32, which rounds)
are left alone; so are those in a body of a model of IR version 3 or older, whose graphs must list every
initializer as an input (a Loop or Scan body's inputs are positional: one cannot be added).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from workbench.core.graph.walk import iter_graphs, subgraphs, use_counts
from workbench.core.io.external import tensor_array

_HALF = {onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}
#: the first IR version whose graphs may hold initializers that are not inputs (onnx.checker)
_IR_INITIALIZERS_NOT_INPUTS = 4

#: an initializer seen from a graph: the graph that holds it, and the tensor
_Seen = tuple[onnx.GraphProto, onnx.TensorProto]


def fold_weight_casts(proto: onnx.ModelProto) -> list[str]:
    """Fold every Cast of a float16 / bfloat16 initializer to float32 in ``proto`` (in place, every graph; a
    Cast in a subgraph also of an initializer of an enclosing graph).

    Returns
    -------
    list of str
        Names of the removed Cast nodes, the main graph's first, then each subgraph's.
    """
    outputs = {o.name for _, g in iter_graphs(proto.graph) for o in g.output}
    bodies = proto.ir_version >= _IR_INITIALIZERS_NOT_INPUTS
    return _fold_scope(proto.graph, {}, use_counts(proto.graph), outputs, bodies, top=True)


def _own_names(graph: onnx.GraphProto) -> set[str]:
    """The names ``graph`` defines itself (inputs, node outputs): they hide an enclosing graph's tensor."""
    return {i.name for i in graph.input} | {o for n in graph.node for o in n.output}


def _fold_scope(graph: onnx.GraphProto, outer: dict[str, _Seen], uses: dict[str, int], outputs: set[str],
                bodies: bool, top: bool = False) -> list[str]:
    """Fold the Casts of ``graph`` (``outer``: the initializers of its enclosing graphs it can see, by name),
    then those of its subgraphs (``bodies``: subgraphs may hold initializers)."""
    own = _own_names(graph)
    seen = {name: hit for name, hit in outer.items() if name not in own}
    seen.update({t.name: (graph, t) for t in graph.initializer})
    done = _fold_graph(graph, seen, uses, outputs) if top or bodies else []
    for node in graph.node:
        for _, sub in subgraphs(node):
            done += _fold_scope(sub, seen, uses, outputs, bodies)
    return done


def _to(node: onnx.NodeProto) -> int | None:
    return next((a.i for a in node.attribute if a.name == "to"), None)


def _fold_graph(graph: onnx.GraphProto, seen: dict[str, _Seen], uses: dict[str, int],
                outputs: set[str]) -> list[str]:
    """Fold the Casts of ``graph`` whose input is a 16-bit initializer in ``seen``; the float32 tensor takes the
    Cast's output name (no new name)."""
    done: list[str] = []
    for node in list(graph.node):
        if node.op_type != "Cast" or node.domain not in ("", "ai.onnx") or _to(node) != onnx.TensorProto.FLOAT:
            continue
        owner, src = seen.get(node.input[0], (None, None)) if node.input else (None, None)
        if src is None or src.data_type not in _HALF or node.output[0] in outputs:
            continue
        value = np.asarray(tensor_array(src)).astype(np.float32)
        graph.initializer.append(numpy_helper.from_array(value, node.output[0]))
        graph.node.remove(node)
        for vi in [v for v in graph.value_info if v.name == node.output[0]]:
            graph.value_info.remove(vi)
        uses[src.name] -= 1
        if uses[src.name] == 0 and src.name not in outputs:
            owner.initializer.remove(src)
            del seen[src.name]
        done.append(node.name)
    return done
