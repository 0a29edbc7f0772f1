"""Op families: how each ONNX op takes part in a QDQ node unit.

The tables follow onnxruntime's QDQ fusion rules (``qdq_selector_action_transformer.cc``):

* compute ops with a weight (and an optional bias) fuse with their input DequantizeLinear and
  output QuantizeLinear nodes into QLinearConv, QLinearMatMul, QGemm, MatMulNBits;
* element-wise / pooling ops fuse into QLinearAdd, QLinearMul, QLinearConcat,
  QLinearAveragePool, QLinearGlobalAveragePool when every float input and output has a Q/DQ pair;
* pass-through ops (Reshape, Transpose, MaxPool, ...) do not change values (or only pick them),
  so their output reuses the input's scale and zero_point and onnxruntime drops the Q/DQ pair
  around them ("DropQDQ" rule);
* Relu and Clip right before a QuantizeLinear whose zero_point equals qmin are removed by
  onnxruntime (``ReluQuantFusion`` / ``ClipQuantFusion``), so the planner folds them into the
  producer's unit when the activation spec is asymmetric.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WeightOp:
    """A compute op with a constant weight input (and optionally a bias input).

    Attributes
    ----------
    weight_index, bias_index : int
        Input positions of the weight and the bias (``None`` when the op has no bias).
    """

    weight_index: int
    bias_index: int | None


WEIGHT_OPS: dict[str, WeightOp] = {
    "Conv": WeightOp(1, 2),
    "ConvTranspose": WeightOp(1, 2),
    "MatMul": WeightOp(1, None),
    "Gemm": WeightOp(1, 2),
}

#: Ops whose output reuses the qparams of their data input (input 0); onnxruntime drops the
#: Q/DQ pair around them when both sides carry the same scale and zero_point.
PASS_THROUGH_OPS = frozenset({
    "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "MaxPool", "Split", "Slice",
    "Gather", "GatherElements", "Resize", "Identity", "Expand", "Tile", "DepthToSpace",
    "SpaceToDepth",
})

#: Ops that only read their input's shape (their reading does not need the values quantized).
SHAPE_ONLY_OPS = frozenset({"Shape", "Size"})

#: Float ops onnxruntime (>= 1.20, ``WeightBiasQuantization``) quantizes itself, weight per-tensor
#: int8, when their input comes from a DequantizeLinear and their output goes to a QuantizeLinear.
REQUANTIZED_WHEN_EXCLUDED = frozenset({"Conv", "ConvTranspose", "Gemm"})

#: Ops whose onnxruntime integer kernel can also write float: DQ inputs and a float output fuse into
#: MatMulIntegerToFloat (MatMul) or QGemm without ``y_scale`` (Gemm); Conv has no such kernel (its
#: DQ inputs without a Q after it run as a float Conv).
FLOAT_OUTPUT_OPS = frozenset({"MatMul", "Gemm"})

#: Activations that onnxruntime removes before a QuantizeLinear with zero_point == qmin.
FOLD_OPS = frozenset({"Relu", "Clip"})

#: Input positions that carry tensor data for ops where the other inputs are shapes, indices,
#: scales or bounds (never quantized). Ops not listed quantize every float input.
DATA_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (0,), "Transpose": (0,), "Flatten": (0,), "Squeeze": (0,), "Unsqueeze": (0,),
    "MaxPool": (0,), "Split": (0,), "Slice": (0,), "Gather": (0,), "GatherElements": (0,),
    "Resize": (0,), "Identity": (0,), "Expand": (0,), "Tile": (0,), "Clip": (0,), "Relu": (0,),
    "Pad": (0,), "AveragePool": (0,), "GlobalAveragePool": (0,), "ReduceMax": (0,),
    "ReduceMin": (0,), "ReduceMean": (0,), "DepthToSpace": (0,), "SpaceToDepth": (0,),
    "Conv": (0,), "ConvTranspose": (0,), "Gemm": (0,), "MatMul": (0, 1),
    "LayerNormalization": (0,), "Softmax": (0,), "Sigmoid": (0,), "LeakyRelu": (0,),
    "Where": (1, 2),
}



def data_inputs(op_type: str, n_inputs: int) -> tuple[int, ...]:
    """Input positions of ``op_type`` that hold quantizable float data."""
    return DATA_INPUTS.get(op_type, tuple(range(n_inputs)))


def weight_channel_axis(op_type: str, weight_rank: int, attrs: dict) -> int:
    """Output-channel axis of the weight for per-channel quantization.

    Conv: 0 (``[M, C/group, k...]``); ConvTranspose: 1 (``[C, M/group, k...]``); MatMul: the last
    axis of B (one scale per output column, as onnxruntime's QLinearMatMul / MatMulIntegerToFloat
    accept); Gemm: 0 when ``transB`` else 1.
    """
    if op_type == "ConvTranspose":
        return 1
    if op_type == "MatMul":
        return weight_rank - 1
    if op_type == "Gemm":
        return 0 if attrs.get("transB", 0) else 1
    return 0


def weight_reduction_axis(op_type: str, weight_rank: int, attrs: dict) -> int:
    """Reduction (input) axis of the weight, the axis of per-block quantization.

    MatMul B ``[K, N]``: axis ``rank - 2`` (0 for 2-D B; onnxruntime's MatMulNBits fusion needs
    DequantizeLinear axis 0 and a 2-D B); Gemm: 1 when ``transB`` else 0; Conv: 1.
    """
    if op_type == "MatMul":
        return max(weight_rank - 2, 0)
    if op_type == "Gemm":
        return 1 if attrs.get("transB", 0) else 0
    if op_type == "ConvTranspose":
        return 0
    return 1
