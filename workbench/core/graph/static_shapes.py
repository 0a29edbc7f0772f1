"""Fixed-value nodes folded into initializers once the input shapes are static.

Exporters with dynamic axes compute reshape targets at run time: ``Shape -> Gather -> Unsqueeze
-> Concat -> Reshape`` chains (130 such nodes in the digits_transformer corpus model). With the
input shapes fixed, these nodes have one value; ONNX shape inference's data propagation does not
follow every op of such chains (``Div``, ``Cast`` ...), so shapes after the ``Reshape`` stay
unknown. :func:`fold_fixed_nodes` evaluates them with onnxruntime in one run and replaces them by
initializers, repeating while a fold makes more shapes static.

Used for the qonnx package (its ``FoldConstants`` folds ONE node per pass and re-runs its shape
inference and cleanup after each, qonnx 1.0 ``transformation/fold_constants.py``; each pass does
linear look-ups per tensor, so folding F nodes costs O(F x edges x tensors) there) and for the
MAC counts of :mod:`workbench.core.analysis.cost`. Nodes of ``opaque_domains`` (QONNX quantizers) are never
folded and are seen by shape inference as ``Identity`` (they keep their input's shape and type).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import onnx
from onnx import helper, numpy_helper

from workbench.core.graph.contrib_stand_ins import stand_in_contrib_ops
from workbench.core.graph.index import attrs_of, iter_graphs, subgraphs

log = logging.getLogger(__name__)

#: Standard ops never folded: their value is not a function of their inputs.
_NONDETERMINISTIC = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial",
                     "Bernoulli", "Dropout"}
#: Folding rounds at most (each round re-runs shape inference).
MAX_ROUNDS = 8


def infer_static(model: onnx.ModelProto, opaque_domains: frozenset[str] = frozenset(), *,
                 drop_declared: bool = False, contrib: bool = False) -> onnx.ModelProto:
    """ONNX shape inference with data propagation, nodes of ``opaque_domains`` seen as ``Identity``, and
    with ``contrib`` the onnxruntime contrib ops :func:`~workbench.core.graph.contrib_stand_ins.stand_in_contrib_ops`
    knows seen as their standard stand-ins (the returned model holds the stand-ins, not the contrib nodes).

    Declared ``value_info`` and output shapes with symbolic or negative dims are dropped first
    (ONNX inference keeps a declared ``-1`` / ``unk__0`` over the value it infers); with
    ``drop_declared`` all of them are (stale after the input shapes changed). ``model`` is not
    modified. Raises what ``onnx.shape_inference.infer_shapes`` raises.
    """
    shadow = onnx.ModelProto()
    shadow.CopyFrom(model)
    for n in shadow.graph.node:
        if n.domain in opaque_domains:
            del n.input[1:]
            del n.attribute[:]
            n.op_type, n.domain = "Identity", ""
    if contrib:
        stand_in_contrib_ops(shadow)
    keep = [v for v in shadow.graph.value_info if not drop_declared and _fully_static(v)]
    del shadow.graph.value_info[:]
    shadow.graph.value_info.extend(keep)
    for o in shadow.graph.output:
        if drop_declared or not _fully_static(o):
            o.type.tensor_type.ClearField("shape")
    return onnx.shape_inference.infer_shapes(shadow, data_prop=True)


def _fully_static(vi: onnx.ValueInfoProto) -> bool:
    t = vi.type.tensor_type
    return vi.type.HasField("tensor_type") and t.HasField("shape") and \
        all(d.HasField("dim_value") and d.dim_value >= 0 for d in t.shape.dim)


def _value_infos(inferred: onnx.ModelProto) -> tuple[dict[str, list[int]], dict[str, int]]:
    """Static dims of every fully known tensor, and the element type of every typed tensor."""
    shapes, types = {}, {}
    g = inferred.graph
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        t = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            continue
        if t.elem_type:
            types[vi.name] = t.elem_type
        if _fully_static(vi):
            shapes[vi.name] = [d.dim_value for d in t.shape.dim]
    for i in g.initializer:
        types[i.name] = i.data_type
        shapes[i.name] = list(i.dims)
    return shapes, types


def _small(outputs, shapes: dict, max_elements: int | None) -> bool:
    return max_elements is None or all(o in shapes and math.prod(shapes[o]) <= max_elements for o in outputs if o)


def _foldable(graph: onnx.GraphProto, shapes: dict, max_elements: int | None):
    """Standard nodes of fixed value (constant inputs, or ``Shape`` of a static tensor) in graph
    order, and the ``Shape`` outputs computed from the static dims (ONNX Shape-15 start/end)."""
    const = ({i.name for i in graph.initializer} - {i.name for i in graph.input}) | {""}
    nodes, shape_values = [], {}
    for n in graph.node:
        if n.domain not in ("", "ai.onnx") or n.op_type in _NONDETERMINISTIC or any(True for _ in subgraphs(n)):
            continue
        if n.op_type == "Shape" and n.input[0] in shapes:
            a = attrs_of(n)
            dims = shapes[n.input[0]]
            shape_values[n.output[0]] = np.array(dims[slice(a.get("start", 0), a.get("end"))], np.int64)
        elif not all(i in const for i in n.input) or not _small(n.output, shapes, max_elements):
            continue
        nodes.append(n)
        const.update(n.output)
    return nodes, shape_values


def _boundary(graph: onnx.GraphProto, folded: list[onnx.NodeProto]) -> list[str]:
    """Folded outputs still read by a kept node, a subgraph or the graph's outputs."""
    folded_ids = {id(n) for n in folded}
    read = {o.name for o in graph.output}
    for n in graph.node:
        if id(n) not in folded_ids:
            read.update(n.input)
        for sub in subgraphs(n):
            for g in iter_graphs(sub):
                read.update(i for m in g.node for i in m.input)
    return [o for n in folded for o in n.output if o and o in read]


def _evaluate(model: onnx.ModelProto, folded: list[onnx.NodeProto], shape_values: dict[str, np.ndarray],
              wanted: list[str], types: dict[str, int]) -> dict[str, np.ndarray]:
    """Values of ``wanted`` computed by onnxruntime (CPU) from the folded nodes alone."""
    import onnxruntime as ort

    nodes = [n for n in folded if n.output[0] not in shape_values]
    needed = {i for n in nodes for i in n.input}
    inits = [i for i in model.graph.initializer if i.name in needed]
    inits += [numpy_helper.from_array(v, k) for k, v in shape_values.items() if k in needed]
    computed = [w for w in wanted if w not in shape_values]
    values = {k: v for k, v in shape_values.items() if k in wanted}
    if computed:
        outs = [helper.make_tensor_value_info(w, types[w], None) for w in computed]
        sub = helper.make_model(helper.make_graph(nodes, "fold", [], outs, inits), ir_version=model.ir_version,
                                opset_imports=[o for o in model.opset_import if o.domain in ("", "ai.onnx")])
        so = ort.SessionOptions()
        so.log_severity_level = 4  # fatal only, as io.ort_session.QUIET_LOG (graph sits below io)
        sess = ort.InferenceSession(sub.SerializeToString(), so, providers=["CPUExecutionProvider"])
        values.update(zip(computed, sess.run(computed, {}), strict=True))
    return values


def _fold_once(model: onnx.ModelProto, inferred: onnx.ModelProto, max_elements: int | None) -> int:
    shapes, types = _value_infos(inferred)
    folded, shape_values = _foldable(model.graph, shapes, max_elements)
    if not folded:
        return 0
    wanted = _boundary(model.graph, folded)
    missing = [w for w in wanted if w not in types and w not in shape_values]
    if missing:
        log.info("constant folding stopped: element type of %s unknown", missing[:3])
        return 0
    try:
        values = _evaluate(model, folded, shape_values, wanted, types)
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises several types; folding is optional
        log.info("constant folding stopped: onnxruntime could not evaluate the fixed nodes (%s)", exc)
        return 0
    folded_ids = {id(n) for n in folded}
    kept = [n for n in model.graph.node if id(n) not in folded_ids]
    del model.graph.node[:]
    model.graph.node.extend(kept)
    model.graph.initializer.extend(numpy_helper.from_array(np.asarray(values[w]), w) for w in wanted)
    used = {i for g in iter_graphs(model.graph) for n in g.node for i in n.input}
    used |= {o.name for o in model.graph.output} | {i.name for i in model.graph.input}
    keep = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    return len(folded)


def fold_fixed_nodes(model: onnx.ModelProto, *, opaque_domains: frozenset[str] = frozenset(),
                     max_elements: int | None = None, drop_declared: bool = False,
                     contrib: bool = False) -> tuple[int, onnx.ModelProto]:
    """Replace the fixed-value standard nodes of ``model``'s main graph by initializers, in place.

    A node is fixed when all its inputs are initializers (not graph inputs) or fixed, or it is a
    ``Shape`` of a tensor whose static shape inference knows. Values come from onnxruntime (the
    runtime qonnx folds with, and the one that runs the QDQ export).

    Parameters
    ----------
    model : onnx.ModelProto
        Modified in place. Its input shapes should be static (symbolic dims stop the folding).
    opaque_domains : frozenset of str
        Domains never folded, seen by shape inference as ``Identity`` (QONNX quantizers).
    max_elements : int, optional
        Fold only nodes whose outputs have at most this many elements (shape arithmetic), so
        weights are not materialised; None folds every fixed node.
    drop_declared, contrib : bool
        Passed to :func:`infer_static`.

    Returns
    -------
    (int, onnx.ModelProto)
        Number of nodes removed, and ``model`` after shape inference (see :func:`infer_static`).
        Nothing is folded (and the reason logged) where a folded tensor's type is unknown or
        onnxruntime cannot evaluate the nodes.

    Raises
    ------
    onnx.shape_inference.InferenceError
        Shape inference fails on the model.
    """
    total = 0
    inferred = infer_static(model, opaque_domains, drop_declared=drop_declared, contrib=contrib)
    for _ in range(MAX_ROUNDS):  # a fold can make more shapes static (a Reshape fed by a folded Concat)
        n = _fold_once(model, inferred, max_elements)
        if not n:
            break
        total += n
        inferred = infer_static(model, opaque_domains, drop_declared=drop_declared, contrib=contrib)
    return total, inferred


def inline_fixed_ifs(model: onnx.ModelProto) -> list[str]:
    """Replace each ``If`` of ``model``'s main graph whose condition is an initializer by the nodes
    of the branch it takes (its outputs copied to the If's outputs by ``Identity`` nodes), in place.

    Shape inference merges the two branches of an If, so shapes after one whose branches differ
    (silero_vad's sample-rate switch) stay unknown even when the condition is fixed. The branch's
    nodes keep their names and its initializers move to the main graph. Returns one note per If
    inlined (which branch, and why).
    """
    g = model.graph
    consts = {i.name: i for i in g.initializer}
    notes, nodes, changed = [], [], False
    for n in g.node:
        cond = consts.get(n.input[0]) if n.op_type == "If" and n.domain in ("", "ai.onnx") else None
        if cond is None:
            nodes.append(n)
            continue
        value = bool(np.asarray(numpy_helper.to_array(cond)).reshape(-1)[0])
        branch = next(a.g for a in n.attribute if a.name == ("then_branch" if value else "else_branch"))
        nodes.extend(branch.node)
        nodes.extend(helper.make_node("Identity", [b.name], [o], name=f"{n.name}/{o}/inlined")
                     for b, o in zip(branch.output, n.output, strict=True) if o)
        g.initializer.extend(branch.initializer)
        notes.append(f"If {n.name}: only its {'then' if value else 'else'} branch is counted "
                     f"({n.input[0]} is {value} at these inputs)")
        changed = True
    if changed:
        del g.node[:]
        g.node.extend(nodes)
    return notes
