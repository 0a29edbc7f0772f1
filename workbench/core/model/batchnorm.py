"""Fold inference-mode BatchNormalization into the Conv that feeds it.

A ``Conv -> BatchNormalization`` pair left in the graph quantizes badly: the Conv output gets a
Q/DQ pair of its own (a scale for the pre-normalisation range), BatchNormalization then runs in
float between two quantized tensors, and onnxruntime can no longer fuse the two. Folding first is
the usual post-training-quantization pre-processing (onnxruntime's ``quant_pre_process`` does it
through its graph optimizer; Jacob et al. 2018, "Quantization and Training of Neural Networks for
Efficient Integer-Arithmetic-Only Inference", section 3.2).

Formula (ONNX BatchNormalization, inference mode: ``y = (x - mean) / sqrt(var + epsilon) * scale + B``),
per output channel ``m`` of the Conv::

    s[m]     = scale[m] / sqrt(var[m] + epsilon)
    W'[m,...] = W[m,...] * s[m]
    b'[m]    = (b[m] - mean[m]) * s[m] + B[m]        (b = 0 when the Conv has no bias)

computed in float64 and stored in the weight's dtype (float32 or float64). A pair is folded only
when the result is exactly the same function: BatchNormalization in the default domain with
``training_mode`` 0 and a single output, the Conv output read by nothing else and not a graph
output, all parameters initializers of that graph used by no other node, and per-channel
parameters of length M (the Conv's output channels).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from workbench.core.graph.walk import NameAllocator, fold_each_graph
from workbench.core.io.external import tensor_array

_FLOAT = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE}


def fold_batchnorms(proto: onnx.ModelProto) -> list[str]:
    """Fold every eligible ``Conv -> BatchNormalization`` pair of ``proto`` in place.

    The Conv keeps its name and takes over the BatchNormalization's output name, so recipes that
    name the Conv and every consumer of the normalised tensor are unaffected.

    Returns
    -------
    list of str
        Names of the removed BatchNormalization nodes.
    """
    return fold_each_graph(proto, _fold_graph)


def _fold_graph(graph: onnx.GraphProto, uses: dict[str, int], names: NameAllocator) -> list[str]:
    inits = {t.name: t for t in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output if o}
    outputs = {o.name for o in graph.output}
    done: list[str] = []
    for bn in list(graph.node):
        conv = producer.get(bn.input[0]) if bn.op_type == "BatchNormalization" else None
        if conv is None or not _eligible(conv, bn, inits, uses, outputs):
            continue
        _fold_pair(graph, conv, bn, inits, uses, names)
        done.append(bn.name)
    return done


def _attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _eligible(conv, bn, inits, uses, outputs) -> bool:
    if conv.op_type != "Conv" or conv.domain not in ("", "ai.onnx") or bn.domain not in ("", "ai.onnx"):
        return False
    if _attr(bn, "training_mode", 0) or any(bn.output[1:]) or len(bn.input) != 5:
        return False
    if uses.get(conv.output[0], 0) != 1 or conv.output[0] in outputs or len(conv.input) < 2:
        return False
    params = list(bn.input[1:]) + [n for n in conv.input[1:] if n]
    if any(p not in inits or inits[p].data_type not in _FLOAT for p in params):
        return False
    if any(uses.get(p, 0) != 1 for p in conv.input[1:] if p) or len(set(params)) != len(params):
        return False
    m = inits[conv.input[1]].dims[0] if inits[conv.input[1]].dims else 0
    return all(list(inits[p].dims) == [m] for p in bn.input[1:])


def _fold_pair(graph, conv, bn, inits, uses, names) -> None:
    w_t = inits[conv.input[1]]
    w = tensor_array(w_t).astype(np.float64)
    gamma, beta, mean, var = (tensor_array(inits[p]).astype(np.float64) for p in bn.input[1:])
    s = gamma / np.sqrt(var + float(_attr(bn, "epsilon", 1e-5)))
    has_bias = len(conv.input) > 2 and conv.input[2]
    b = tensor_array(inits[conv.input[2]]).astype(np.float64) if has_bias else np.zeros_like(mean)
    dtype = onnx.helper.tensor_dtype_to_np_dtype(w_t.data_type)
    new_w = (w * s.reshape((-1,) + (1,) * (w.ndim - 1))).astype(dtype)
    new_b = ((b - mean) * s + beta).astype(dtype)
    w_t.CopyFrom(numpy_helper.from_array(new_w, w_t.name))
    if has_bias:
        inits[conv.input[2]].CopyFrom(numpy_helper.from_array(new_b, conv.input[2]))
    else:
        name = names.new((conv.name or conv.output[0]) + "_bias")
        graph.initializer.append(numpy_helper.from_array(new_b, name))
        inits[name] = graph.initializer[-1]
        conv.input.append(name)
    stale = conv.output[0]
    conv.output[0] = bn.output[0]
    graph.node.remove(bn)
    for vi in [v for v in graph.value_info if v.name == stale]:
        graph.value_info.remove(vi)
    for p in bn.input[1:]:
        uses[p] -= 1
        if uses[p] == 0:
            graph.initializer.remove(inits.pop(p))

