"""Keep float the static units that would get a weight DequantizeLinear and nothing else.

In a static (QDQ) plan a Conv / ConvTranspose / MatMul / Gemm unit runs as an integer kernel only
when its activation input and output carry Q/DQ pairs too. A unit that has none (inside an
If / Loop body, where activations stay float, or with every neighbour excluded) is written as
``DequantizeLinear(int8 weight) -> float op``: onnxruntime keeps that DequantizeLinear and runs it
on every inference, so the model only gets slower. Measured with onnxruntime 1.32 (CPU, 1 thread,
x86_64 AVX512-VNNI, 2 cores, rough on a shared machine): silero_vad.onnx ran 1.17x and
silero_vad_op18_ifless.onnx 1.28x the float model's latency with their 12 / 16 weight-only units,
0.98x with those units float.

A unit the recipe names itself (override or name rule) is left as asked; the weight-only preset
and dynamic plans are not touched (there, weight-only DequantizeLinear is the point).
"""

from __future__ import annotations

from workbench.core.graph import op_families as U
from workbench.core.planning.island_guard import named_by_recipe


def weight_only_units(plan) -> list[str]:
    """Units of a static ``plan`` that quantize a weight but no activation (see the module docstring).

    Returns
    -------
    list of str
        Unit keys (main node names), in plan order; empty for non-static plans.
    """
    if plan.mode != "static":
        return []
    return [n for n, u in plan.units.items()
            if not u.excluded and u.op_type in U.WEIGHT_OPS and u.weight is not None and not u.inputs
            and not u.outputs and not named_by_recipe(plan.recipe, n, u.op_type)]
