"""Element-wise cones: tensors that are a fixed scalar function of one other tensor.

A tensor ``y`` is an *element-wise function* of a tensor ``x`` when every node between them is
element-wise and its other inputs are single-value constants: ``y = F(x)`` value by value, with
the same number of values. SiLU ``x * Sigmoid(x)`` and the Erf form of GELU
``0.5 * x * (1 + Erf(x / sqrt 2))`` are such functions, and so is each intermediate of them. The
*cone* of ``y`` is those nodes; its *root* ``x`` is where walking back stops, at a tensor whose
producer is not such a node. A cone with more than one root (``x * z``) is no function of one
tensor and is not returned.

Each cone also gets the direction of ``F`` when the operator specs make it certain: +1
non-decreasing, -1 non-increasing, 0 not known to be monotonic (``x * Sigmoid(x)`` dips to
-0.2785 at x = -1.2785). Unary operators are listed only where non-decreasing for their
attributes (ONNX operator spec) and finite for finite input (Exp overflows, Log / Sqrt give NaN).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from workbench.core.graph.index import elem_types
from workbench.core.io.external import materialize

#: Largest cone followed back from one tensor (the Erf GELU is 5 nodes).
MAX_NODES = 8


def _attr(node: onnx.NodeProto, name: str, default: float) -> float:
    for a in node.attribute:
        if a.name == name:
            return float(helper.get_attribute_value(a))
    return default


#: Unary operators ``y = f(x)`` (data input 0, other inputs constant) that are non-decreasing.
MONOTONIC: dict[str, Callable[[onnx.NodeProto], bool]] = {
    "Sigmoid": lambda n: True,
    "Tanh": lambda n: True,
    "Relu": lambda n: True,
    "Softsign": lambda n: True,
    "Softplus": lambda n: True,
    "Erf": lambda n: True,
    "Clip": lambda n: True,
    "LeakyRelu": lambda n: _attr(n, "alpha", 0.01) >= 0.0,
    "HardSigmoid": lambda n: _attr(n, "alpha", 0.2) >= 0.0,
    "Elu": lambda n: _attr(n, "alpha", 1.0) >= 0.0,
}
#: Binary element-wise operators a cone may pass through.
BINARY = ("Add", "Sub", "Mul", "Div")


@dataclass(frozen=True)
class Cone:
    """``tensor = F(root)`` through ``nodes`` (topological order); ``sign`` the direction of F (+1, -1, 0)."""

    tensor: str
    root: str
    nodes: tuple[onnx.NodeProto, ...]
    sign: int


class _Graph:
    def __init__(self, proto: onnx.ModelProto):
        g = proto.graph
        self.inits = {t.name: t for t in g.initializer}
        self.producer = {o: (i, n) for i, n in enumerate(g.node) for o in n.output if o}
        self.types = elem_types(g)
        self._scalars: dict[str, float | None] = {}

    def scalar(self, name: str) -> float | None:
        """The value of a one-element float initializer, else None."""
        if name not in self._scalars:
            t = self.inits.get(name)
            v = None
            if t is not None and int(np.prod(t.dims, dtype=np.int64)) == 1 and t.data_type == onnx.TensorProto.FLOAT:
                v = float(numpy_helper.to_array(materialize(t)).reshape(-1)[0])
                v = v if np.isfinite(v) else None
            self._scalars[name] = v
        return self._scalars[name]


def _step(node: onnx.NodeProto, graph: _Graph) -> tuple[list[str], Callable[[list[int]], int]] | None:
    """The data inputs of ``node`` a cone follows, and its direction given theirs; None if it cannot pass."""
    if node.domain not in ("", "ai.onnx") or len(node.output) != 1 or not node.input:
        return None
    op = node.op_type
    if op in MONOTONIC:
        if not MONOTONIC[op](node) or any(i and i not in graph.inits for i in node.input[1:]):
            return None
        return [node.input[0]], lambda s: s[0]
    if op not in BINARY or len(node.input) != 2:
        return None
    a, b = node.input
    ca, cb = graph.scalar(a), graph.scalar(b)
    if ca is not None and cb is not None:
        return None
    if ca is None and cb is None:  # both from the cone (x * Sigmoid(x)); a division could meet 0
        if op == "Div" or a in graph.inits or b in graph.inits:
            return None
        if op == "Add":
            return [a, b], lambda s: s[0] if s[0] == s[1] else 0
        if op == "Sub":
            return [a, b], lambda s: s[0] if s[0] == -s[1] else 0
        return [a, b], lambda s: 0
    data, c = (b, ca) if ca is not None else (a, cb)
    if data in graph.inits:
        return None
    if op == "Add":
        return [data], lambda s: s[0]
    if op == "Sub":
        return [data], (lambda s: s[0]) if data == a else (lambda s: -s[0])
    if op == "Mul":
        return [data], lambda s: s[0] * int(np.sign(c))
    if data != a or c == 0.0:  # c / x, x / 0
        return None
    return [data], lambda s: s[0] * int(np.sign(c))


def find_cone(proto: onnx.ModelProto, tensor: str, graph: _Graph | None = None) -> Cone | None:
    """The cone of ``tensor`` (see module docstring), or None when it has none or several roots.

    Every tensor on the way must be float32 (typed by shape inference).
    """
    graph = graph or _Graph(proto)
    f32 = onnx.TensorProto.FLOAT
    nodes: dict[int, onnx.NodeProto] = {}
    roots: set[str] = set()
    todo, seen = [tensor], set()
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        if graph.types.get(t) != f32:
            return None
        prod = graph.producer.get(t)
        step = _step(prod[1], graph) if prod is not None else None
        if step is None:
            roots.add(t)
            continue
        if len(nodes) >= MAX_NODES:
            return None
        nodes[prod[0]] = prod[1]
        todo.extend(step[0])
    if len(roots) != 1 or tensor in roots:
        return None
    root = next(iter(roots))
    sign: dict[str, int] = {root: 1}
    ordered: list[onnx.NodeProto] = []
    pending = [nodes[i] for i in sorted(nodes)]
    while pending:  # topological order even when the graph lists the nodes out of order
        ready = [n for n in pending if all(i in sign for i in _step(n, graph)[0])]
        if not ready:
            return None
        for n in ready:
            ins, direction = _step(n, graph)
            sign[n.output[0]] = direction([sign[i] for i in ins])
            ordered.append(n)
        pending = [n for n in pending if n.output[0] not in sign]
    return Cone(tensor, root, tuple(ordered), sign[tensor])


def find_cones(proto: onnx.ModelProto, tensors) -> dict[str, Cone]:
    """:func:`find_cone` for each of ``tensors`` that has one."""
    graph = _Graph(proto)
    out = {}
    for t in tensors:
        c = find_cone(proto, t, graph)
        if c is not None:
            out[t] = c
    return out
