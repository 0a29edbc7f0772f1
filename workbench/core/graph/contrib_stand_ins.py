"""Standard ONNX stand-ins for onnxruntime contrib ops, so ONNX shape inference follows them.

ONNX shape inference knows no ``com.microsoft`` op: the outputs of a ``DynamicQuantizeLSTM``, ``QGemm`` or
``MatMulIntegerToFloat`` get no shape and neither does anything after them (ddddocr's ``MatMulInteger``
after its LSTM). :func:`stand_in_contrib_ops` rewrites each such node of a copy made for shape inference
into standard nodes whose outputs have the contrib op's shapes and element types, from the op's definition
in onnxruntime's ``docs/ContribOperators.md`` (the op each computes and where its inputs sit:
:data:`workbench.core.graph.op_equivalents.EQUIVALENTS`):

* ``DynamicQuantizeLSTM`` -> ``LSTM`` on inputs 0..7 (X, W, R, B, sequence_lens, initial_h, initial_c, P);
  the outputs ``[seq, num_directions, batch, hidden]``, ``[num_directions, batch, hidden]`` depend only on X
  and the ``direction`` / ``hidden_size`` attributes, not on W's (transposed) layout;
* ``MatMulIntegerToFloat`` (A, B, ...) -> ``MatMulInteger(A, B)`` then ``Cast`` to the scale's float type;
* ``DynamicQuantizeMatMul`` (A float, B, ...) -> ``MatMul(A, B)``;
* ``MatMulNBits`` (A, packed B; ``K``, ``N``) -> ``MatMul(A, W)`` with ``W`` a graph input of shape ``[K, N]``;
* ``QGemm`` (A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp) -> ``Gemm(A, B)`` with its ``transA`` /
  ``transB``, then ``Cast`` to float when there is no ``y_scale`` (a float output);
* ``QLinearAdd`` / ``QLinearMul`` (A, ..., B at 3, ...) -> ``Add`` / ``Mul``; ``QLinearSigmoid``,
  ``QLinearLeakyRelu``, ``QLinearSoftmax`` -> ``Identity``; ``QLinearConcat`` (Y_scale, Y_zp, then
  (X, scale, zero point) triples) -> ``Concat`` of the X; ``QLinearGlobalAveragePool`` (NCHW) ->
  ``GlobalAveragePool``; ``QLinearAveragePool`` (NCHW; what onnxruntime's ``quantize_static`` QOperator format
  writes for an ``AveragePool``) -> ``AveragePool`` with its window attributes; ``QLinearWhere`` (condition,
  X, its scale and zero point, Y at 4, ...) -> ``Where``; ``com.microsoft`` ``QuantizeLinear`` /
  ``DequantizeLinear`` -> the standard ops;
* the float fusions onnxruntime writes into an optimized file (``optimized_model_filepath``) around the integer
  kernels: ``Gelu``, ``FastGelu``, ``BiasGelu``, ``QuickGelu`` -> ``Identity``; ``SkipLayerNormalization``,
  ``SkipSimplifiedLayerNormalization`` (output 0 and the optional sum, output 3, are the input's shape),
  ``SimplifiedLayerNormalization``, ``com.microsoft`` ``LayerNormalization`` -> ``Identity``; ``FusedMatMul``
  (``alpha * op(A) op(B)``) -> ``MatMul``, or with ``transA`` / ``transB`` an ``Einsum`` transposing the last
  two axes (opset 12 on; ONNX infers its shape only for operands of one rank, as attention's are: a broadcast
  operand of lower rank leaves the output unknown); with ``transBatchA`` / ``transBatchB`` it is kept.

Other contrib ops are left as they are (their outputs stay unknown).
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from workbench.core.graph.index import attrs_of
from workbench.core.graph.op_equivalents import EQUIVALENTS, SHAPE_OF_INPUT_0

CONTRIB = "com.microsoft"
#: contrib ops whose stand-in is the op they compute (:data:`EQUIVALENTS`) on the inputs the table gives, no attribute
_AS_COMPUTED = ("QLinearAdd", "QLinearMul", "QLinearWhere", "DynamicQuantizeMatMul")
#: contrib ops of :data:`SHAPE_OF_INPUT_0` whose output 3 (when present) also has the shape of input 0
_SKIP_NORMS = ("SkipLayerNormalization", "SkipSimplifiedLayerNormalization")
#: the window attributes ``QLinearAveragePool`` shares with ``AveragePool`` (opset 11 on)
_POOL_ATTRS = ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides")


def stand_in_contrib_ops(model: onnx.ModelProto) -> int:
    """Replace the contrib nodes of ``model``'s main graph listed in the module docstring by standard
    stand-ins with the same output shapes and types, in place (for a copy made for shape inference only:
    the stand-ins do not compute what the contrib ops do). Returns the number of nodes replaced."""
    g = model.graph
    types = {i.name: i.data_type for i in g.initializer}
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    nodes, replaced = [], 0
    for n in g.node:
        new = _stand_in(n, types, g, opset) if n.domain == CONTRIB else None
        if new is None:
            nodes.append(n)
        else:
            nodes.extend(new)
            replaced += 1
    if replaced:
        del g.node[:]
        g.node.extend(nodes)
        if not any(o.domain in ("", "ai.onnx") for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid("", 13))
    return replaced


def _stand_in(n: onnx.NodeProto, types: dict[str, int], g: onnx.GraphProto,
              opset: int) -> list[onnx.NodeProto] | None:
    """The standard nodes for contrib node ``n`` (``opset``: the model's default-domain opset), or None to keep
    it."""
    ins, a = list(n.input), attrs_of(n)
    op = n.op_type
    if op in _SKIP_NORMS:
        outs = [o for i, o in enumerate(n.output) if i in (0, 3) and o]
        return [helper.make_node("Identity", ins[:1], [o], name=n.name if i == 0 else f"{n.name}/sum")
                for i, o in enumerate(outs)]
    if op in SHAPE_OF_INPUT_0:
        return [helper.make_node("Identity", ins[:1], n.output[:1], name=n.name)]
    if op in _AS_COMPUTED:
        return [helper.make_node(EQUIVALENTS[op].op, EQUIVALENTS[op].pick(ins), n.output[:1], name=n.name)]
    if op in ("QuantizeLinear", "DequantizeLinear"):
        kept = {k: v for k, v in a.items() if k == "axis"}
        return [helper.make_node(op, ins, n.output[:1], name=n.name, **kept)]
    if op == "FusedMatMul":
        return _fused_matmul(n, ins, a, opset)
    if op == "QGemm":
        return _qgemm(n, ins, a)
    return _with_attributes(n, ins, a, types, g)


def _with_attributes(n: onnx.NodeProto, ins: list[str], a: dict, types: dict[str, int],
                     g: onnx.GraphProto) -> list[onnx.NodeProto] | None:
    """The stand-ins of :func:`_stand_in` that carry attributes, a cast or a weight shape over (inputs as
    :data:`EQUIVALENTS` gives them); None for a contrib op not listed in the module docstring."""
    op = n.op_type
    picked = EQUIVALENTS[op].pick(ins) if op in EQUIVALENTS else ins
    if op == "DynamicQuantizeLSTM":
        kept = {k: a[k] for k in ("direction", "hidden_size") if k in a}
        return [helper.make_node("LSTM", picked, list(n.output), name=n.name, **kept)]
    if op == "QLinearConcat":
        return [helper.make_node("Concat", picked, n.output[:1], name=n.name, axis=a.get("axis", 0))]
    if op == "QLinearGlobalAveragePool" and not a.get("channels_last", 0):
        return [helper.make_node("GlobalAveragePool", picked, n.output[:1], name=n.name)]
    if op == "QLinearAveragePool" and not a.get("channels_last", 0):
        kept = {k: v for k, v in a.items() if k in _POOL_ATTRS}
        return [helper.make_node("AveragePool", picked, n.output[:1], name=n.name, **kept)]
    if op == "MatMulIntegerToFloat":
        tmp = f"{n.output[0]}/int32"
        to = types.get(ins[2], TensorProto.FLOAT) if len(ins) > 2 else TensorProto.FLOAT
        return [helper.make_node("MatMulInteger", picked, [tmp], name=n.name),
                helper.make_node("Cast", [tmp], n.output[:1], to=to)]
    if op == "MatMulNBits" and a.get("K") and a.get("N"):
        weight = f"{n.name or n.output[0]}/weight_shape"
        g.input.append(helper.make_tensor_value_info(weight, TensorProto.FLOAT, [int(a["K"]), int(a["N"])]))
        return [helper.make_node("MatMul", [picked[0], weight], n.output[:1], name=n.name)]
    return None


def _qgemm(n: onnx.NodeProto, ins: list[str], a: dict) -> list[onnx.NodeProto]:
    """``Gemm(A, B)`` for a ``QGemm``; a ``Cast`` to float after it when it has no ``y_scale`` (input 7)."""
    trans = {k: int(a.get(k, 0)) for k in ("transA", "transB")}
    ab = EQUIVALENTS["QGemm"].pick(ins)[:2]  # C is not needed for the shape
    if len(ins) > 7 and ins[7]:
        return [helper.make_node("Gemm", ab, n.output[:1], name=n.name, **trans)]
    tmp = f"{n.output[0]}/integer"
    return [helper.make_node("Gemm", ab, [tmp], name=n.name, **trans),
            helper.make_node("Cast", [tmp], n.output[:1], to=TensorProto.FLOAT)]


def _fused_matmul(n: onnx.NodeProto, ins: list[str], a: dict, opset: int) -> list[onnx.NodeProto] | None:
    """``MatMul(A, B)`` for a ``FusedMatMul`` without transposes; with ``transA`` / ``transB`` an ``Einsum`` that
    transposes the last two axes of that operand (broadcast batch axes as MatMul); None with ``transBatchA`` /
    ``transBatchB`` or, for a transpose, below opset 12 (no Einsum)."""
    if a.get("transBatchA", 0) or a.get("transBatchB", 0):
        return None
    ta, tb = int(a.get("transA", 0)), int(a.get("transB", 0))
    ab = EQUIVALENTS["FusedMatMul"].pick(ins)
    if not ta and not tb:
        return [helper.make_node("MatMul", ab, n.output[:1], name=n.name)]
    if opset < 12:
        return None
    eq = f"...{'ji' if ta else 'ij'},...{'kj' if tb else 'jk'}->...ik"
    return [helper.make_node("Einsum", ab, n.output[:1], name=n.name, equation=eq)]
