"""Which QuantizeLinear / DequantizeLinear nodes of a graph are the edge of a QOperator part, not QDQ.

onnxruntime's ``quantize_static(..., quant_format=QuantFormat.QOperator)`` writes integer kernels (QLinearConv,
QGemm, QLinearAveragePool ...) that pass integer tensors to each other, and a QuantizeLinear where a float tensor
enters them (the graph input, the output of an op left float) and a DequantizeLinear where one leaves them (the
graph output, the input of an op left float). Those nodes quantize once on the way in and once on the way out; they
are not the fake-quantization pairs of the QDQ format, where a QuantizeLinear feeds a DequantizeLinear and a
weight is a DequantizeLinear of an integer initializer (onnxruntime's quantization documentation, "ONNX
quantization representation format": Operator-oriented (QOperator) vs Tensor-oriented (QDQ)).

The walk follows an integer tensor through nodes that only move it (MaxPool, Flatten, Reshape ... whose output has
the same element type, as :func:`~workbench.core.inspection.tensor_dtypes.tensor_dtypes` reads it), so a
``Q -> MaxPool -> QLinearConv`` start counts as well as ``Q -> QLinearConv``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import onnx

from workbench.core.graph.quantized_ops import is_integer_kernel, quantized_kind
from workbench.core.graph.walk import iter_graphs

_Q, _DQ = "QuantizeLinear", "DequantizeLinear"
#: element types a walk does not follow (not a quantized tensor; "?": unknown)
_FLOAT = frozenset({"float", "float16", "bfloat16", "double", "?"})


def quantization_kinds(proto: onnx.ModelProto, dtypes: dict[str, str]) -> dict[str, int]:
    """Format -> number of quantized operators of that format (:func:`quantized_kind`), every graph, most first
    (ties in graph order), a Q / DQ node at the edge of integer kernels (:func:`qoperator_boundary`) counted
    with the kernels' format rather than as ``"QDQ"``: onnxruntime's QOperator export of digits_cnn gives
    ``{"QOperator": 7}`` (3 QLinearConv, QLinearAveragePool, QGemm, the input's QuantizeLinear and the output's
    DequantizeLinear). ``dtypes``: tensor name -> element type name of every graph (``tensor_dtypes``)."""
    counts: Counter = Counter()
    for _path, graph in iter_graphs(proto.graph):
        nodes = list(graph.node)
        constants = {i.name for i in graph.initializer} | {o for n in nodes if n.op_type == "Constant" for o in n.output}
        edge = qoperator_boundary(nodes, dtypes, constants)
        counts.update(edge.get(i) or kind for i, n in enumerate(nodes) if (kind := quantized_kind(n.op_type, n.domain)))
    return dict(counts.most_common())


def qoperator_boundary(nodes: list[onnx.NodeProto], dtypes: dict[str, str],
                       constants: set[str]) -> dict[int, str]:
    """The Q / DQ nodes at the edge of integer kernels, by position in ``nodes``.

    Parameters
    ----------
    nodes : list of onnx.NodeProto
        One graph's nodes (a subgraph's outer-scope tensors count as neither kernel nor Q / DQ).
    dtypes : dict of str to str
        Tensor name -> element type name (``"int8"``, ``"float"``), e.g. from ``tensor_dtypes``.
    constants : set of str
        Initializer and Constant output names (a DequantizeLinear of one is a QDQ weight).

    Returns
    -------
    dict of int to str
        Position -> the kind (``"QOperator"`` or ``"dynamic"``, :func:`quantized_kind`) of the first integer
        kernel reached, for each QuantizeLinear whose integer output reaches integer kernels and no
        DequantizeLinear, and each DequantizeLinear whose integer input comes from integer kernels only (no
        QuantizeLinear, constant or graph input on the way). Other Q / DQ nodes are left out.
    """
    producer = {o: n for n in nodes for o in n.output if o}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for n in nodes:
        for t in n.input:
            consumers.setdefault(t, []).append(n)
    out = {}
    for i, node in enumerate(nodes):
        if node.op_type == _Q and node.output:
            ends = list(_walk(node.output[0], dtypes, lambda t: consumers.get(t, []), lambda n: n.output))
            if any(e is None or e.op_type == _DQ for e in ends):
                continue
        elif node.op_type == _DQ and node.input:
            ends = list(_walk(node.input[0], dtypes, lambda t: _one(producer.get(t)), lambda n: n.input, constants))
            if any(e is None or not _is_kernel(e) for e in ends):
                continue
        else:
            continue
        kernel = next((e for e in ends if e is not None and _is_kernel(e)), None)
        if kernel is not None:
            out[i] = quantized_kind(kernel.op_type, kernel.domain) or "QOperator"
    return out


def _one(node: onnx.NodeProto | None) -> list[onnx.NodeProto]:
    return [node] if node is not None else []


def _is_kernel(node: onnx.NodeProto) -> bool:
    return is_integer_kernel(node.op_type, node.domain) and quantized_kind(node.op_type, node.domain) in (
        "QOperator", "dynamic")


def _walk(start: str, dtypes: dict[str, str], step, tensors_of,
          stop: set[str] | frozenset[str] = frozenset()) -> Iterator[onnx.NodeProto | None]:
    """The nodes where the integer tensor ``start`` ends, walking with ``step`` (tensor -> next nodes) through
    nodes that move it (same element type on ``tensors_of(node)``): integer kernels, Q / DQ nodes, and None for
    a tensor in ``stop`` or one with no next node (a graph input or output)."""
    dtype = dtypes.get(start)
    if dtype is None or dtype in _FLOAT:
        yield None
        return
    todo, seen = [start], {start}
    while todo:
        t = todo.pop()
        following = step(t)
        if t in stop or not following:
            yield None
            continue
        for n in following:
            if n.op_type in (_Q, _DQ) or _is_kernel(n):
                yield n
                continue
            moved = [x for x in tensors_of(n) if x and dtypes.get(x) == dtype and x not in seen]
            seen.update(moved)
            todo += moved
