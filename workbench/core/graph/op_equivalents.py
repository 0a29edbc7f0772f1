"""Which standard op an integer or contrib op computes, and where that op's inputs sit among its own.

One table for every reader of already-quantized or onnxruntime-optimized files: the quantization summary
(:mod:`workbench.core.inspection.quant_summary`: the float op a kernel computes, its activation and weight
inputs), the cost (:mod:`workbench.core.analysis.cost`: MACs and weight memory of a kernel counted as its float
op) and the shape-inference stand-ins (:mod:`workbench.core.graph.contrib_stand_ins`).

Input positions are those of the operator schemas: the ONNX operator spec (``docs/Operators.md``) for
``QLinearConv`` (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B), ``ConvInteger``
(x, w, x_zero_point, w_zero_point), ``QLinearMatMul`` (a, a_scale, a_zero_point, b, ...), ``MatMulInteger``
(A, B, a_zero_point, b_zero_point) and the order of the standard ops' own inputs (``LSTM``: X, W, R, B,
sequence_lens, initial_h, initial_c, P); onnxruntime's ``docs/ContribOperators.md`` for the ``com.microsoft`` ops,
e.g. ``QGemm`` (A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale, y_zero_point),
``MatMulIntegerToFloat`` (A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias), ``DynamicQuantizeMatMul``
(A, B, b_scale, b_zero_point, bias), ``MatMulNBits`` (A, B, scales, zero_points, g_idx, bias), ``QAttention``
(input, weight, bias, input_scale, weight_scale, ...), ``QLinearWhere`` (condition, X, x_scale, x_zero_point, Y,
...), ``QLinearConcat`` (Y_scale, Y_zero_point, then an (X, scale, zero point) triple per input).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Equivalent:
    """The standard op an integer or contrib op computes.

    Attributes
    ----------
    op : str
        The standard op it computes (``"Conv"`` for ``QLinearConv``; ``"Attention"``: onnxruntime's float
        ``Attention``).
    inputs : tuple of int, or slice
        Positions, among the op's own inputs, of the standard op's inputs in the standard op's order (activation
        first, then the weight of a compute op, then a Conv's or Gemm's bias; a slice for a variadic op:
        ``QLinearConcat``'s every third input from 2).
    bias : int or None
        Position of the bias the op adds (a MatMul kernel's, which the standard MatMul has no input for);
        None: it takes none.
    activation_dtype : str or None
        None when input ``inputs[0]`` is the integer activation it computes on; else the dtype it computes the
        float activation in: ``"uint8"`` for the dynamic kernels, which quantize it themselves at run time
        (``DynamicQuantizeMatMul``, ``DynamicQuantizeLSTM``), ``"float"`` for the weight-only kernels
        (``MatMulNBits``, ``MatMulBnb4``).
    integer : bool
        True for an integer / quantized kernel; False for a float fusion onnxruntime writes into an optimized
        file (``FusedMatMul``).
    """

    op: str
    inputs: tuple[int, ...] | slice
    bias: int | None = None
    activation_dtype: str | None = None
    integer: bool = True

    @property
    def activation(self) -> int:
        """Position of the standard op's first input (a compute op's activation)."""
        return self.inputs.start if isinstance(self.inputs, slice) else self.inputs[0]

    @property
    def weight(self) -> int | None:
        """Position of a compute op's weight (the standard op's second input); None for a one-input op."""
        if isinstance(self.inputs, slice):
            return None
        return self.inputs[1] if len(self.inputs) > 1 else None

    def pick(self, names: list[str]) -> list[str]:
        """The standard op's inputs out of a node's input names ``names`` (those past the end of ``names``, trailing
        optional inputs the node leaves out, are left out)."""
        if isinstance(self.inputs, slice):
            return names[self.inputs]
        return [names[i] for i in self.inputs if i < len(names)]


_LSTM_INPUTS = tuple(range(8))  # X, W, R, B, sequence_lens, initial_h, initial_c, P

#: integer / contrib op -> what it computes (see the module docstring for the sources)
EQUIVALENTS: dict[str, Equivalent] = {
    # ONNX integer ops
    "QLinearConv": Equivalent("Conv", (0, 3, 8), bias=8),
    "ConvInteger": Equivalent("Conv", (0, 1)),
    "QLinearMatMul": Equivalent("MatMul", (0, 3)),
    "MatMulInteger": Equivalent("MatMul", (0, 1)),
    # com.microsoft integer kernels
    "QLinearConvTranspose": Equivalent("ConvTranspose", (0, 3, 8), bias=8),
    "MatMulIntegerToFloat": Equivalent("MatMul", (0, 1), bias=6),
    "DynamicQuantizeMatMul": Equivalent("MatMul", (0, 1), bias=4, activation_dtype="uint8"),
    "MatMulNBits": Equivalent("MatMul", (0, 1), bias=5, activation_dtype="float"),
    "MatMulBnb4": Equivalent("MatMul", (0, 1), activation_dtype="float"),
    "QGemm": Equivalent("Gemm", (0, 3, 6), bias=6),
    "DynamicQuantizeLSTM": Equivalent("LSTM", _LSTM_INPUTS, bias=3, activation_dtype="uint8"),
    "QAttention": Equivalent("Attention", (0, 1, 2), bias=2),
    "QLinearAdd": Equivalent("Add", (0, 3)),
    "QLinearMul": Equivalent("Mul", (0, 3)),
    "QLinearConcat": Equivalent("Concat", slice(2, None, 3)),
    "QLinearAveragePool": Equivalent("AveragePool", (0,)),
    "QLinearGlobalAveragePool": Equivalent("GlobalAveragePool", (0,)),
    "QLinearSigmoid": Equivalent("Sigmoid", (0,)),
    "QLinearLeakyRelu": Equivalent("LeakyRelu", (0,)),
    "QLinearSoftmax": Equivalent("Softmax", (0,)),
    "QLinearWhere": Equivalent("Where", (0, 1, 4)),
    "GatherBlockQuantized": Equivalent("Gather", (0, 1)),
    # com.microsoft float fusions (``alpha * op(A) op(B)``)
    "FusedMatMul": Equivalent("MatMul", (0, 1), integer=False),
}

#: integer / quantized op -> the float op it computes (:data:`EQUIVALENTS` without the float fusions)
FLOAT_OP: dict[str, str] = {name: e.op for name, e in EQUIVALENTS.items() if e.integer}

#: contrib ops whose output 0 has the shape and element type of input 0 (element-wise activations and
#: normalizations; ``SkipLayerNormalization`` / ``SkipSimplifiedLayerNormalization`` also their optional output 3)
SHAPE_OF_INPUT_0 = frozenset({
    "QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", "Gelu", "FastGelu", "BiasGelu", "QuickGelu",
    "SimplifiedLayerNormalization", "LayerNormalization", "SkipLayerNormalization", "SkipSimplifiedLayerNormalization",
})
