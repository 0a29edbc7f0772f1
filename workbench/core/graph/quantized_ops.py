"""Recognising operators of already-quantized models.

Kinds (by where each format comes from):

- ``QDQ``: QuantizeLinear / DequantizeLinear (ONNX operator spec; onnxruntime QDQ format);
- ``QOperator``: QLinear* ops (ONNX QLinearConv/QLinearMatMul, com.microsoft QLinearAdd, ...),
  com.microsoft QGemm, QAttention, QEmbedLayerNormalization, QOrdered*;
- ``dynamic``: DynamicQuantizeLinear, ConvInteger, MatMulInteger and the com.microsoft
  DynamicQuantizeLSTM / DynamicQuantizeMatMul / MatMulIntegerToFloat (onnxruntime
  ``quantize_dynamic`` output);
- ``weight_only``: com.microsoft MatMulNBits, MatMulBnb4, GatherBlockQuantized;
- ``QONNX``: Quant, IntQuant, BipolarQuant, FloatQuant, Trunc in the qonnx / finn domains.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from workbench.core.graph.walk import iter_nodes

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

