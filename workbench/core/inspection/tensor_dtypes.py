"""The element type every tensor of a model actually carries, as the file says it.

Sources, in order: the file's own type information (graph inputs / outputs, ``value_info``,
initializers, Constant nodes), then the quantized tensors :func:`read_quant_params` recovers
(the zero point's type of a QuantizeLinear, the integer inputs of QLinearConv ...), then the
output-type rules of the ONNX operator spec for the remaining node outputs (QuantizeLinear: the
zero point's type, else ``output_dtype``, else uint8; DequantizeLinear: float; ConvInteger /
MatMulInteger: int32; DynamicQuantizeLinear: uint8, float, uint8; Cast: ``to``; Shape, Size,
ArgMax, NonZero: int64; comparisons: bool), and for any other op the type of its first typed input.

Names are the lower-case ``onnx.TensorProto`` names with ``float32`` spelled ``float``
(``int8``, ``uint8``, ``int16``, ``int4``, ``float8e4m3fn``, ``float16``, ``int64``, ``bool``).
"""

from __future__ import annotations

import onnx
from onnx import TensorProto

from workbench.core.graph.index import attrs_of, elem_types, iter_graphs
from workbench.core.inspection.quant_reader import QuantTensor, dtype_name

_FIXED: dict[str, int] = {
    "Shape": TensorProto.INT64, "Size": TensorProto.INT64, "NonZero": TensorProto.INT64,
    "ArgMax": TensorProto.INT64, "ArgMin": TensorProto.INT64, "ConvInteger": TensorProto.INT32,
    "MatMulInteger": TensorProto.INT32, "DequantizeLinear": TensorProto.FLOAT, "MatMulNBits": TensorProto.FLOAT,
    "DynamicQuantizeMatMul": TensorProto.FLOAT, "MatMulIntegerToFloat": TensorProto.FLOAT,
    "DynamicQuantizeLSTM": TensorProto.FLOAT,
}
_BOOL_OPS = frozenset({"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor",
                       "IsNaN", "IsInf"})


def short_dtype(name: str) -> str:
    """``float32`` -> ``float``; other names unchanged (lower case)."""
    name = name.lower()
    return "float" if name in ("float32", "float") else name


def _node_rule(node: onnx.NodeProto, known: dict[str, int]) -> list[int]:
    """Element types of ``node``'s outputs by the operator spec (0 where unknown)."""
    op, n = node.op_type, len(node.output)
    a = attrs_of(node)
    if op == "QuantizeLinear":
        zp = known.get(node.input[2], 0) if len(node.input) > 2 and node.input[2] else 0
        return [zp or int(a.get("output_dtype", 0)) or TensorProto.UINT8]
    if op == "DynamicQuantizeLinear":
        return [TensorProto.UINT8, TensorProto.FLOAT, TensorProto.UINT8][:n]
    if op == "Cast" and "to" in a:
        return [int(a["to"])] * n
    if op in _FIXED:
        return [_FIXED[op]] * n
    if op in _BOOL_OPS:
        return [TensorProto.BOOL] * n
    first = next((known[i] for i in node.input if i and known.get(i)), 0)
    return [first] * n


def tensor_dtypes(proto: onnx.ModelProto, params: list[QuantTensor] | None = None) -> dict[str, str]:
    """Tensor name -> the element type it carries (every graph, subgraphs included).

    Parameters
    ----------
    proto : onnx.ModelProto
        Any model (not modified).
    params : list of QuantTensor, optional
        :func:`read_quant_params` of ``proto`` when the caller has it already.

    Returns
    -------
    dict of str to str
        ``"float"``, ``"uint8"``, ``"int8"``, ``"int32"``, ``"int4"``, ``"float8e4m3fn"`` ...;
        tensors whose type cannot be told are left out.
    """
    known = dict(elem_types(proto.graph))
    for p in params or []:  # a QONNX Quant reads a float tensor (its dtype is the grid, not the tensor's)
        if p.kind != "QONNX" and p.dtype and p.dtype != "?" and p.tensor not in known and hasattr(TensorProto, p.dtype.upper()):
            known[p.tensor] = getattr(TensorProto, p.dtype.upper())
    for g in iter_graphs(proto.graph):
        for node in g.node:
            for out, t in zip(node.output, _node_rule(node, known), strict=False):
                if out and t and out not in known:
                    known[out] = t
    return {name: short_dtype(dtype_name(t)) for name, t in known.items() if t}
