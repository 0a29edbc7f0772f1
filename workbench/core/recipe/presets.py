"""Built-in presets (registry keyed by name).

``cpu-u8s8`` follows onnxruntime's CPU recommendation (uint8 asymmetric activations, int8
symmetric per-channel weights). On x86 CPUs without VNNI, onnxruntime's u8 x s8 kernels use
VPMADDUBSW, whose int16 pair sums saturate for 8-bit weights; :func:`cpu_needs_reduce_range`
detects that and the preset then stores weights in 7 bits (``reduce_range``), which the resolved
recipe records so a replay on another machine gives the same model. ``s8s8`` does the same:
onnxruntime's x86 kernels shift int8 activations to uint8 and hit the same saturation.
"""

from __future__ import annotations

from workbench.core.errors import RecipeError
from workbench.core.recipe.hardware import cpu_needs_reduce_range
from workbench.core.recipe.spec import BIAS_INT32, Granularity, NodeConfig, PlanMode, Preset, QuantSpec
from workbench.core.wording import did_you_mean

#: Op types quantized by the static presets (node units; Relu/Clip are folded into producers).
STATIC_OPS = (
    "Conv", "ConvTranspose", "MatMul", "Gemm", "Add", "Mul", "Concat",
    "MaxPool", "AveragePool", "GlobalAveragePool", "Resize",
)




def _w_int8_per_channel(reduce_range: bool = False) -> QuantSpec:
    return QuantSpec(dtype="int8", symmetric=True, granularity=Granularity.per_channel,
                     reduce_range=reduce_range)


def _presets() -> dict[str, Preset]:
    rr = cpu_needs_reduce_range()
    u8 = QuantSpec(dtype="uint8", symmetric=False)
    return {p.name: p for p in (
        Preset(name="cpu-u8s8", description="uint8 asymmetric activations, int8 symmetric per-channel "
               "weights (onnxruntime CPU); 7-bit weights on CPUs without VNNI",
               config=NodeConfig(weight=_w_int8_per_channel(rr), activation=u8, bias=BIAS_INT32),
               op_types=STATIC_OPS),
        Preset(name="s8s8", description="int8 symmetric activations and per-channel weights "
               "(TensorRT / ARM / NPU style); 7-bit weights on CPUs without VNNI",
               config=NodeConfig(weight=_w_int8_per_channel(rr),
                                 activation=QuantSpec(dtype="int8", symmetric=True), bias=BIAS_INT32),
               op_types=STATIC_OPS),
        Preset(name="a16w8", description="uint16 asymmetric activations, int8 per-channel weights",
               config=NodeConfig(weight=_w_int8_per_channel(),
                                 activation=QuantSpec(dtype="uint16", symmetric=False), bias=BIAS_INT32),
               op_types=STATIC_OPS, min_opset=21),
        Preset(name="w4-block", description="weight-only int4, symmetric, blocks of 32 along the input "
               "axis of MatMul/Gemm (onnxruntime MatMulNBits)", mode=PlanMode.WEIGHT_ONLY,
               config=NodeConfig(weight=QuantSpec(dtype="int4", symmetric=True,
                                                  granularity=Granularity.per_block, block_size=32)),
               op_types=("MatMul", "Gemm"), min_opset=21),
        Preset(name="fp8-e4m3", description="float8 E4M3FN activations and per-channel weights",
               config=NodeConfig(weight=QuantSpec(dtype="float8e4m3fn", granularity=Granularity.per_channel),
                                 activation=QuantSpec(dtype="float8e4m3fn"), bias=None),
               op_types=STATIC_OPS, min_opset=19),
        Preset(name="dynamic-u8", description="dynamic quantization: int8 weights offline, uint8 "
               "activations at run time (DynamicQuantizeLinear, MatMulInteger, ConvInteger); no data",
               mode=PlanMode.DYNAMIC,
               config=NodeConfig(weight=QuantSpec(dtype="int8", symmetric=True),
                                 activation=QuantSpec(dtype="uint8", symmetric=False)),
               op_types=("Conv", "MatMul", "Gemm")),
    )}


PRESETS: dict[str, Preset] = _presets()


def get_preset(name: str) -> Preset:
    """The preset called ``name``.

    Raises
    ------
    RecipeError
        If there is no such preset.
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise RecipeError(f"unknown preset {name!r}{did_you_mean(name, PRESETS)}.",
                          hint=f"Use one of: {', '.join(PRESETS)}.") from None
