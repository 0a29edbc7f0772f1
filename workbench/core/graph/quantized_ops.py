"""Recognising operators of already-quantized models.

Kinds (by where each format comes from):

- ``QDQ``: QuantizeLinear / DequantizeLinear (ONNX operator spec; onnxruntime QDQ format);
- ``QOperator``: QLinear* ops (ONNX QLinearConv/QLinearMatMul, com.microsoft QLinearAdd, ...),
  com.microsoft QGemm, QAttention, QEmbedLayerNormalization, QOrdered*;
- ``dynamic``: DynamicQuantizeLinear, ConvInteger, MatMulInteger and the com.microsoft
  DynamicQuantizeLSTM / DynamicQuantizeMatMul / MatMulIntegerToFloat (onnxruntime
  ``quantize_dynamic`` output);
- ``weight_only``: com.microsoft MatMulNBits, MatMulBnb4, GatherBlockQuantized (a MatMulNBits onnxruntime
  computes in int8, at ``accuracy_level`` 4, is ``dynamic`` as the file runs: :func:`kind_as_run`);
- ``QONNX``: Quant, IntQuant, BipolarQuant, FloatQuant, Trunc in the qonnx / finn domains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container
from dataclasses import dataclass

import onnx

from workbench.core.graph.walk import iter_graphs, iter_nodes

_DEFAULT = ("", "ai.onnx")
_MS = ("com.microsoft",)
_QONNX_DOMAINS = ("qonnx.custom_op.general", "finn.custom_op.general", "onnx.brevitas")
#: domains of QONNX quantizers (Quant, BipolarQuant, FloatQuant, Trunc: outputs shaped as input 0)
QONNX_DOMAINS = frozenset(_QONNX_DOMAINS)

_BY_OP: dict[str, tuple[str, tuple[str, ...]]] = {
    "QuantizeLinear": ("QDQ", _DEFAULT + _MS),
    "DequantizeLinear": ("QDQ", _DEFAULT + _MS),
    "DynamicQuantizeLinear": ("dynamic", _DEFAULT),
    "ConvInteger": ("dynamic", _DEFAULT),
    "MatMulInteger": ("dynamic", _DEFAULT),
    "DynamicQuantizeLSTM": ("dynamic", _MS),
    "DynamicQuantizeMatMul": ("dynamic", _MS),
    "MatMulIntegerToFloat": ("dynamic", _MS),
    "QGemm": ("QOperator", _MS),
    "QAttention": ("QOperator", _MS),
    "QEmbedLayerNormalization": ("QOperator", _MS),
    "MatMulNBits": ("weight_only", _MS),
    "MatMulBnb4": ("weight_only", _MS),
    "GatherBlockQuantized": ("weight_only", _MS),
    "Quant": ("QONNX", _QONNX_DOMAINS),
    "IntQuant": ("QONNX", _QONNX_DOMAINS),
    "BipolarQuant": ("QONNX", _QONNX_DOMAINS),
    "FloatQuant": ("QONNX", _QONNX_DOMAINS),
    "Trunc": ("QONNX", _QONNX_DOMAINS),
}


@dataclass(frozen=True)
class QuantizedNode:
    """An already-quantized operator found in a model."""

    name: str
    op_type: str
    domain: str
    kind: str
    graph: str = ""


def quantized_kind(op_type: str, domain: str = "") -> str | None:
    """Kind of quantized operator (``"QDQ"``, ``"QOperator"``, ``"dynamic"``, ``"weight_only"``,
    ``"QONNX"``) or None for a float operator."""
    if op_type.startswith("QLinear") and domain in _DEFAULT + _MS:
        return "QOperator"
    if op_type.startswith("QOrdered") and domain in _MS:
        return "QOperator"
    entry = _BY_OP.get(op_type)
    if entry and domain in entry[1]:
        return entry[0]
    return None


def find_quantized(proto: onnx.ModelProto) -> list[QuantizedNode]:
    """All quantized operators in the model, subgraphs included, in graph order."""
    found = []
    for path, node in iter_nodes(proto.graph):
        kind = quantized_kind(node.op_type, node.domain)
        if kind:
            found.append(QuantizedNode(node.name, node.op_type, node.domain, kind, path))
    return found


#: the MatMulNBits ``accuracy_level`` at which onnxruntime's CPU kernel computes in int8
NBITS_INT8_LEVEL = 4


def nbits_runs_int8(accuracy_level: int, constant_weight: bool = True, g_idx: bool = False,
                    float_zero_point: bool = False) -> bool:
    """Whether onnxruntime's CPU MatMulNBits (float32 A) computes in integers: it quantizes A to int8 per
    block and accumulates in int32 only at ``accuracy_level`` 4 (:data:`NBITS_INT8_LEVEL`); at 0 (the
    attribute unset), 1, 2 and 3 it computes in float32 on the dequantized 4-/8-bit weight (weight-only).
    Level 4 also needs a prepacked weight: a constant B (initializer), no ``g_idx`` input and no float
    zero point; otherwise the kernel dequantizes B and runs a float32 GEMM. Source: onnxruntime
    ``contrib_ops/cpu/quantization/matmul_nbits.cc`` (``GetComputeType``: ``SQNBIT_CompInt8`` only for
    ``accuracy_level == 4``, else ``SQNBIT_CompFp32``; ``PrePack`` / ``Compute``: the unpacked path
    dequantizes B to fp32) and ``docs/ContribOperators.md`` (0 unset, 1 fp32, 2 fp16, 3 bf16, 4 int8)."""
    return accuracy_level == NBITS_INT8_LEVEL and constant_weight and not g_idx and not float_zero_point


def nbits_node_runs_int8(node: onnx.NodeProto, constants: Container[str],
                         dtype_of: Callable[[str], str | None]) -> bool:
    """:func:`nbits_runs_int8` of MatMulNBits ``node``: its ``accuracy_level`` (unset: 0), B in
    ``constants`` (initializer names), a ``g_idx`` input, a zero point whose element type ``dtype_of(name)``
    (e.g. ``"uint8"``, ``"float"``; None when unknown) is not uint8."""
    inputs = list(node.input) + [""] * 5
    level = next((a.i for a in node.attribute if a.name == "accuracy_level"), 0)
    zp = inputs[3]
    return nbits_runs_int8(int(level), inputs[1] in constants, g_idx=bool(inputs[4]),
                           float_zero_point=bool(zp) and dtype_of(zp) != "uint8")


def kind_as_run(node: onnx.NodeProto, constants: Container[str], dtype_of: Callable[[str], str | None]) -> str | None:
    """:func:`quantized_kind` of ``node`` as onnxruntime runs it: a MatMulNBits it computes in int8
    (:func:`nbits_node_runs_int8`) is ``"dynamic"`` (its float activation quantized per block as it runs, as
    DynamicQuantizeMatMul does), not ``"weight_only"``."""
    kind = quantized_kind(node.op_type, node.domain)
    if kind == "weight_only" and node.op_type == "MatMulNBits" and nbits_node_runs_int8(node, constants, dtype_of):
        return "dynamic"
    return kind


def kinds_as_run(proto: onnx.ModelProto) -> Counter:
    """Format -> number of quantized operators (:func:`kind_as_run`), every graph; a graph's initializers
    are its constants and give the zero points' element types."""
    counts: Counter = Counter()
    for _path, graph in iter_graphs(proto.graph):
        dtypes = {i.name: onnx.TensorProto.DataType.Name(i.data_type).lower() for i in graph.initializer}
        counts.update(k for n in graph.node if (k := kind_as_run(n, dtypes, dtypes.get)))
    return counts


#: Integer kernels onnxruntime produces from QDQ units (counted by the fusion tests).
INTEGER_KERNELS = frozenset({
    "QLinearConv", "QLinearMatMul", "MatMulInteger", "QGemm", "QLinearAdd", "QLinearMul",
    "QLinearConcat", "QLinearGlobalAveragePool", "QLinearAveragePool", "MatMulNBits",
    "DynamicQuantizeMatMul", "ConvInteger", "MatMulIntegerToFloat", "QLinearSigmoid",
    "QLinearLeakyRelu", "QLinearSoftmax", "QLinearConvTranspose", "QAttention", "QLinearWhere",
})


def is_integer_kernel(op_type: str, domain: str = "") -> bool:
    """Whether a node of ``op_type`` in ``domain`` computes on integer tensors itself (the canvas' "INT"
    mark): the kernels of :data:`INTEGER_KERNELS`, and any other operator of a QOperator or dynamic
    model (QLinear* and QOrdered* ops, QEmbedLayerNormalization, com.microsoft DynamicQuantizeLSTM ...);
    not the quantizers (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear)."""
    if op_type in INTEGER_KERNELS:
        return True
    return quantized_kind(op_type, domain) in ("QOperator", "dynamic") and op_type != "DynamicQuantizeLinear"

