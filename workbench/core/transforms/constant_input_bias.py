"""Bias correction for Convs whose input activation is a constant (a zero-range calibrated tensor).

When calibration sees one value ``c`` for a Conv input (``rmin == rmax == c``, e.g. ``X * 0 + 0.5``
in case 03), the input is exact on its grid and the Conv output error is the weight rounding
alone, a fixed shift ``conv(c, W_q - W)``: every tap sees the same value, so the rounding errors
of a channel add up instead of averaging out (case 03, 8-bit weights: up to 0.94 LSB of the
output scale at a corner, 1.05 LSB with the output rounding on top). Its mean over the output
positions is known without data (Nagel et al., ICCV 2019, section 4.2, with ``E[x] = c``) and is
folded into the float bias before the int32 bias is written (case 03: 1.05 -> 0.76 LSB).
General bias correction (any input, from a data pass) is the opt-in
:mod:`workbench.core.transforms.bias_correction`; this is the case where the expected input is exact.
"""

from __future__ import annotations

import numpy as np
import onnx

from workbench.core.graph.index import GraphIndex
from workbench.core.transforms.bias_correction import (
    conv_output_shift,
    correctable_units,
    dequantized_weights,
)


def _static_shape(proto: onnx.ModelProto, tensor: str) -> list[int] | None:
    g = proto.graph
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        if vi.name == tensor and vi.type.HasField("tensor_type"):
            dims = [d.dim_value if d.HasField("dim_value") else 0 for d in vi.type.tensor_type.shape.dim]
            return dims if dims and all(d > 0 for d in dims) else None
    return None


def constant_inputs(plan, observers: dict) -> dict[str, float]:
    """Conv input tensor -> its single calibrated value ``c`` (``rmin == rmax != 0``, per-tensor)."""
    found = {}
    for u in correctable_units(plan):
        obs = observers.get(u.inputs[0]) if u.inputs else None
        if obs is None or not obs.count:
            continue
        rmin, rmax = (np.asarray(r, dtype=np.float64) for r in obs.compute_range())
        if rmin.size == 1 and float(rmin) == float(rmax) and float(rmin) != 0.0 and np.isfinite(rmin).all():
            found[u.inputs[0]] = float(rmin)
    return found


def constant_input_shifts(model, plan, quant_proto: onnx.ModelProto, observers: dict) -> dict[str, np.ndarray]:
    """Bias initializer -> mean output shift ``conv(c, W_q - W)`` of each Conv on a constant input.

    Parameters
    ----------
    model : PreparedModel
        The float model (weights and inferred shapes).
    plan : QuantPlan
    quant_proto : onnx.ModelProto
        The QDQ model written from ``plan`` (its dequantized weights give ``W_q``).
    observers : dict[str, Observer]
        Calibration observers by tensor name.

    Returns
    -------
    dict[str, numpy.ndarray]
        float64 ``(Cout,)`` per bias; Convs whose input shape is not static or whose bias
        initializer other nodes share are left out.
    """
    consts = constant_inputs(plan, observers)
    if not consts:
        return {}
    wq = dequantized_weights(quant_proto)
    consumers = GraphIndex(model.proto.graph).consumers
    shifts = {}
    for u in correctable_units(plan):
        c = consts.get(u.inputs[0]) if u.inputs and len(consumers.get(u.bias, [])) == 1 else None
        shape = _static_shape(model.proto, u.inputs[0]) if c is not None else None
        w = model.initializer(u.weight).astype(np.float64)
        if shape is None or u.node not in wq or wq[u.node].shape != w.shape:
            continue
        mean_x = np.full([1] + shape[1:], c, dtype=np.float64)
        shifts[u.bias] = conv_output_shift(model.node(u.node), wq[u.node] - w, mean_x)
    return shifts
