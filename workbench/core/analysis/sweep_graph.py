"""Small models for the sensitivity sweep: one unit switched, the rest read from cached activations.

For unit ``u`` the sweep needs the model outputs of two variants:

* **only u quantized** -- the float model with u's nodes replaced by u's QDQ fragment (the
  DequantizeLinear of its inputs and weights, its node(s), the Q -> DQ of its outputs);
* **only u float** -- the QDQ model with u's node(s) reading the float inputs and float weights.

Everything upstream of u is identical to a base model (float, resp. QDQ) whose activations were
computed once and cached. So each variant is a *suffix* model: the changed nodes plus the nodes
downstream of them; every other tensor it reads becomes a graph input fed from the cache. Its
outputs equal those of the whole variant model (same nodes, same inputs), at the cost of the
downstream part only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from workbench.core.graph.index import subgraphs


@dataclass
class Suffix:
    """A suffix model: ``proto`` reads ``inputs`` (cached tensors of the base run) and writes
    ``outputs`` (the base model's outputs, in order, renamed where the variant renames them) and
    ``probes`` (extra tensors, e.g. the unit's fake-quantized output). ``same_as_base``: the
    variant computes exactly what the base model does (nothing of it changes), so its outputs are
    the base run's and nothing needs to run."""

    proto: onnx.ModelProto
    inputs: list[str]
    outputs: list[str]
    probes: list[str]
    same_as_base: bool = False


def _implicit_inputs(node: onnx.NodeProto) -> set[str]:
    """Outer-scope tensors read inside ``node``'s subgraphs (If / Loop / Scan bodies)."""
    used: set[str] = set()
    produced: set[str] = set()
    stack = list(subgraphs(node))
    while stack:
        g = stack.pop()
        produced.update(i.name for i in g.initializer)
        produced.update(i.name for i in g.input)
        for n in g.node:
            used.update(x for x in n.input if x)
            produced.update(n.output)
            stack.extend(subgraphs(n))
    return used - produced


_GRAPH_TYPES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


def node_reads(node: onnx.NodeProto) -> set[str]:
    """Every tensor ``node`` reads: its inputs and what its subgraphs take from the outer scope."""
    out = {x for x in node.input if x}
    if node.attribute and any(a.type in _GRAPH_TYPES for a in node.attribute):
        out |= _implicit_inputs(node)
    return out


def downstream(nodes: list[onnx.NodeProto], start: set[str], skip: set[str],
               reads: list[set[str]] | None = None) -> list[onnx.NodeProto]:
    """Nodes (in the given topological order) that read ``start`` tensors, directly or transitively.

    Nodes whose name is in ``skip`` are left out (and do not propagate). ``reads`` (the
    :func:`node_reads` of each node) may be passed when calling many times.
    """
    live = set(start)
    out = []
    for n, r in zip(nodes, reads if reads is not None else map(node_reads, nodes), strict=True):
        if n.name in skip:
            continue
        if not live.isdisjoint(r):
            out.append(n)
            live.update(n.output)
    return out


class FragmentStop:
    """The tensors a unit's QDQ fragment stops at (``stop`` of :func:`backward_closure`): tensors of
    ``available`` (the float model's) that the unit does not write (``internal``), and the QDQ
    model's initializers and graph inputs (``q_sources``). Answers ``in`` without building the set
    (thousands of names, once per unit)."""

    def __init__(self, available, internal: set[str], q_sources: set[str]) -> None:
        self.available, self.internal, self.q_sources = available, internal, q_sources

    def __contains__(self, x: str) -> bool:
        return (x in self.available and x not in self.internal) or x in self.q_sources


def backward_closure(nodes: list[onnx.NodeProto], targets: list[str], stop,
                     producer: dict[str, int] | None = None) -> list[onnx.NodeProto]:
    """Nodes needed to compute ``targets`` from the ``stop`` tensors (topological order kept).

    ``stop``: a set of names, or anything answering ``in`` (:class:`FragmentStop`). ``producer``
    (tensor -> index in ``nodes``) may be passed when calling many times."""
    if producer is None:
        producer = {o: i for i, n in enumerate(nodes) for o in n.output}
    need, seen = list(targets), set()
    picked: set[int] = set()
    while need:
        t = need.pop()
        if t in seen or t in stop or t not in producer:
            continue
        seen.add(t)
        i = producer[t]
        if i not in picked:
            picked.add(i)
            need.extend(node_reads(nodes[i]))
    return [nodes[i] for i in sorted(picked)]


def _renamed(node: onnx.NodeProto, renames: dict[str, str]) -> onnx.NodeProto:
    if renames.keys().isdisjoint(node.input):
        return node
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    for i, x in enumerate(copy.input):
        copy.input[i] = renames.get(x, x)
    return copy


def assemble(nodes: list[onnx.NodeProto], inits: dict[str, onnx.TensorProto], outputs: list[str],
             probes: list[str], available: dict[str, int], opsets, build: bool = True) -> Suffix:
    """A model of ``nodes`` whose free tensors become graph inputs (types from ``available``:
    tensor name -> ONNX elem type). ``build=False`` only works out the inputs (``proto`` None)."""
    produced = {o for n in nodes for o in n.output}
    reads: list[str] = []
    for n in nodes:
        reads.extend(sorted(node_reads(n)))
    inputs = list(dict.fromkeys(x for x in reads if x not in produced and x not in inits))
    used_inits = [inits[x] for x in dict.fromkeys(reads) if x in inits and x not in produced]
    missing = [x for x in inputs if x not in available]
    if missing:
        raise KeyError(f"suffix model reads uncached tensors {missing[:3]}")
    if not build:
        return Suffix(None, inputs, outputs, probes)
    graph = helper.make_graph(
        list(nodes), "suffix",
        [helper.make_tensor_value_info(x, available[x], None) for x in inputs],
        [helper.make_empty_tensor_value_info(o) for o in dict.fromkeys(outputs + probes) if o in produced],
        initializer=used_inits)
    proto = helper.make_model(graph, opset_imports=list(opsets))
    proto.ir_version = max(proto.ir_version, 8)
    return Suffix(proto, inputs, outputs, probes)


@dataclass
class PairIndex:
    """What every suffix of one float / QDQ model pair reads from the two graphs, worked out once
    (node lists, each node's reads, initializers by name, producers) instead of once per unit."""

    f_nodes: list[onnx.NodeProto]
    q_nodes: list[onnx.NodeProto]
    f_reads: list[set[str]]
    q_reads: list[set[str]]
    inits: dict[str, onnx.TensorProto]
    weights: set[str]
    q_sources: set[str]
    q_producer: dict[str, onnx.NodeProto]
    q_position: dict[str, int]  # tensor -> index in q_nodes of the node writing it
    f_by_name: dict[str, onnx.NodeProto]  # the last float node of each name
    f_outputs: dict[str, list[str]]  # node name -> what the float nodes of that name write

    def unit_outputs(self, unit_nodes: set[str]) -> set[str]:
        """Tensors the float model's nodes named ``unit_nodes`` write."""
        return {o for name in unit_nodes for o in self.f_outputs.get(name, ())}


def pair_index(fp: onnx.ModelProto, qp: onnx.ModelProto) -> PairIndex:
    """The :class:`PairIndex` of ``fp`` (float) and ``qp`` (QDQ)."""
    f_nodes, q_nodes = list(fp.graph.node), list(qp.graph.node)
    inits = {i.name: i for i in fp.graph.initializer}
    inits.update({i.name: i for i in qp.graph.initializer})
    return PairIndex(f_nodes, q_nodes, [node_reads(n) for n in f_nodes], [node_reads(n) for n in q_nodes], inits,
                     {i.name for i in fp.graph.initializer},
                     {i.name for i in qp.graph.initializer} | {i.name for i in qp.graph.input},
                     {o: n for n in q_nodes for o in n.output if o},
                     {o: i for i, n in enumerate(q_nodes) for o in n.output}, {n.name: n for n in f_nodes},
                     _outputs_by_name(f_nodes))


def _outputs_by_name(nodes: list[onnx.NodeProto]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for n in nodes:
        out.setdefault(n.name, []).extend(n.output)
    return out


#: integer element types whose DequantizeLinear :func:`exact_weight` evaluates
_INT_TYPES = {onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT16, onnx.TensorProto.UINT16,
              onnx.TensorProto.INT32}


def exact_weight(ix: PairIndex, weight: str, dequantized: str) -> bool:
    """True when ``dequantized`` is a DequantizeLinear of initializers (integer data, per-tensor or
    per-axis scale, no blocks) whose value equals the float initializer ``weight`` bit for bit:
    ``(float32)(q - zero_point) * scale`` (the ONNX operator's formula, in float32 as onnxruntime
    computes it). False whenever that cannot be shown."""
    node = ix.q_producer.get(dequantized)
    if (node is None or node.op_type != "DequantizeLinear" or weight not in ix.inits
            or any(x and x not in ix.inits for x in node.input)):
        return False
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    data = ix.inits[node.input[0]]
    if attrs.get("block_size") or data.data_type not in _INT_TYPES:
        return False
    q = numpy_helper.to_array(data).astype(np.int64)
    scale = numpy_helper.to_array(ix.inits[node.input[1]]).astype(np.float32)
    zp = (numpy_helper.to_array(ix.inits[node.input[2]]).astype(np.int64) if len(node.input) > 2 and node.input[2]
          else np.zeros_like(scale, dtype=np.int64))
    if scale.ndim == 1 and scale.size > 1:
        axis = attrs.get("axis", 1) % max(q.ndim, 1)
        shape = [1] * q.ndim
        shape[axis] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    elif scale.size != 1:
        return False
    value = (q - zp).astype(np.float32) * scale
    want = numpy_helper.to_array(ix.inits[weight])
    return want.dtype == np.float32 and value.shape == want.shape and bool(np.array_equal(value, want))


def only_quantized(fp: onnx.ModelProto, qp: onnx.ModelProto, unit, tensor_map: dict[str, str],
                   available: dict[str, int], build: bool = True, index: PairIndex | None = None) -> Suffix:
    """Suffix of the float model ``fp`` where only ``unit`` runs as in the QDQ model ``qp``.

    ``probes`` are the unit's fake-quantized outputs (``tensor_map`` names, renamed into the
    float namespace as ``outputs``' consumers read them). A unit that writes float
    (``unit.writes_float``, MatMul / Gemm) alone has no quantized reader, so its output is taken
    before its Q -> DQ pair, as the model with only this unit quantized writes it.
    """
    ix = index or pair_index(fp, qp)
    unit_nodes = set(unit.nodes) | {unit.node}
    f_nodes = ix.f_nodes
    internal = ix.unit_outputs(unit_nodes)
    targets = [t if unit.writes_float else tensor_map.get(t, t) for t in unit.results]
    fragment = backward_closure(ix.q_nodes, targets, FragmentStop(available, internal, ix.q_sources), ix.q_position)
    fragment_outs = {o for n in fragment for o in n.output}
    # the writer gives every reader of a quantized tensor the DQ value: other readers of the
    # unit's activation inputs see them quantized too
    weights = ix.weights
    acts = [x for x in unit.inputs if x in tensor_map and x not in weights]
    renames = {t: tensor_map[t] for t in unit.results + acts if tensor_map.get(t) in fragment_outs}
    after = [_renamed(n, renames) for n in downstream(f_nodes, set(unit.results) | set(acts), unit_nodes,
                                                        ix.f_reads)]
    inits = ix.inits
    outputs = [renames.get(o.name, o.name) for o in fp.graph.output]
    return assemble(fragment + after, inits, outputs, targets, available, qp.opset_import, build)


def side_reads(ix: PairIndex, units, tensor_map: dict[str, str]) -> set[str]:
    """Tensors of the float model that some unit's "only quantized" suffix (:func:`only_quantized`)
    reads from outside itself other than through its fragment: tensors computed upstream of the unit
    that a node downstream of it reads (the other branch of a residual Add, a shape computed from the
    input; ppocrv4_rec: 20 beside the fragments' 263 inputs, nudenet_320n 11, digits_transformer 28).
    One walk of the float graph with a bit per unit (a tensor's bits: the units downstream of which
    it is computed) instead of :func:`downstream` per unit (ppocrv4_rec, 208 units: 0.37 s). Initializers
    are left out; graph inputs are not."""
    live: dict[str, int] = {}
    skip: dict[str, int] = {}
    for i, unit in enumerate(units):
        bit = 1 << i
        acts = [x for x in unit.inputs if x in tensor_map and x not in ix.weights]
        for t in [*unit.results, *acts]:
            live[t] = live.get(t, 0) | bit
        for name in {unit.node, *unit.nodes}:
            skip[name] = skip.get(name, 0) | bit
    out: set[str] = set()
    for n, reads in zip(ix.f_nodes, ix.f_reads, strict=True):
        mask = 0
        for x in reads:
            mask |= live.get(x, 0)
        mask &= ~skip.get(n.name, 0)
        if not mask:
            continue
        out.update(x for x in reads if mask & ~live.get(x, 0) and x not in ix.inits)
        for o in n.output:
            live[o] = live.get(o, 0) | mask
    return out


def only_float(fp: onnx.ModelProto, qp: onnx.ModelProto, unit, tensor_map: dict[str, str], available: dict[str, int],
               own: set[str], build: bool = True, index: PairIndex | None = None) -> Suffix:
    """Suffix of the QDQ model ``qp`` where ``unit``'s node(s) read float inputs and float weights.

    ``own`` are the unit's input and output tensors whose Q -> DQ pair only this unit asked for:
    with the unit in float they are not quantized, so their readers take the float value. Other
    activation inputs keep their pair (as the writer rewires every reader of a kept pair). When that
    changes nothing (no own tensor, and every weight dequantizes to its float value exactly: an
    element-wise unit between quantized units computes DQ -> op -> Q either way), the result is
    ``same_as_base`` and has no model.
    """
    ix = index or pair_index(fp, qp)
    unit_nodes = set(unit.nodes) | {unit.node}
    f_by_name = {name: ix.f_by_name[name] for name in unit_nodes if name in ix.f_by_name}
    internal = {o for m in f_by_name.values() for o in m.output}
    weights = ix.weights
    q_nodes = ix.q_nodes
    swapped, src, changed = [], {}, False
    for n in q_nodes:
        if n.name not in unit_nodes or n.name not in f_by_name:
            continue
        f = f_by_name[n.name]
        copy = onnx.NodeProto()
        copy.CopyFrom(n)
        for i, x in enumerate(f.input):
            if i < len(copy.input) and x not in internal and (x in weights or x not in tensor_map
                                                            or x in own):
                copy.input[i] = x
        swapped.append(copy)
        changed = changed or any(a != b and not (a in weights and exact_weight(ix, a, b))
                                 for a, b in zip(copy.input, n.input, strict=True))
        src.update(zip(f.output, n.output, strict=False))
    renames = {tensor_map[t]: src[t] for t in own if t in tensor_map and t in src}
    if swapped and not renames and not changed:
        # every activation the unit reads keeps its pair (other units share it) and its weights
        # dequantize to their float values exactly (a scalar HardSwish constant): the variant is
        # the QDQ model itself
        return Suffix(None, [], [o.name for o in qp.graph.output], [], same_as_base=True)
    outs = {o for n in swapped for o in n.output}
    after = [_renamed(n, renames) for n in downstream(q_nodes, outs, unit_nodes, ix.q_reads)]
    inits = ix.inits
    outputs = [renames.get(o.name, o.name) for o in qp.graph.output]
    return assemble(swapped + after, inits, outputs, [], available, qp.opset_import, build)


def with_fragments(fp: onnx.ModelProto, qp: onnx.ModelProto, units, tensor_map: dict[str, str],
                   available: dict[str, int]) -> tuple[Suffix, dict[str, list[tuple[str, str]]]]:
    """Every unit's QDQ fragment side by side, each reading float tensors: the float tensors the fragments
    read and compare with are graph inputs (``Suffix.inputs``), computed by another session (the float
    model's, :func:`workbench.core.analysis.sweep_tasks.run_fragments`).

    Returns the model (outputs: ``<fragment output>#sig`` = sum(ref^2) and ``#err`` =
    sum((ref - q)^2), float32 scalars) and, per unit, ``[(fragment output, float tensor), ...]``.
    A unit's node(s) and their Q -> DQ get a ``#<i>`` suffix (their float names are taken).
    """
    q_nodes = list(qp.graph.node)
    q_inits = {i.name for i in qp.graph.initializer} | {i.name for i in qp.graph.input}
    producer = {o: k for k, n in enumerate(q_nodes) for o in n.output}
    f_outputs = _outputs_by_name(fp.graph.node)
    nodes: list[onnx.NodeProto] = []
    shared: set[str] = set()
    probes: dict[str, list[tuple[str, str]]] = {}
    for i, unit in enumerate(units):
        unit_nodes = set(unit.nodes) | {unit.node}
        internal = {o for name in unit_nodes for o in f_outputs.get(name, ())}
        targets = [tensor_map.get(t, t) for t in unit.results]
        frag = backward_closure(q_nodes, targets, FragmentStop(available, internal, q_inits), producer)
        mine = join_fragment(nodes, shared, frag, unit_nodes, i)
        probes[unit.node] = [(mine[q], t) for q, t in zip(targets, unit.results, strict=True) if q in mine]
    inits = {i.name: i for i in fp.graph.initializer}
    inits.update({i.name: i for i in qp.graph.initializer})
    # the error sums are computed in the graph: two scalars per unit leave the session, not two
    # activations (sum(ref^2) and sum((ref - q)^2), float32 ReduceSumSquare over all elements)
    sums = []
    for k, (p, t) in enumerate(pt for ps in probes.values() for pt in ps):
        nodes += [helper.make_node("Sub", [t, p], [f"{p}#d"], name=f"sens_sub#{k}"),
                  helper.make_node("ReduceSumSquare", [t], [f"{p}#sig"], name=f"sens_sig#{k}", keepdims=0),
                  helper.make_node("ReduceSumSquare", [f"{p}#d"], [f"{p}#err"], name=f"sens_err#{k}", keepdims=0)]
        sums += [f"{p}#sig", f"{p}#err"]
    return assemble(nodes, inits, sums, [], available, qp.opset_import), probes


def join_fragment(nodes: list[onnx.NodeProto], shared: set[str], frag: list[onnx.NodeProto], unit_nodes: set[str],
                  i: int) -> dict[str, str]:
    """Append unit ``i``'s QDQ fragment ``frag`` (nodes of the QDQ model) to ``nodes``, beside the others.

    The unit's own node(s) (``unit_nodes``) and whatever reads their outputs are copied with a ``#<i>``
    suffix on their name and outputs (their tensor names are the float model's, which the float tensors
    the fragments read keep); the other nodes (Q -> DQ of float tensors, weight DequantizeLinear) are
    added once and shared: ``shared`` holds the outputs added so far. Returns the renames of this
    fragment's outputs (tensor -> its ``#<i>`` name)."""
    mine: dict[str, str] = {}
    for n in frag:
        if n.name in unit_nodes or any(x in mine for x in n.input):
            mine.update((o, f"{o}#{i}") for o in n.output if o)
        elif not shared.isdisjoint(n.output):
            continue
        else:
            shared.update(n.output)
            nodes.append(n)
            continue
        copy = onnx.NodeProto()
        copy.CopyFrom(n)
        copy.name = f"{n.name}#{i}"
        for k, x in enumerate(copy.input):
            copy.input[k] = mine.get(x, x)
        for k, x in enumerate(copy.output):
            copy.output[k] = mine.get(x, x)
        nodes.append(copy)
    return mine
