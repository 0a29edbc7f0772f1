"""Read-only index of an ONNX graph for the planner and writers: types, producers, consumers.

Also :class:`NameAllocator`, which hands out tensor / node names unique against every name
already used anywhere in the model (node inputs and outputs, initializers, graph inputs and
outputs, value_info, node names, in every subgraph).
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx
from onnx import TensorProto

from workbench.core.graph import walk as _graphs


def subgraphs(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    """Graphs held in ``node``'s attributes (If branches, Loop / Scan bodies)."""
    for _attr, g in _graphs.subgraphs(node):
        yield g


def iter_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and every nested subgraph, outermost first."""
    for _path, g in _graphs.iter_graphs(graph):
        yield g


def elem_types(graph: onnx.GraphProto) -> dict[str, int]:
    """``TensorProto`` element type of every tensor whose type is known, in all nested graphs."""
    out: dict[str, int] = {}
    for g in iter_graphs(graph):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
                out[vi.name] = vi.type.tensor_type.elem_type
        for init in g.initializer:
            out[init.name] = init.data_type
        for node in g.node:
            if node.op_type == "Constant" and node.output:
                for a in node.attribute:
                    if a.name == "value":
                        out[node.output[0]] = a.t.data_type
    return out


def is_float(types: dict[str, int], name: str) -> bool:
    """True if ``name`` is known to be a float32 tensor."""
    return types.get(name) == TensorProto.FLOAT


class GraphIndex:
    """Producers, consumers and constants of one graph (the main graph or a subgraph)."""

    def __init__(self, graph: onnx.GraphProto, types: dict[str, int] | None = None):
        self.graph = graph
        self.types = types if types is not None else elem_types(graph)
        self.initializers = {i.name: i for i in graph.initializer}
        self.graph_inputs = [i.name for i in graph.input if i.name not in self.initializers]
        self.graph_outputs = {o.name for o in graph.output}
        self.producer: dict[str, onnx.NodeProto] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        self.by_name: dict[str, onnx.NodeProto] = {}
        for node in graph.node:
            self.by_name.setdefault(node.name, node)
            for o in node.output:
                if o:
                    self.producer[o] = node
            for i in node.input:
                if i:
                    self.consumers.setdefault(i, []).append(node)

    def is_float(self, name: str) -> bool:
        return is_float(self.types, name)

    def is_const(self, name: str) -> bool:
        return name in self.initializers


def attrs_of(node: onnx.NodeProto) -> dict:
    """Node attributes as a plain dict (ints, floats, strings, lists)."""
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def all_names(model: onnx.ModelProto) -> set[str]:
    """Every tensor and node name used anywhere in ``model`` (all nested graphs)."""
    return _graphs.all_names(model.graph)


class NameAllocator:
    """Fresh names, unique against every name in the model and every name handed out before."""

    def __init__(self, used: set[str]):
        self.used = set(used)

    def new(self, base: str) -> str:
        """``base`` if unused, else ``base_1``, ``base_2``, ... (first free)."""
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name
