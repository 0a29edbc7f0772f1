"""The part of a model that computes some of its tensors: the nodes they depend on, and a model of those alone.

A size probe (:mod:`workbench.core.pipeline.size_probe`) needs a few tensors computed from the inputs'
shapes; onnxruntime running the whole model for them loads and runs every weight. minilm_l6_v2's one
candidate, the position embeddings' Gather output, needs 5 of its 368 nodes and 0.8 of its 90 MB of weights.
"""

from __future__ import annotations

import onnx
from onnx import helper

from workbench.core.graph.walk import iter_graphs, subgraphs


def cone_nodes(graph: onnx.GraphProto, tensors: list[str]) -> list[int]:
    """Indices (in graph order) of the nodes of ``graph`` that ``tensors`` depend on: their producers and,
    transitively, the producers of those nodes' inputs, including the names a node's subgraphs read from
    the outer scope. A name no node of ``graph`` produces (a graph input, an initializer) ends the walk."""
    producer = {o: i for i, node in enumerate(graph.node) for o in node.output if o}
    seen: set[str] = set()
    kept: set[int] = set()
    todo = list(tensors)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        i = producer.get(name)
        if i is None or i in kept:
            continue
        kept.add(i)
        node = graph.node[i]
        todo.extend(x for x in node.input if x)
        for _, sub in subgraphs(node):
            todo.extend(x for _, g in iter_graphs(sub) for n in g.node for x in n.input if x)
    return sorted(kept)


def cone_model(proto: onnx.ModelProto, tensors: list[str]) -> onnx.ModelProto:
    """A model of the main-graph nodes of ``proto`` that ``tensors`` depend on (:func:`cone_nodes`), with the
    graph inputs, initializers and value_info they read, whose outputs are ``tensors`` in that order. Opsets,
    IR version and model-local functions are those of ``proto``; onnxruntime computes each of ``tensors`` as
    in the whole model (the same nodes on the same inputs). An output's element type comes from
    value_info, graph inputs or outputs (unset when unknown, which onnxruntime accepts)."""
    graph = proto.graph
    nodes = [graph.node[i] for i in cone_nodes(graph, tensors)]
    used = {x for node in nodes for x in node.input if x} | set(tensors)
    for node in nodes:
        for _, sub in subgraphs(node):
            used.update(x for _, g in iter_graphs(sub) for n in g.node for x in n.input if x)
    out = onnx.ModelProto(ir_version=proto.ir_version)
    out.opset_import.extend(proto.opset_import)
    out.functions.extend(proto.functions)
    g = out.graph
    g.name = graph.name
    g.node.extend(nodes)
    g.initializer.extend(t for t in graph.initializer if t.name in used)
    g.sparse_initializer.extend(t for t in graph.sparse_initializer if t.values.name in used)
    g.input.extend(vi for vi in graph.input if vi.name in used)
    g.value_info.extend(vi for vi in graph.value_info if vi.name in used)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in
             list(graph.value_info) + list(graph.input) + list(graph.output)}
    for name in dict.fromkeys(tensors):
        elem = types.get(name, 0)
        g.output.append(helper.make_tensor_value_info(name, elem, None) if elem
                        else helper.make_empty_tensor_value_info(name))
    return out
