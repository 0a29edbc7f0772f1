"""Fold per-channel ``Mul`` / ``Add`` by constants into the Conv that feeds them.

Exporters often write a Conv followed by a per-channel affine as two element-wise nodes
(``Conv -> Mul(scale) -> Add(shift)``: a BatchNormalization already reduced to its scale and shift,
or a learnable affine such as PP-LCNet's). Left in the graph, each node quantizes on its own: the
Conv output, the product and the sum each get a Q/DQ pair and a rounding of their own, the two
element-wise nodes run between quantized tensors, and onnxruntime can no longer fuse them into the
Conv as it does for the float model (its ConvMulFusion / ConvAddFusion). Folding them first is the
usual post-training-quantization pre-processing, as for BatchNormalization
(:mod:`workbench.core.model.batchnorm`; Jacob et al. 2018, section 3.2; Nagel et al. 2021, "A White
Paper on Neural Network Quantization", section 4.1).

Formulas, per output channel ``m`` of the Conv (weight ``W`` of shape ``[M, C/group, k...]``, bias
``b``, ``b = 0`` when absent), computed in float64 and stored in the weight's dtype::

    Conv -> Mul(s):  W'[m, ...] = W[m, ...] * s[m]    b'[m] = b[m] * s[m]
    Conv -> Add(t):  W' = W                           b'[m] = b[m] + t[m]

A node is folded only when the result is the same function (up to float rounding): a Mul or Add in
the default domain whose other input is a float initializer of the weight's dtype broadcasting per
output channel (a scalar, or a shape that is 1 everywhere except at most the channel axis, of rank
at most the Conv output's), the Conv output read by that node alone and not a graph output, and
the Conv's weight and bias float initializers read by no other node. Chains fold one node at a time
(``Conv -> Mul -> Add`` becomes one Conv).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from workbench.core.graph.walk import NameAllocator, fold_each_graph
from workbench.core.io.external import tensor_array

_FLOAT = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE}
_OPS = ("Mul", "Add")


def fold_conv_affines(proto: onnx.ModelProto) -> list[str]:
    """Fold every eligible ``Mul`` / ``Add`` by a per-channel constant after a Conv of ``proto``, in place.

    The Conv keeps its name and takes over the folded node's output name, so recipes that name the
    Conv and every consumer of the tensor are unaffected. Constants no other node reads are removed.

    Returns
    -------
    list of str
        Names of the removed Mul / Add nodes, in folding order.
    """
    return fold_each_graph(proto, _fold_graph)


def _fold_graph(graph: onnx.GraphProto, uses: dict[str, int], names: NameAllocator) -> list[str]:
    """One pass over the Convs of ``graph``, each folding its chain of eligible nodes; the removed
    nodes leave the graph together at the end (node names are unique after preparation step 3)."""
    inits = {t.name: t for t in graph.initializer}
    outputs = {o.name for o in graph.output}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    done: list[str] = []
    for conv in list(graph.node):
        if conv.op_type != "Conv" or conv.domain not in ("", "ai.onnx") or len(conv.output) != 1:
            continue
        while True:  # the Conv takes over the folded node's output, whose readers are already known
            readers = consumers.get(conv.output[0], [])
            if len(readers) != 1 or uses.get(conv.output[0], 0) != 1 or conv.output[0] in outputs:
                break
            node = readers[0]
            vec = _channel_constant(conv, node, inits, uses)
            if vec is None:
                break
            _fold(graph, conv, node, vec, inits, uses, names)
            done.append(node.name)
    if done:
        removed = set(done)
        kept = [n for n in graph.node if n.name not in removed]
        del graph.node[:]
        graph.node.extend(kept)
    return done


def _channel_constant(conv, node, inits, uses) -> np.ndarray | None:
    """The per-channel vector (float64, length M) of ``node``'s constant operand, or None when not foldable."""
    if node.op_type not in _OPS or node.domain not in ("", "ai.onnx") or len(node.input) != 2 or len(node.output) != 1:
        return None
    if len(conv.input) < 2 or any(p not in inits or inits[p].data_type not in _FLOAT for p in conv.input[1:] if p):
        return None
    if any(uses.get(p, 0) != 1 for p in conv.input[1:] if p):
        return None
    other = [i for i in node.input if i != conv.output[0]]
    if len(other) != 1 or other[0] not in inits:
        return None
    w_t, c_t = inits[conv.input[1]], inits[other[0]]
    if c_t.data_type != w_t.data_type or not w_t.dims:
        return None
    m, rank, dims = int(w_t.dims[0]), len(w_t.dims), list(c_t.dims)
    if len(dims) > rank:
        return None
    padded = [1] * (rank - len(dims)) + dims
    if padded[0] != 1 or any(d != 1 for d in padded[2:]) or padded[1] not in (1, m):
        return None
    values = tensor_array(c_t).astype(np.float64).reshape(-1)
    return np.broadcast_to(values, (m,)).copy()


def _fold(graph, conv, node, vec, inits, uses, names) -> None:
    w_t = inits[conv.input[1]]
    dtype = onnx.helper.tensor_dtype_to_np_dtype(w_t.data_type)
    has_bias = len(conv.input) > 2 and bool(conv.input[2])
    b = tensor_array(inits[conv.input[2]]).astype(np.float64) if has_bias else np.zeros(len(vec))
    if node.op_type == "Mul":
        w = tensor_array(w_t).astype(np.float64)
        w_t.CopyFrom(numpy_helper.from_array((w * vec.reshape((-1,) + (1,) * (w.ndim - 1))).astype(dtype), w_t.name))
        new_b = b * vec
    else:
        new_b = b + vec
    if has_bias:
        inits[conv.input[2]].CopyFrom(numpy_helper.from_array(new_b.astype(dtype), conv.input[2]))
    elif node.op_type == "Add" or np.any(new_b):
        name = names.new((conv.name or conv.output[0]) + "_bias")
        graph.initializer.append(numpy_helper.from_array(new_b.astype(dtype), name))
        inits[name] = graph.initializer[-1]
        uses[name] = 1
        while len(conv.input) < 3:
            conv.input.append("")
        conv.input[2] = name
    stale = conv.output[0]
    conv.output[0] = node.output[0]
    uses[stale] = 0
    for vi in [v for v in graph.value_info if v.name == stale]:
        graph.value_info.remove(vi)
    constant = next(i for i in node.input if i != stale)
    uses[constant] -= 1
    if uses[constant] == 0 and not any(i.name == constant for i in graph.input):
        graph.initializer.remove(inits.pop(constant))
