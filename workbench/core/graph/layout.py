"""Layered (Sugiyama) layout of an ONNX graph for the canvas, headless and cached.

The graph of a model is read into a :class:`GraphStructure` (one vertex per node, one edge per
producer -> consumer pair, optionally with QuantizeLinear -> DequantizeLinear pairs collapsed into
edge badges), layered by longest path (so every edge points to a later layer) and ordered within
layers by igraph's ``Graph.layout_sugiyama`` (barycenter crossing reduction; Sugiyama, Tagawa &
Toda 1981). An edge spanning several layers gets one dummy vertex per layer it skips; igraph
returns them as the edge's routing. Keeping igraph's order, :mod:`workbench.core.graph.placement` then
places nodes and dummies again (short edges, straight chains, at least one column between neighbours
in a layer), so the canvas draws a long edge through its dummies, between the boxes of the layers it
skips, instead of through them, and a side branch next to the chain it hangs off. Positions and routes
are cached as JSON per graph digest in the user cache directory.

This module never imports Qt.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import onnx

from workbench.core import cache_dirs
from workbench.core.errors import ModelError
from workbench.core.graph.dim_names import dim_of
from workbench.core.graph.op_equivalents import EQUIVALENTS
from workbench.core.graph.op_families import WEIGHT_OPS
from workbench.core.graph.placement import place_routed
from workbench.core.progress import CancelToken, ProgressFn, no_progress

log = logging.getLogger(__name__)

#: Horizontal distance between neighbouring node centres in one layer (scene pixels).
X_SPACING = 190.0
#: Vertical distance between layers (scene pixels).
Y_SPACING = 90.0
#: Bumped whenever the layout algorithm or the cache format changes, so stale cache entries are not reused.
LAYOUT_VERSION = 4

_SUBGRAPH_OPS = {"If", "Loop", "Scan"}
_SHORT_DTYPE = {
    onnx.TensorProto.INT8: "i8", onnx.TensorProto.UINT8: "u8", onnx.TensorProto.INT16: "i16",
    onnx.TensorProto.UINT16: "u16", onnx.TensorProto.INT32: "i32", onnx.TensorProto.FLOAT8E4M3FN: "f8e4m3",
    onnx.TensorProto.FLOAT8E5M2: "f8e5m2",
}
for _name, _short in (("INT4", "i4"), ("UINT4", "u4")):
    if hasattr(onnx.TensorProto, _name):
        _SHORT_DTYPE[getattr(onnx.TensorProto, _name)] = _short


@dataclass
class GraphStructure:
    """The drawable graph of a model: visible nodes and the edges between them.

    Attributes
    ----------
    names, op_types : list of str
        One entry per visible node, in model order (empty node names become ``"<op_type>#<index>"``).
    edges : list of (int, int)
        Unique (producer index, consumer index) pairs.
    edge_tensors : list of str
        The (first) tensor carried by each edge.
    edge_badges : dict of int to str
        Edge index -> text of collapsed Q/DQ pairs on it, e.g. ``"u8"``.
    node_tags : dict of int to str
        Node index -> text of collapsed Q/DQ nodes next to it: weight DequantizeLinear nodes
        feeding it (``"w:i8"``), the bias DequantizeLinear feeding its bias input (``"b:i32"``, see
        :func:`bias_position`), a pair on a graph input it reads (``"in:u8"``) or before a graph
        output it writes (``"out:u8"``); e.g. ``"in:u8 w:i8 b:i32"`` on a Conv.
    has_subgraph : list of bool
        True for If / Loop / Scan nodes (nodes carrying graph attributes).
    hidden : list of str
        Names of the nodes collapsed away (only with ``collapse_qdq``).
    out_shapes : list of str
        Shape of each visible node's first output as the model's value_info states it, e.g.
        ``"1x64x80x80"``: symbolic dims by name (then spaced, ``"batch x 3 x 224 x 224"``), unknown dims,
        dim expressions and the ``unk__N`` names shape inference generates ``?``; ``""`` when not recorded.
    """

    names: list[str] = field(default_factory=list)
    op_types: list[str] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)
    edge_tensors: list[str] = field(default_factory=list)
    edge_badges: dict[int, str] = field(default_factory=dict)
    node_tags: dict[int, str] = field(default_factory=dict)
    has_subgraph: list[bool] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    out_shapes: list[str] = field(default_factory=list)

    def digest(self) -> str:
        """sha256 (hex) of everything the layout depends on: node names, op types and edges."""
        import hashlib  # noqa: PLC0415 - OpenSSL (3.4 MiB resident) only when a layout is keyed, not in every quantize

        h = hashlib.sha256(f"layout-v{LAYOUT_VERSION}\n".encode())
        for name, op in zip(self.names, self.op_types, strict=True):
            h.update(f"{name}\t{op}\n".encode())
        h.update(b"edges\n")
        for a, b in self.edges:
            h.update(f"{a},{b};".encode())
        return h.hexdigest()


def node_keys(nodes) -> list[str]:
    """Unique node keys: the name, or ``"<op_type>#<index>"`` for an empty or repeated name (the
    names :func:`graph_structure` gives the canvas's nodes)."""
    keys, seen = [], set()
    for i, node in enumerate(nodes):
        key = node.name if node.name and node.name not in seen else f"{node.op_type}#{i}"
        seen.add(key)
        keys.append(key)
    return keys


def _subgraph_inputs(node: onnx.NodeProto) -> list[str]:
    """Tensor names used inside the node's subgraphs (outer-scope references among them)."""
    names: list[str] = []
    stack = [a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
    stack += [g for a in node.attribute if a.type == onnx.AttributeProto.GRAPHS for g in a.graphs]
    while stack:
        graph = stack.pop()
        for inner in graph.node:
            names.extend(t for t in inner.input if t)
            stack += [a.g for a in inner.attribute if a.type == onnx.AttributeProto.GRAPH]
    return names


#: bias input position of the recurrent ops (X, W, R, B, ...), which are not weight ops of the planner
_RECURRENT_BIAS = {"LSTM": 3, "GRU": 3, "RNN": 3}
#: bias input position of the normalizations (X, scale, B, ...), whose int32 bias onnxruntime's QDQ files quantize
#: (its QDQNormalization: scale int8, bias int32 at input_scale * scale_scale)
_NORM_BIAS = {"LayerNormalization": 2, "InstanceNormalization": 2, "BatchNormalization": 2}


def bias_position(op_type: str) -> int | None:
    """Input position of the bias ``op_type`` adds (Conv / ConvTranspose / Gemm: 2, LSTM / GRU / RNN: 3,
    LayerNormalization / InstanceNormalization / BatchNormalization: 2, QLinearConv: 8, QGemm: 6, ...); None for
    an op without a bias input (MatMul, Add, ...)."""
    if op_type in WEIGHT_OPS:
        return WEIGHT_OPS[op_type].bias_index
    if op_type in EQUIVALENTS:
        return EQUIVALENTS[op_type].bias
    return _RECURRENT_BIAS.get(op_type, _NORM_BIAS.get(op_type))


def _constant_tag(op_type: str, position: int, dtype: str) -> str:
    """The tag of a folded DequantizeLinear of a constant read at input ``position`` of an ``op_type`` node:
    ``"b:i32"`` at its bias input, ``"w:i8"`` at any other."""
    return ("b:" if position == bias_position(op_type) else "w:") + dtype


def _qdq_badge(q: onnx.NodeProto, init_types: dict[str, int]) -> str:
    if len(q.input) > 2 and q.input[2] in init_types:
        return _SHORT_DTYPE.get(init_types[q.input[2]], "q")
    for a in q.attribute:
        if a.name == "output_dtype" and a.i:
            return _SHORT_DTYPE.get(a.i, "q")
    return "u8"  # ONNX QuantizeLinear: uint8 when no zero_point is given


def _find_hidden(nodes, ops, ins, outs, producer, consumers, init_types, outputs):
    """Indices of Q/DQ nodes to collapse, and the badge text of each collapsed QuantizeLinear
    (or weight DequantizeLinear)."""
    hidden: set[int] = set()
    badges: dict[int, str] = {}
    for i, op in enumerate(ops):
        if op != "QuantizeLinear" or outs[i][0] in outputs:
            continue
        users = consumers.get(outs[i][0], [])
        if users and all(ops[u] == "DequantizeLinear" for u in users):
            hidden.add(i)
            hidden.update(users)
            badges[i] = _qdq_badge(nodes[i], init_types)
    for i, op in enumerate(ops):  # weight DQ: fed by an initializer, no producer node
        if op == "DequantizeLinear" and ins[i][0] in init_types and ins[i][0] not in producer:
            hidden.add(i)
            badges[i] = _SHORT_DTYPE.get(init_types[ins[i][0]], "q")
    return hidden, badges


def _add_tag(tags: dict[int, str], node: int, tag: str) -> None:
    old = tags.get(node)
    if not old:
        tags[node] = tag
    elif tag not in old.split(" "):
        tags[node] = f"{old} {tag}"


def _shape_text(vi: onnx.ValueInfoProto) -> str | None:
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not t.HasField("shape"):
        return None
    # a symbolic dim is shown by name ("batch"); an inferred expression ("floor((h - 1)/2) + 1"), a name onnx /
    # onnxruntime shape inference made up ("unk__2"), a placeholder ("dynamic") and a negative size (-1) as "?"
    dims = ["?" if v is None else str(v) for v in map(dim_of, t.shape.dim)]
    named = any(not (d.isdigit() or d == "?") for d in dims)  # "batch x 3", not "batchx3"
    return (" x " if named else "x").join(dims) or "scalar"


def _tensor_shapes(graph: onnx.GraphProto) -> dict[str, str]:
    """Tensor name -> shape text, from value_info, graph outputs and inputs."""
    out: dict[str, str] = {}
    for vi in (*graph.input, *graph.value_info, *graph.output):
        text = _shape_text(vi)
        if text is not None:
            out[vi.name] = text
    return out


def graph_structure(proto: onnx.ModelProto, *, collapse_qdq: bool = False) -> GraphStructure:
    """Read the drawable graph of ``proto`` (the main graph; subgraphs stay inside their If/Loop node).

    Parameters
    ----------
    proto : onnx.ModelProto
        The model; not modified.
    collapse_qdq : bool
        Hide each QuantizeLinear -> DequantizeLinear pair: the edge from the producer to the DQ's
        consumers gets a badge with the quantized dtype (``"u8"``); a pair on a graph input becomes
        a tag (``"in:u8"``) on its consumers, a pair before a graph output a tag (``"out:u8"``)
        on its producer. DequantizeLinear nodes of weights (fed by an initializer) are hidden too
        and become a tag on their consumer: ``"b:i32"`` at its bias input, else ``"w:i8"``.

    Raises
    ------
    ModelError
        ``proto`` is not an ``onnx.ModelProto``.
    """
    if not isinstance(proto, onnx.ModelProto):
        raise ModelError(f"layout: expected an onnx.ModelProto, got {type(proto).__name__}.",
                         hint="Pass PreparedModel.proto.")
    nodes = list(proto.graph.node)
    keys = node_keys(nodes)
    ops = [n.op_type for n in nodes]
    ins = [n.input[:] for n in nodes]  # protobuf field access is slow: read each field once
    outs = [n.output[:] for n in nodes]  # (slicing a repeated field is ~2x faster than list())
    producer = {t: i for i, o in enumerate(outs) for t in o if t}
    consumers: dict[str, list[int]] = {}
    for i, inputs in enumerate(ins):
        for t in inputs:
            consumers.setdefault(t, []).append(i)
    init_types = {t.name: t.data_type for t in proto.graph.initializer}
    outputs = {o.name for o in proto.graph.output}
    hidden, badges = (_find_hidden(nodes, ops, ins, outs, producer, consumers, init_types, outputs)
                      if collapse_qdq else (set(), {}))
    index = {}
    s = GraphStructure()
    shapes = _tensor_shapes(proto.graph)
    for i, n in enumerate(nodes):
        if i not in hidden:
            index[i] = len(s.names)
            s.names.append(keys[i])
            s.op_types.append(ops[i])
            s.out_shapes.append(shapes.get(outs[i][0], "") if outs[i] else "")
            s.has_subgraph.append(ops[i] in _SUBGRAPH_OPS or (len(n.attribute) > 0 and any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute)))
    s.hidden = [keys[i] for i in sorted(hidden)]

    def resolve(tensor: str) -> tuple[int | None, list[str], str]:
        """Visible producer of ``tensor`` through collapsed Q/DQ nodes, the badges passed and the tensor
        the walk stopped at (a graph input or an initializer when there is no producer)."""
        trail: list[str] = []
        for _ in range(len(nodes) + 1):
            p = producer.get(tensor)
            if p is None or p not in hidden:
                return p, trail, tensor
            if p in badges:  # weight DQ: no source node
                return None, trail, tensor
            q = producer.get(ins[p][0])
            if q is None or q not in badges:
                return None, trail, tensor
            trail.insert(0, badges[q])
            tensor = ins[q][0]
        return None, trail, tensor

    seen: dict[tuple[int, int], int] = {}
    for i, n in enumerate(nodes):
        if i in hidden:
            continue
        used = ins[i] + (_subgraph_inputs(n) if s.has_subgraph[index[i]] else [])
        for position, t in enumerate(used):
            if not t:
                continue
            p = producer.get(t)
            if not hidden:  # fast path: nothing collapsed
                if p is not None and p != i and (p, i) not in seen:
                    seen[(p, i)] = len(s.edges)
                    s.edges.append((p, i))
                    s.edge_tensors.append(t)
                continue
            if p is not None and p in hidden and p in badges and ops[p] == "DequantizeLinear" \
                    and ins[p][0] in init_types:
                _add_tag(s.node_tags, index[i], _constant_tag(ops[i], position, badges[p]))
                continue
            src, trail, origin = resolve(t)
            if src is None and trail:  # Q/DQ of a graph input, or of a weight quantized at run time: tag the consumer
                _add_tag(s.node_tags, index[i], _constant_tag(ops[i], position, trail[-1]) if origin in init_types
                         else "in:" + trail[-1])
            if src is None or src == i:
                continue
            pair = (index[src], index[i])
            if pair not in seen:
                seen[pair] = len(s.edges)
                s.edges.append(pair)
                s.edge_tensors.append(t)
            if trail:
                s.edge_badges[seen[pair]] = " ".join(trail)
    for q, badge in badges.items():  # a pair before a graph output: no edge to badge, tag its producer
        if ops[q] == "QuantizeLinear" and any(outs[d][0] in outputs for d in consumers.get(outs[q][0], [])):
            src, _trail, _origin = resolve(ins[q][0])
            if src is not None:
                _add_tag(s.node_tags, index[src], "out:" + badge)
    return s


def assign_layers(n: int, edges: list[tuple[int, int]]) -> list[int]:
    """Longest-path layering: ``layer[v] = 1 + max(layer[u] for u -> v)``, sources pulled down.

    A node without producers (e.g. a Shape of a graph input or a constant generator) is placed
    one layer above its nearest consumer instead of in layer 0. Nodes on a cycle (invalid ONNX)
    are placed after the acyclic part.
    """
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for a, b in edges:
        succ[a].append(b)
        indeg[b] += 1
    layer = [0] * n
    queue = deque(v for v in range(n) if indeg[v] == 0)
    order = []
    while queue:
        v = queue.popleft()
        order.append(v)
        for w in succ[v]:
            layer[w] = max(layer[w], layer[v] + 1)
            indeg[w] -= 1
            if indeg[w] == 0:
                queue.append(w)
    if len(order) < n:
        top = max(layer, default=0) + 1
        for v in range(n):
            if indeg[v] > 0:
                layer[v] = top
                log.warning("layout: node %d is on a cycle; placed in the last layer", v)
    has_pred = [False] * n
    for _, b in edges:
        has_pred[b] = True
    for v in reversed(order):
        if not has_pred[v] and succ[v]:
            layer[v] = max(layer[v], min(layer[w] for w in succ[v]) - 1)
    return layer


@dataclass
class GraphLayout:
    """A layered layout: node centres and the routes of edges that skip layers.

    Attributes
    ----------
    positions : dict of str to (float, float)
        Node name -> (x, y) centre in scene pixels (see :func:`layout_graph`).
    routes : dict of int to list of (float, float)
        Edge index (into ``GraphStructure.edges``) -> waypoints (x, y) in scene pixels, top to
        bottom, one per layer the edge skips (an edge from layer 2 to layer 6 has 3), at the
        layer's centre line ``y = layer * Y_SPACING``. Each waypoint is a dummy vertex of the
        Sugiyama layout, so it lies at least ``X_SPACING`` from the centre of any node of its
        layer. Edges into the next layer have no entry.
    """

    positions: dict[str, tuple[float, float]] = field(default_factory=dict)
    routes: dict[int, list[tuple[float, float]]] = field(default_factory=dict)


def sugiyama(n: int, edges: list[tuple[int, int]], layers: list[int], maxiter: int
             ) -> tuple[list[float], list[list[tuple[float, int]]]]:
    """igraph's Sugiyama ordering of ``n`` vertices on fixed ``layers``, with long-edge routing.

    Each weakly connected component is laid out on its own and the components are placed side by
    side, left to right in the order of their first vertex, one column apart (igraph 1.0 returns
    the edge routing of a disconnected graph misaligned with its edges).

    Returns
    -------
    xs : list of float
        x of each vertex in column units as igraph places it (Brandes & Köpf): neighbours in a layer, dummies
        included, are mostly at least 1 apart but can be closer, even at one x (:func:`layout_routed` places
        them again with :func:`~workbench.core.graph.placement.place_routed`).
    routing : list of list of (float, int)
        Per edge (in the order of ``edges``): its dummy vertices as (x in column units, layer),
        one per layer strictly between the ends' layers, top to bottom; [] for an edge into the
        next layer (or one that does not point down).
    """
    import igraph  # imported lazily: only the layout needs it (igraph >= 1.0 returns the routing)

    graph = igraph.Graph(n=n, edges=edges, directed=True)
    membership = graph.connected_components(mode="weak").membership if n else []
    if n and max(membership) == 0:  # connected (most calls): no split
        lay = graph.layout_sugiyama(layers=layers, hgap=1, vgap=1, maxiter=maxiter)
        routing = [[(float(x), round(y)) for x, y in pts] for pts in lay.edge_routing]
        for e, (a, b) in enumerate(edges):
            if len(routing[e]) != max(layers[b] - layers[a] - 1, 0):
                routing[e] = []
        return [float(x) for x, _y in lay.coords[:n]], routing
    members: dict[int, list[int]] = {}
    for v, c in enumerate(membership):
        members.setdefault(c, []).append(v)
    comp_edges: dict[int, list[int]] = {}
    for e, (a, _b) in enumerate(edges):
        comp_edges.setdefault(membership[a], []).append(e)
    xs = [0.0] * n
    routing: list[list[tuple[float, int]]] = [[] for _ in edges]
    offset = 0.0
    for c, verts in members.items():  # components in the order of their first vertex
        if len(verts) == 1:
            xs[verts[0]] = offset
            offset += 1.0
            continue
        local = {v: k for k, v in enumerate(verts)}
        ids = comp_edges.get(c, [])
        sub = igraph.Graph(n=len(verts), edges=[(local[edges[e][0]], local[edges[e][1]]) for e in ids], directed=True)
        lay = sub.layout_sugiyama(layers=[layers[v] for v in verts], hgap=1, vgap=1, maxiter=maxiter)
        sub_x = [float(x) for x, _y in lay.coords[:len(verts)]]
        sub_routes = getattr(lay, "edge_routing", None) or [[] for _ in ids]
        lo = min([*sub_x, *(float(x) for pts in sub_routes for x, _y in pts)])
        hi = offset
        for v, x in zip(verts, sub_x, strict=True):
            xs[v] = x - lo + offset
            hi = max(hi, xs[v])
        for e, pts in zip(ids, sub_routes, strict=True):
            a, b = edges[e]
            route = [(float(x) - lo + offset, round(y)) for x, y in pts]
            if [lay_ for _x, lay_ in route] == list(range(layers[a] + 1, layers[b])):  # as documented, or none
                routing[e] = route
                hi = max([hi, *(x for x, _l in route)])
        offset = hi + 1.0
    return xs, routing


def _sugiyama(structure: GraphStructure) -> tuple[list[tuple[float, float]], dict[int, list[tuple[float, float]]]]:
    n = len(structure.names)
    layers = assign_layers(n, structure.edges)
    # crossing-reduction sweeps: 100 on small graphs, fewer on huge ones (each sweep is O(edges))
    maxiter = max(10, min(100, 200_000 // max(n, 1)))
    xs, routing = place_routed(n, structure.edges, layers, *sugiyama(n, structure.edges, layers, maxiter))
    pos = [(x * X_SPACING, float(layers[i]) * Y_SPACING) for i, x in enumerate(xs)]
    routes = {e: [(x * X_SPACING, float(y) * Y_SPACING) for x, y in pts] for e, pts in enumerate(routing) if pts}
    return pos, routes


def default_cache_dir() -> Path:
    """``$WORKBENCH_CACHE_DIR/layout`` when set, else ``<platformdirs user cache>/workbench/layout``."""
    return cache_dirs.cache_dir("layout")


def _read_cache(path: Path, names: list[str]) -> GraphLayout | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != LAYOUT_VERSION or data.get("names") != names:
            return None
        positions = {name: (float(x), float(y)) for name, x, y in zip(names, data["x"], data["y"], strict=True)}
        routes = {int(e): [(float(pts[k]), float(pts[k + 1])) for k in range(0, len(pts) - 1, 2)]
                  for e, pts in data["routes"]}
    except (OSError, ValueError, KeyError, TypeError):  # unreadable or foreign: lay out again
        return None
    return GraphLayout(positions, routes)


def _write_cache(path: Path, names: list[str], pos: list[tuple[float, float]],
                 routes: dict[int, list[tuple[float, float]]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"version": LAYOUT_VERSION, "names": names,
                   "x": [p[0] for p in pos], "y": [p[1] for p in pos],
                   "routes": [[e, [c for pt in pts for c in pt]] for e, pts in sorted(routes.items())]}
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(payload, f)
        os.replace(tmp, path)
    except OSError as exc:  # a read-only cache is not an error: the layout is just recomputed next time
        log.warning("layout: cannot write cache %s (%s)", path, exc)


def layout_graph(
    proto: onnx.ModelProto | GraphStructure,
    *,
    collapse_qdq: bool = False,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> dict[str, tuple[float, float]]:
    """Node centre positions of a layered layout of the model's main graph
    (:attr:`GraphLayout.positions` of :func:`layout_routed`; same parameters and errors).

    Returns
    -------
    dict of str to (float, float)
        Node name -> (x, y) centre in scene pixels. ``y`` grows with the layer (layer * ``Y_SPACING``),
        so for every edge the consumer's y is greater than the producer's; neighbours in a layer are
        at least ``X_SPACING`` apart. Deterministic for a given graph.
    """
    return layout_routed(proto, collapse_qdq=collapse_qdq, cache_dir=cache_dir, use_cache=use_cache,
                         progress=progress, cancel=cancel).positions


def layout_routed(
    proto: onnx.ModelProto | GraphStructure,
    *,
    collapse_qdq: bool = False,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> GraphLayout:
    """Layered layout of the model's main graph: node centres and long-edge routes.

    Parameters
    ----------
    proto : onnx.ModelProto or GraphStructure
        The model (read with :func:`graph_structure`) or an already read structure.
    collapse_qdq : bool
        Passed to :func:`graph_structure` (ignored when a structure is given).
    cache_dir : str or Path, optional
        Where layouts are cached as ``<digest>.json``; default :func:`default_cache_dir`. The key is
        :meth:`GraphStructure.digest` (sha256 of node names, op types and edges), so the same model
        file, or any model with the same graph, reuses the layout.
    use_cache : bool
        False skips reading and writing the cache.
    progress, cancel
        ``progress(done, total, message)`` callback and cancel token, checked between steps.

    Returns
    -------
    GraphLayout
        Positions (``y = layer * Y_SPACING``, neighbours in a layer at least ``X_SPACING`` apart)
        and, per edge skipping layers, one waypoint per skipped layer. Deterministic for a given graph.

    Raises
    ------
    ModelError
        ``proto`` is neither a ModelProto nor a GraphStructure.
    Cancelled
        ``cancel`` was set.
    """
    progress = progress or no_progress
    progress(0, 3, "Reading graph")
    structure = proto if isinstance(proto, GraphStructure) else graph_structure(proto, collapse_qdq=collapse_qdq)
    if cancel:
        cancel.check()
    path = Path(cache_dir or default_cache_dir()) / f"{structure.digest()}.json"
    if use_cache and (cached := _read_cache(path, structure.names)) is not None:
        progress(3, 3, "Layout read from cache")
        return cached
    progress(1, 3, f"Laying out {len(structure.names)} nodes")
    pos, routes = _sugiyama(structure) if structure.names else ([], {})
    if cancel:
        cancel.check()
    if use_cache:
        progress(2, 3, "Caching layout")
        _write_cache(path, structure.names, pos, routes)
    progress(3, 3, "Layout done")
    return GraphLayout(dict(zip(structure.names, pos, strict=True)), routes)
