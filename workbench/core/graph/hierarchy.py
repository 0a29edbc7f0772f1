"""Groups of graph nodes for the canvas: name scopes, or blocks found from op-type runs.

Exporters from PyTorch name nodes by module path: ``/model.22/cv3.2/conv/Conv`` is the node
``Conv`` inside ``model.22`` > ``cv3.2`` > ``conv``. :func:`build_hierarchy` turns those scopes into
a tree of groups. A group holding a single node is dissolved into its parent (the node is shown
directly), and a group whose only content is one child group is merged with it (title
``"bert/encoder"``), so every box on the canvas stands for at least :data:`MIN_GROUP` nodes.

Models with flat names (fewer than half the nodes carry a scope) get blocks instead: a block
starts at each *anchor* op (Conv, MatMul, Gemm, ... see :data:`ANCHOR_OPS`) in model order and takes
the non-anchor nodes after it (path ``"Conv #12"``). Given the graph's edges, the nodes that only
prepare an anchor's inputs join that anchor's block instead of the block before it (see
:func:`_pull_prefix_chains`): the QuantizeLinear / DequantizeLinear pair of the activation it reads,
the DequantizeLinear of its weight and bias, an onnxruntime DynamicQuantizeLinear with the
Mul/Div/Floor/Cast chain that quantizes the bias from its scale. So a block of a quantized model is
one quantized unit; a float model has no such chain and its blocks stay as model order cuts them. When there are more than :data:`MAX_FLAT_BLOCKS` blocks,
consecutive blocks are gathered into stages of about ``sqrt(#blocks)`` blocks (path ``"#0-9"``). Blocks
and stages are titled by their content (:func:`workbench.core.graph.block_titles.block_title`:
``"Conv ×12, Add ×4 · p2o.Conv.0 – p2o.Add.7"``). All are deterministic functions of the node names,
op types, order and edges.

Pure Python / numpy; never imports Qt.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from workbench.core.graph.block_titles import block_title, common_head

#: Ops that start a block in the flat-name fallback.
ANCHOR_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm", "QLinearConv", "QLinearMatMul",
                        "ConvInteger", "MatMulInteger", "MatMulNBits", "Attention", "LSTM", "GRU", "RNN",
                        "QGemm", "QAttention", "DynamicQuantizeMatMul", "MatMulIntegerToFloat",
                        "DynamicQuantizeLSTM"})
#: Ops that quantize or dequantize an anchor's input: the seeds of a chain that joins the anchor's block.
PREP_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})
#: PREP_OPS whose output is the tensor's data (a node reading it computes the model, not a scale)
_DATA_QDQ = frozenset({"QuantizeLinear", "DequantizeLinear"})
#: More flat blocks than this are gathered into stages.
MAX_FLAT_BLOCKS = 40
#: Groups with fewer nodes than this are dissolved into their parent.
MIN_GROUP = 3
#: How a per-node value is reduced over a group's members (see :func:`aggregate`).
REDUCTIONS = ("min", "max", "mean")


@dataclass
class Hierarchy:
    """A tree of node groups; group ``-1`` is the implicit root (the whole graph).

    Attributes
    ----------
    titles : list of str
        Box title of each group (its scope, e.g. ``"cv3.2"``, or ``"bert/encoder"`` when merged).
    paths : list of str
        Full scope path of each group, ``"/"``-joined (``"model.22/cv3.2"``); unique.
    parent : list of int
        Parent group of each group (``-1``: the root). Parents come before their children.
    depth : list of int
        1 for top-level groups, 2 for their children, ...
    children : dict of int to list of int
        Child groups of each group and of the root (key ``-1``), in model order of their first node.
    direct : dict of int to list of int
        Node indices directly inside each group and the root (key ``-1``), in model order.
    node_group : list of int
        Innermost group of each node (``-1``: directly in the root).
    source : str
        ``"scopes"`` (from names), ``"blocks"`` (flat-name fallback) or ``"none"`` (no group).
    """

    titles: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    children: dict[int, list[int]] = field(default_factory=lambda: {-1: []})
    direct: dict[int, list[int]] = field(default_factory=lambda: {-1: []})
    node_group: list[int] = field(default_factory=list)
    source: str = "none"
    _members: list[np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.titles)

    def members(self, g: int) -> np.ndarray:
        """Indices (int64, sorted) of every node inside group ``g``, at any depth."""
        if self._members is None:
            lists: list[list[int]] = [[] for _ in self.titles]
            for i, g0 in enumerate(self.node_group):
                while g0 >= 0:
                    lists[g0].append(i)
                    g0 = self.parent[g0]
            self._members = [np.asarray(m, dtype=np.int64) for m in lists]
        return self._members[g]

    def ancestors(self, node: int) -> list[int]:
        """Groups containing ``node``, innermost first."""
        out, g = [], self.node_group[node]
        while g >= 0:
            out.append(g)
            g = self.parent[g]
        return out

    def max_depth(self) -> int:
        return max(self.depth, default=0)


def scope_of(name: str) -> list[str]:
    """Scopes of a node name: ``"/model.22/cv3.2/conv/Conv"`` -> ``["model.22", "cv3.2", "conv"]``.

    The last ``/``-separated part is the node's own name; empty parts are dropped, so a name
    without ``/`` (or only a leading one, ``"/Concat_3"``) has no scope.
    """
    parts = [p for p in name.split("/") if p]
    return parts[:-1]


def build_hierarchy(names: list[str], op_types: list[str], edges: list[tuple[int, int]] | None = None) -> Hierarchy:
    """Group nodes by their name scopes, or into op-type-run blocks when names are flat.

    Parameters
    ----------
    names, op_types : list of str
        One entry per node, in model (topological) order, e.g. ``GraphStructure.names``.
    edges : list of (int, int), optional
        Producer -> consumer node index pairs (``GraphStructure.edges``). With them, flat blocks take
        the quantization chain that prepares their anchor's inputs (module docstring); without them,
        blocks are cut by model order alone.

    Returns
    -------
    Hierarchy
        Groups with at least ``MIN_GROUP`` nodes each; nodes of a dissolved group sit in its parent.
    """
    if not names:
        return Hierarchy()
    scopes = [scope_of(n) for n in names]
    if sum(1 for s in scopes if s) * 2 >= len(names):
        return _simplify(_from_paths(scopes), "scopes")
    h = _simplify(_from_paths(_flat_blocks(op_types, edges)), "blocks")
    drop = common_head(names, op_types)
    for g in range(len(h)):  # a block's key ("Conv #12") says nothing: title it by its content
        m = h.members(g).tolist()
        h.titles[g] = block_title([names[i] for i in m], [op_types[i] for i in m], drop, ANCHOR_OPS)
    return h


def _from_paths(paths: list[list[str]]) -> Hierarchy:
    """A raw tree (no simplification) from each node's scope path."""
    h = Hierarchy()
    index: dict[tuple[str, ...], int] = {}
    for i, path in enumerate(paths):
        g = -1
        for k in range(len(path)):
            key = tuple(path[:k + 1])
            child = index.get(key)
            if child is None:
                child = index[key] = len(h.titles)
                h.titles.append(path[k])
                h.paths.append("/".join(key))
                h.parent.append(g)
                h.depth.append(k + 1)
                h.children[child], h.direct[child] = [], []
                h.children[g].append(child)
            g = child
        h.direct[g].append(i)
        h.node_group.append(g)
    return h


def _flat_blocks(op_types: list[str], edges: list[tuple[int, int]] | None = None) -> list[list[str]]:
    """Scope paths of the fallback: ``[stage, block]`` per node (or ``[block]`` when few blocks)."""
    block_of, count = [], 0
    starts = {}  # block -> the op type it is named by: its anchor's, else its first node's
    for k, op in enumerate(op_types):
        if op in ANCHOR_OPS and k > 0:
            count += 1
            starts[count] = op
        block_of.append(count)
        starts.setdefault(count, op)
    if edges:
        block_of = _pull_prefix_chains(op_types, block_of, edges)
    n_blocks = count + 1
    titles = [f"{starts[b]} #{b}" for b in range(n_blocks)]  # op first: it survives eliding
    if n_blocks <= MAX_FLAT_BLOCKS:
        return [[titles[b]] for b in block_of]
    per = math.ceil(math.sqrt(n_blocks))
    stage = [f"#{s * per}-{min(n_blocks, (s + 1) * per) - 1}" for s in range(math.ceil(n_blocks / per))]
    return [[stage[b // per], titles[b]] for b in block_of]


def _pull_prefix_chains(op_types: list[str], block_of: list[int], edges: list[tuple[int, int]]) -> list[int]:
    """``block_of`` with the chain preparing each anchor block's inputs moved into that block.

    A node before anchor ``k`` (in an earlier block, reached backwards from ``k``'s block without
    passing another anchor) joins ``k``'s block when every consumer of it is in that block or joins
    too, and it is a :data:`PREP_OPS` node, or computes only from DynamicQuantizeLinear outputs and
    nodes that join in this way (onnxruntime's Mul/Div/Floor/Cast quantizing the bias with the
    activation scale). So a float model's Relu before the next Conv stays where it is, and so does
    a QDQ model's Add that reads DequantizeLinear outputs. Anchors are handled last to first, so a
    node a later anchor took is not taken again.
    """
    n = len(op_types)
    prods: list[list[int]] = [[] for _ in range(n)]
    cons: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        if a != b:
            prods[b].append(a)
            cons[a].append(b)
    block = list(block_of)
    starts = [k for k in range(1, n) if op_types[k] in ANCHOR_OPS]
    for k, end in reversed(list(zip(starts, [*starts[1:], n][:len(starts)], strict=True))):
        for p in _prefix_chain([x for x in range(k, end) if block[x] == block[k]], op_types, block, prods, cons):
            block[p] = block[k]
    return block


def _prefix_chain(own: list[int], op_types: list[str], block: list[int], prods: list[list[int]],
                  cons: list[list[int]]) -> set[int]:
    """The nodes of :func:`_pull_prefix_chains` that join the block of the anchor ``own[0]``, whose
    nodes from the anchor on are ``own``."""
    k, b = own[0], block[own[0]]
    cand: set[int] = set()
    # non-anchor nodes of earlier blocks upstream of the block all of whose consumers are in it or
    # candidates: visited last to first (a node after all its consumers), so a node feeding anything
    # else stops the walk there (a residual chain of Adds is not walked back to the model's start)
    heap = [-p for p in {p for x in own for p in prods[x]}]
    heapq.heapify(heap)
    seen: set[int] = set()
    while heap:
        p = -heapq.heappop(heap)
        if p in seen or p >= k or block[p] >= b or op_types[p] in ANCHOR_OPS:
            continue
        seen.add(p)
        if all(c in cand or block[c] == b for c in cons[p]):
            cand.add(p)
            for q in prods[p]:
                heapq.heappush(heap, -q)
    work = sorted(cand)
    while work:  # drop what does not fit until nothing changes (a drop re-checks its neighbours)
        p = work.pop()
        if p not in cand:
            continue
        feeds = all(c in cand or block[c] == b for c in cons[p])
        prepares = op_types[p] in PREP_OPS or (bool(prods[p]) and all(
            q in cand and op_types[q] not in _DATA_QDQ for q in prods[p]))
        if not (feeds and prepares):
            cand.discard(p)
            work.extend(q for q in (*prods[p], *cons[p]) if q in cand)
    return cand


def _simplify(raw: Hierarchy, source: str) -> Hierarchy:
    """Dissolve single-node groups, merge single-child chains, renumber parents-first."""
    n_groups = len(raw.titles)
    size = [0] * n_groups
    for g0 in raw.node_group:
        while g0 >= 0:
            size[g0] += 1
            g0 = raw.parent[g0]
    keep = [size[g] >= MIN_GROUP for g in range(n_groups)]
    # merge: a kept group with no direct nodes and exactly one kept child is replaced by that child
    for g in range(n_groups):
        if keep[g] and not raw.direct[g] and len(raw.children[g]) == 1 and keep[raw.children[g][0]]:
            keep[g] = False
            c = raw.children[g][0]
            raw.titles[c] = f"{raw.titles[g]}/{raw.titles[c]}"
    out = Hierarchy(source=source if any(keep) else "none")
    new_id: dict[int, int] = {}

    def target(g: int) -> int:
        while g >= 0 and not keep[g]:
            g = raw.parent[g]
        return new_id[g] if g >= 0 else -1

    for g in range(n_groups):  # raw groups are numbered parents-first, so targets exist already
        if keep[g]:
            p = target(raw.parent[g])
            new_id[g] = len(out.titles)
            out.titles.append(raw.titles[g])
            out.paths.append(raw.paths[g])
            out.parent.append(p)
            out.depth.append(out.depth[p] + 1 if p >= 0 else 1)
            out.children[new_id[g]], out.direct[new_id[g]] = [], []
            out.children[p].append(new_id[g])
    for i, g in enumerate(raw.node_group):
        t = target(g)
        out.node_group.append(t)
        out.direct[t].append(i)
    first = [len(out.node_group)] * len(out.titles)
    for i, g in enumerate(out.node_group):
        while g >= 0 and first[g] > i:
            first[g] = i
            g = out.parent[g]
    for kids in out.children.values():
        kids.sort(key=lambda c: first[c])
    return out


def expanded_to_depth(h: Hierarchy, depth: int) -> set[int]:
    """Groups to expand so that groups of depth ``depth + 1`` show as boxes (``0``: all collapsed)."""
    return {g for g, d in enumerate(h.depth) if d <= depth}


def visible_items(h: Hierarchy, expanded: set[int]) -> int:
    """How many boxes and nodes the canvas draws when exactly ``expanded`` groups are open."""
    count, stack = 0, [-1]
    while stack:
        g = stack.pop()
        count += len(h.direct[g])
        for c in h.children[g]:
            if c in expanded:
                stack.append(c)
            else:
                count += 1
    return count


def auto_depth(h: Hierarchy, max_items: int = 80) -> int:
    """Deepest expansion depth that draws at most ``max_items`` boxes and nodes (at least 0)."""
    best = 0
    for d in range(1, h.max_depth() + 1):
        if visible_items(h, expanded_to_depth(h, d)) > max_items:
            break
        best = d
    return best


def aggregate(h: Hierarchy, values: np.ndarray, how: str = "min", groups: list[int] | None = None) -> np.ndarray:
    """Reduce a per-node figure over each group's members (the number a collapsed box shows).

    Parameters
    ----------
    values : np.ndarray
        float64, shape (n_nodes,); NaN where a node has no value (ignored).
    how : str
        ``"min"`` (e.g. worst SQNR in dB inside), ``"max"`` or ``"mean"`` (e.g. the fraction
        quantized when ``values`` is 1.0 / 0.0 per node).
    groups : list of int, optional
        Only these groups (default: all, in index order).

    Returns
    -------
    np.ndarray
        float64, shape (len(groups),) or (n_groups,); NaN for a group none of whose members has a value.

    Raises
    ------
    ValueError
        ``how`` is not one of :data:`REDUCTIONS` or ``values`` has the wrong length.
    """
    if how not in REDUCTIONS:
        raise ValueError(f"aggregate: how must be one of {REDUCTIONS}, got {how!r}")
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (len(h.node_group),):
        raise ValueError(f"aggregate: expected {len(h.node_group)} values (one per node), got shape {values.shape}")
    groups = list(range(len(h))) if groups is None else list(groups)
    out = np.full(len(groups), np.nan)
    reduce = {"min": np.nanmin, "max": np.nanmax, "mean": np.nanmean}[how]
    for k, g in enumerate(groups):
        v = values[h.members(g)]
        if (~np.isnan(v)).any():
            out[k] = float(reduce(v))
    return out
