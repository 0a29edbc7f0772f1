"""Pruning a model proto: initializers that no node reads."""

from __future__ import annotations

import onnx

from workbench.core.graph.index import iter_graphs


def drop_unused_initializers(proto: onnx.ModelProto) -> None:
    """Remove initializers no node reads (the float originals of quantized weights).

    Initializers that are also graph inputs stay (removing them would change the interface).
    """
    used: set[str] = set()
    for g in iter_graphs(proto.graph):
        for node in g.node:
            used.update(node.input)
        used.update(o.name for o in g.output)
    inputs = {i.name for i in proto.graph.input}
    for g in iter_graphs(proto.graph):
        # deleted in place, last first: rebuilding the list would copy every kept tensor's bytes
        for k in reversed([k for k, i in enumerate(g.initializer) if i.name not in used and i.name not in inputs]):
            del g.initializer[k]


