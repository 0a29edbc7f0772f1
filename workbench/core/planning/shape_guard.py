"""Keep float the tensors whose values come from the input's size, not from its values.

A detector head builds its anchor grid from the input's shape (``Shape -> Gather -> Cast ->
Range -> ... -> Add`` with the box regression); a transformer builds positional terms from
``Range(seq_len)``; masks are built from sizes. When a dimension of the model's inputs is dynamic
(symbolic or unknown), such a tensor changes with the input's size, and its range calibrated at
one size does not hold at another: nudenet_320n calibrated at 320x320 and run at 640x640 gave box
coordinates at 8.8 dB SQNR against float (max 353 instead of 636), with no warning. The units that
would quantize such a tensor (as an input or output) are therefore kept float. Where every input
dimension is static, nothing is found.

A tensor is *size-derived* when its value ancestors reach ``Shape`` / ``Size`` outputs,
initializers and constants but no graph-input value, and at least one dynamic dimension. Shape
vectors are followed element by element through ``Gather`` / ``Slice`` / ``Concat`` with constant
indices, so a channel count read from a ``[batch, 3, H, W]`` input stays static. ``Reshape`` /
``Expand`` / ``Tile`` values are their data's values, and ``ConstantOfShape`` fills a constant:
only their data input decides.
"""

from __future__ import annotations

import numpy as np
import onnx

from workbench.core.graph.index import GraphIndex
from workbench.core.io.external import tensor_array

#: A tensor's dependence on dynamic dimensions: True / False, or per element for a 1-D shape vector.
Dyn = bool | list[bool]

#: Ops whose output values are their first input's values, rearranged (the shape input decides
#: only where they go).
_DATA_ONLY = frozenset({"Reshape", "Expand", "Tile"})
#: Ops that pass a 1-D shape vector through element by element.
_PASS = frozenset({"Cast", "Identity", "Squeeze", "Unsqueeze", "Reshape", "Flatten"})
#: Ops whose subgraphs may read outer values this analysis does not follow.
_SUBGRAPH = frozenset({"If", "Loop", "Scan"})


def _dim_flags(vi: onnx.ValueInfoProto) -> list[bool] | None:
    """Per dimension of ``vi``: True when symbolic or unknown; None when the rank is unknown."""
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    return [not d.HasField("dim_value") for d in tt.shape.dim]


def dynamic_input_dims(graph: onnx.GraphProto) -> bool:
    """True if some graph input (not an initializer) has a symbolic / unknown dim or unknown rank."""
    inits = {i.name for i in graph.initializer}
    for vi in graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        flags = _dim_flags(vi)
        if flags is None or any(flags):
            return True
    return False


def _shapes(graph: onnx.GraphProto) -> dict[str, list[bool] | None]:
    return {vi.name: _dim_flags(vi) for vi in list(graph.input) + list(graph.value_info) + list(graph.output)
            if vi.type.HasField("tensor_type")}


def _any(d: Dyn) -> bool:
    return any(d) if isinstance(d, list) else d


def _const_ints(ix: GraphIndex, name: str) -> np.ndarray | None:
    if name not in ix.initializers:
        return None
    a = np.asarray(tensor_array(ix.initializers[name]))
    return a.astype(np.int64) if a.dtype.kind in "iu" else None


def _shape_of(node: onnx.NodeProto, flags: list[bool] | None) -> Dyn:
    """What ``Shape`` / ``Size`` of a tensor with per-dim dynamic ``flags`` depends on."""
    if flags is None:
        return True
    if node.op_type == "Size":
        return any(flags)
    attrs = {a.name: a.i for a in node.attribute}
    return flags[attrs.get("start", 0):attrs.get("end", len(flags))] if "end" in attrs else flags[attrs.get("start", 0):]


def _gather(ix: GraphIndex, node: onnx.NodeProto, data: Dyn) -> Dyn:
    idx = _const_ints(ix, node.input[1])
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    if not isinstance(data, list) or idx is None or axis != 0 or np.any((idx >= len(data)) | (idx < -len(data))):
        return _any(data)
    return [data[int(i)] for i in idx.ravel()]


def _slice(ix: GraphIndex, node: onnx.NodeProto, data: Dyn) -> Dyn:
    args = [_const_ints(ix, n) if n else None for n in list(node.input[1:]) + [""] * 4][:4]
    starts, ends, axes, steps = args
    if not isinstance(data, list) or starts is None or ends is None or starts.size != 1 \
            or (axes is not None and int(axes.ravel()[0]) not in (0, -1)):
        return _any(data)
    step = int(steps.ravel()[0]) if steps is not None else 1
    return data[slice(int(starts.ravel()[0]), int(ends.ravel()[0]), step)] if step else _any(data)


def _concat(ix: GraphIndex, node: onnx.NodeProto, parts: list[Dyn]) -> Dyn:
    out: list[bool] = []
    for name, d in zip(node.input, parts, strict=True):
        if isinstance(d, list):
            out += d
        elif not d and name in ix.initializers:
            out += [False] * int(np.prod(list(ix.initializers[name].dims), dtype=np.int64))
        else:
            return any(_any(p) for p in parts)
    return out


def _node_dyn(ix: GraphIndex, node: onnx.NodeProto, ins: list[Dyn], shapes: dict) -> Dyn:
    """What the outputs of ``node`` (none of whose inputs carries an input value) depend on."""
    op = node.op_type
    if op in ("Shape", "Size"):
        return _shape_of(node, shapes.get(node.input[0]))
    if op == "ConstantOfShape":
        return False
    if op in _DATA_ONLY:
        return ins[0] if op == "Reshape" else _any(ins[0])
    if op == "Gather" and len(ins) == 2 and not _any(ins[1]):
        return _gather(ix, node, ins[0])
    if op == "Slice" and not any(_any(d) for d in ins[1:]):
        return _slice(ix, node, ins[0])
    if op == "Concat" and next((a.i for a in node.attribute if a.name == "axis"), 0) in (0, -1):
        return _concat(ix, node, ins)
    if op in _PASS and ins and not any(_any(d) for d in ins[1:]):
        return ins[0]
    return any(_any(d) for d in ins)


def size_derived_tensors(ix: GraphIndex) -> list[str]:
    """Float tensors of the main graph computed from the inputs' dynamic dimensions only.

    Returns
    -------
    list of str
        Tensor names in node order; empty when every graph input dim is static.
    """
    if not dynamic_input_dims(ix.graph):
        return []
    shapes = _shapes(ix.graph)
    valued = set(ix.graph_inputs)
    dyn: dict[str, Dyn] = {}
    found: list[str] = []
    for node in ix.graph.node:
        live = [i for i in node.input if i]
        outs = [o for o in node.output if o]
        if node.op_type in _SUBGRAPH or (node.op_type not in ("Shape", "Size") and any(i in valued for i in live)):
            valued.update(outs)
            continue
        d = _node_dyn(ix, node, [dyn.get(i, False) if i else False for i in node.input], shapes)
        for o in outs:
            dyn[o] = d
            if _any(d) and ix.is_float(o):
                found.append(o)
    return found


def size_derived_units(plan, tensors: list[str]) -> dict[str, str]:
    """Quantized main-graph units of ``plan`` that have a tensor of ``tensors`` as an input or
    output: node -> that tensor (the first one met)."""
    hit = set(tensors)
    aliases = getattr(plan, "aliases", {})
    found: dict[str, str] = {}
    for name, unit in plan.units.items():
        if unit.excluded or unit.graph:
            continue
        touched = list(unit.inputs) + list(unit.outputs) + [q.tensor for q in unit.quant_inputs
                                                            if q.role in ("activation", "const")]
        t = next((t for t in touched if t in hit or aliases.get(t) in hit), None)
        if t is not None:
            found[name] = t
    return found
