"""Positions for two aligned panes: the float graph beside its quantized file.

Both panes are laid out once, together, so that a matched node sits at the same (x, y) in both:

1. The *union* graph is the quantized file's drawable graph (Q -> DQ pairs and weight
   DequantizeLinear collapsed into edge badges / node tags, :func:`graph_structure` with
   ``collapse_qdq``) plus every float node without a counterpart (a BatchNormalization folded into
   its Conv, a Relu fused into the next QuantizeLinear, a removed Identity), wired to the union
   nodes of its float producers and consumers. Unmatched nodes with the same op type and output
   name in both files (Constant nodes holding weights) share one union node.
2. The union is laid out with :func:`layout_graph` (longest-path layers, igraph's Sugiyama).
3. The quantized pane uses the union positions of its nodes; the float pane puts each matched
   node at its partner's position and each unmatched one at its own union position. A folded op
   therefore has a row of its own in the float pane and leaves a gap in the quantized pane, like a
   line removed in a text diff.

:func:`qdq_marks` says where the collapsed Q/DQ nodes of the quantized pane are drawn (the edge
badge or the node tag standing for each), so every Q/DQ node of the file is accounted for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import onnx

from workbench.core.graph.layout import GraphStructure, graph_structure, layout_graph, node_keys
from workbench.core.inspection.model_diff import ModelDiff
from workbench.core.progress import CancelToken

#: prefix of the union-graph names of float nodes without a counterpart (never a node key: keys
#: are node names or ``"<op_type>#<index>"``)
FLOAT_ONLY = "\x00float:"
_QDQ = ("QuantizeLinear", "DequantizeLinear")


@dataclass
class PaneLayout:
    """Node centres (scene pixels, ``y`` grows downwards by layer) of the two panes.

    Attributes
    ----------
    float_positions : dict of str to (float, float)
        Float node key -> centre; a matched node has exactly its partner's centre.
    quant_positions : dict of str to (float, float)
        Drawn node of the quantized file (Q/DQ collapsed) -> centre.
    qdq_marks : dict of str to list of (str, str, str)
        Every QuantizeLinear / DequantizeLinear node of the quantized file -> where the pane marks
        it, see :func:`qdq_marks`.
    pairs : dict of str to str
        Float node -> quantized node aligned although the diff does not match them
        (:func:`same_output_pairs`: Constant nodes holding weights).
    """

    float_positions: dict[str, tuple[float, float]] = field(default_factory=dict)
    quant_positions: dict[str, tuple[float, float]] = field(default_factory=dict)
    qdq_marks: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    pairs: dict[str, str] = field(default_factory=dict)


def same_output_pairs(float_proto: onnx.ModelProto, quant_proto: onnx.ModelProto, diff: ModelDiff) -> dict[str, str]:
    """Float node -> quantized node, for nodes the diff leaves unmatched (Constant nodes holding
    weights, mostly) whose op type and first output name are the same in both files."""
    matched_f = {m.float_node for m in diff.matches}
    matched_q = {m.quant_node for m in diff.matches}
    qnodes = list(quant_proto.graph.node)
    by_output = {(n.op_type, n.output[0]): k for n, k in zip(qnodes, node_keys(qnodes), strict=True)
                 if n.output and k not in matched_q}
    fnodes = list(float_proto.graph.node)
    out = {}
    for n, k in zip(fnodes, node_keys(fnodes), strict=True):
        if k not in matched_f and n.output and (n.op_type, n.output[0]) in by_output:
            out[k] = by_output[(n.op_type, n.output[0])]
    return out


def _union(fs: GraphStructure, qs: GraphStructure, diff: ModelDiff,
           pairs: dict[str, str]) -> tuple[GraphStructure, dict[str, int]]:
    """The quantized structure plus the float nodes without a counterpart; float key -> union index."""
    qindex = {n: i for i, n in enumerate(qs.names)}
    f2q = {m.float_node: m.quant_node for m in diff.matches} | pairs
    where: dict[str, int] = {n: qindex[f2q[n]] for n in fs.names if f2q.get(n) in qindex}
    names, ops = list(qs.names), list(qs.op_types)
    for n, op in zip(fs.names, fs.op_types, strict=True):
        if n not in where:
            where[n] = len(names)
            names.append(FLOAT_ONLY + n)
            ops.append(op)
    edges = list(qs.edges)
    seen = set(edges)
    for a, b in fs.edges:
        ua, ub = where[fs.names[a]], where[fs.names[b]]
        if (ua >= len(qs.names) or ub >= len(qs.names)) and ua != ub and (ua, ub) not in seen:
            seen.add((ua, ub))
            edges.append((ua, ub))
    union = GraphStructure(names=names, op_types=ops, edges=edges, edge_tensors=[""] * len(edges),
                           has_subgraph=[False] * len(names), out_shapes=[""] * len(names))
    return union, where


def pane_layout(float_proto: onnx.ModelProto, quant_proto: onnx.ModelProto, diff: ModelDiff, *,
                cache_dir: str | Path | None = None, use_cache: bool = True,
                cancel: CancelToken | None = None) -> PaneLayout:
    """Aligned positions of the float pane and the quantized pane (see the module docstring).

    Parameters
    ----------
    float_proto, quant_proto : onnx.ModelProto
        The two models ``diff`` was made from (:func:`diff_models`); read only.
    diff : ModelDiff
        Their matching.
    cache_dir, use_cache, cancel
        Passed to :func:`layout_graph` (the union layout is cached like any other).

    Returns
    -------
    PaneLayout

    Raises
    ------
    Cancelled
        ``cancel`` was set.
    """
    fs = graph_structure(float_proto)
    qs = graph_structure(quant_proto, collapse_qdq=True)
    pairs = same_output_pairs(float_proto, quant_proto, diff)
    union, where = _union(fs, qs, diff, pairs)
    pos = layout_graph(union, cache_dir=cache_dir, use_cache=use_cache, cancel=cancel)
    return PaneLayout(float_positions={n: pos[union.names[i]] for n, i in where.items()},
                      quant_positions={n: pos[n] for n in qs.names},
                      qdq_marks=qdq_marks(quant_proto, qs), pairs=pairs)


def qdq_marks(quant_proto: onnx.ModelProto, structure: GraphStructure) -> dict[str, list[tuple[str, str, str]]]:
    """Where the pane draws each Q / DQ node of ``quant_proto`` (``structure`` is its collapsed graph).

    Returns
    -------
    dict of str to list of (str, str, str)
        Q/DQ node key -> marks, each ``("edge", producer, consumer)`` (the badge on that drawn edge:
        a Q -> DQ pair between two drawn nodes), ``("tag", node, "")`` (the tag on a drawn node: a
        weight DequantizeLinear, or a pair on a graph input), ``("output", producer, "")`` (a pair
        between a drawn node and a graph output: the pane badges the producer) or
        ``("node", itself, "")`` (a Q/DQ node left drawn). Empty list: nothing drawn is near it.
    """
    nodes = list(quant_proto.graph.node)
    keys = node_keys(nodes)
    drawn = set(structure.names)
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    consumers: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        for t in n.input:
            consumers.setdefault(t, []).append(i)

    def source(i: int) -> str | None:
        """Drawn node feeding the hidden Q/DQ chain that ends at node ``i`` (None: an initializer or input)."""
        for _ in range(len(nodes)):
            p = producer.get(nodes[i].input[0]) if nodes[i].input else None
            if p is None:
                return None
            if keys[p] in drawn:
                return keys[p]
            i = p
        return None

    def readers(i: int, depth: int = 0) -> list[str]:
        """Drawn nodes reading node ``i``'s output through hidden Q/DQ nodes."""
        out: list[str] = []
        for c in consumers.get(nodes[i].output[0], []) if nodes[i].output else []:
            if keys[c] in drawn:
                out.append(keys[c])
            elif depth < 8:
                out += readers(c, depth + 1)
        return out

    outputs = {o.name for o in quant_proto.graph.output}

    def _writes_output(i: int, depth: int = 0) -> bool:
        """True when node ``i``'s hidden Q/DQ chain ends in a graph output."""
        out = nodes[i].output[0] if nodes[i].output else ""
        return out in outputs or (depth < 8 and any(
            keys[c] not in drawn and _writes_output(c, depth + 1) for c in consumers.get(out, [])))

    marks: dict[str, list[tuple[str, str, str]]] = {}
    for i, n in enumerate(nodes):
        if n.op_type not in _QDQ:
            continue
        if keys[i] in drawn:
            marks[keys[i]] = [("node", keys[i], "")]
            continue
        src = source(i)
        marks[keys[i]] = [("edge", src, r) if src is not None else ("tag", r, "") for r in readers(i)]
        if src is not None and _writes_output(i):
            marks[keys[i]].append(("output", src, ""))
    return marks
