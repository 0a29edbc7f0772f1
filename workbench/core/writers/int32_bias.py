"""int32 bias: ``scale = input_scale * weight_scale`` (per output channel), zero_point 0.

This is the bias layout onnxruntime's QLinearConv / QGemm expect (the int32 bias is added to
the int32 accumulator, so its scale must equal the accumulator's). When a bias does not fit in
int32 (tiny weights, O(1) bias: onnxruntime issue #21000), clipping would silently change the
output; instead the weight scale of the affected channels is raised until the bias fits, as
onnxruntime PR #22020 does, and the caller reports it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.core.formats.qparams import QParams

INT32_LIMIT = 2**31 - 1
#: Headroom kept below the int32 limit after raising a weight scale (float32 rounding of scales).
_HEADROOM = 1.01


@dataclass
class BiasResult:
    """``q`` int32 ``(N,)``, its ``qparams`` (scale float32 ``()`` or ``(N,)``), the possibly
    raised weight qparams, the channels whose weight scale was raised and the largest factor."""

    q: np.ndarray
    qparams: QParams
    weight_qparams: QParams
    raised: list[int]
    factor: float


def output_channel_scale(wq: QParams, n_out: int, op_type: str, group: int) -> np.ndarray | None:
    """Weight scale per output channel ``(n_out,)`` float32, a scalar, or None if it cannot map.

    ConvTranspose weights ``[C, M/group, k...]`` are per-channel along axis 1, so each group's
    scales repeat ``group`` times.
    """
    s = wq.scale.astype(np.float32)
    if s.ndim == 0 or wq.axis is None:
        return s.reshape(())
    if wq.block_size:
        return None
    if op_type == "ConvTranspose" and s.size * group == n_out:
        return np.tile(s, group)
    return s if s.size == n_out else None


#: A channel whose weight scale is at most this share of the layer's largest is dead: its output is its
#: bias alone (ppocrv4_rec: max |w| 1e-15 .. 1e-21 on a few channels of four Convs).
DEAD_CHANNEL = 1e-9


def all_dead(wq: QParams, channels: list[int], n: int, op_type: str, group: int = 1) -> bool:
    """True when every one of ``channels`` has a per-channel weight scale of at most
    :data:`DEAD_CHANNEL` times the layer's largest (False for per-tensor weights)."""
    s_w = output_channel_scale(wq, n, op_type, group)
    if s_w is None or np.ndim(s_w) != 1 or not channels:
        return False
    s_w = np.asarray(s_w, np.float64)
    return bool(np.all(s_w[channels] <= DEAD_CHANNEL * s_w.max()))


def quantize_bias(b: np.ndarray, input_scale: np.ndarray, wq: QParams, op_type: str,
                  w: np.ndarray, group: int = 1) -> BiasResult | None:
    """Quantize bias ``b`` (float32 ``(N,)``; ``(1, N)`` is flattened) to int32.

    Parameters
    ----------
    b : numpy.ndarray float32
    input_scale : numpy.ndarray float32 ``()``
        Scale of the unit's activation input.
    wq : QParams
        Weight qparams; raised per channel (or per tensor) on overflow.
    op_type, group : str, int
        For the channel layout of the weight scale.
    w : numpy.ndarray float32
        The float weight (needed only to requantize after raising its scale; not modified).

    Returns
    -------
    BiasResult or None
        None when the weight scale does not map onto the output channels (e.g. per_block).
    """
    b = np.asarray(b, dtype=np.float32).reshape(-1)
    s_in = np.float32(np.asarray(input_scale, np.float32).reshape(()))
    s_w = output_channel_scale(wq, b.size, op_type, group)
    if s_w is None:
        return None
    scale = (s_in * s_w).astype(np.float32)
    need = np.abs(b.astype(np.float64)) / (INT32_LIMIT / _HEADROOM)
    raised: list[int] = []
    factor = 1.0
    if np.any(np.abs(b.astype(np.float64)) / np.broadcast_to(scale, b.shape) > INT32_LIMIT):
        wq, raised, factor = _raise_weight_scale(wq, need / np.float64(s_in), b.size, op_type, group)
        s_w = output_channel_scale(wq, b.size, op_type, group)
        scale = (s_in * s_w).astype(np.float32)
    q = np.rint(b.astype(np.float64) / np.broadcast_to(scale, b.shape).astype(np.float64))
    q = np.clip(q, -INT32_LIMIT - 1, INT32_LIMIT).astype(np.int32)
    axis = 0 if scale.ndim == 1 else None
    qp = QParams(scale, np.zeros(scale.shape, np.int32), "int32", axis, None)
    return BiasResult(q, qp, wq, raised, factor)


def raised_scales(old: QParams, res: BiasResult, op_type: str, group: int = 1, most: int = 3) -> str:
    """How :func:`quantize_bias` raised the weight scale, for a note: ``"channel 72: 1.2e-20 -> 2.1e-12, ..."``
    (each raised output channel's weight scale before -> after, ``.3g``; at most ``most`` channels, then the count),
    ``"1.2e-05 -> 2.6e-05 (per tensor)"`` for a per-tensor weight; "" when nothing was raised. ``old``: the weight
    qparams :func:`quantize_bias` was given. The raise is printed as the two scales, not their ratio: a near-zero
    channel's ratio (x4e+26 on ppocrv4_rec) says nothing a user can act on."""
    if not res.raised:
        return ""
    before = output_channel_scale(old, res.q.size, op_type, group)
    after = output_channel_scale(res.weight_qparams, res.q.size, op_type, group)
    if before is None or after is None:
        return ""
    if np.ndim(before) == 0:
        return f"{float(before):.3g} -> {float(after):.3g} (per tensor)"
    shown = ", ".join(f"channel {c}: {float(before[c]):.3g} -> {float(after[c]):.3g}" for c in res.raised[:most])
    return shown + (f", ... ({len(res.raised)} channels)" if len(res.raised) > most else "")


def coarse_error(b: np.ndarray, res: BiasResult, out_scale: float | None) -> float | None:
    """Largest rounding error of ``res`` (``b`` quantized by :func:`quantize_bias`) when it exceeds half the output
    LSB ``out_scale`` (the bias is then kept float: its int32 scale is far too coarse for it), else None; None
    too when the unit's output has no grid (``out_scale`` None)."""
    if out_scale is None:
        return None
    scale = np.broadcast_to(res.qparams.scale, res.q.shape).astype(np.float64)
    err = float(np.max(np.abs(b.reshape(-1).astype(np.float64) - res.q * scale), initial=0.0))
    return err if err > 0.5 * float(out_scale) else None


@dataclass
class BiasSlot:
    """Where a QDQ writer put one int32 bias, and what it quantized it with, so bias correction can quantize the
    corrected bias into the same model (:mod:`workbench.core.writers.bias_patch`) instead of writing it again.

    ``node``: the Conv / Gemm; ``bias``: the float bias initializer it read; ``q_name``: its int32 initializer in
    the written model; ``input_scale``: the unit's input scale (float32 ``()``); ``weight_qparams``: the weight's
    qparams before the bias (the ones :func:`quantize_bias` got); ``op_type`` and ``group``: the channel layout;
    ``out_scale``: the output grid's scale (None without one; :func:`coarse_error`); ``raised`` and ``factor``: the
    output channels whose weight scale was raised for this bias and the raise as its note prints it
    (:func:`raised_scales`; [] and "" when none was); ``main``: the unit is in the main graph; ``scale_name``: the bias scale's
    initializer; ``weight``: the float weight and ``weight_inits`` the integer weight's, scale's and zero point's
    initializers the writer made of it (a raised scale changes them).
    """

    node: str
    bias: str
    q_name: str
    input_scale: np.ndarray
    weight_qparams: QParams
    op_type: str
    group: int
    out_scale: float | None
    raised: list[int]
    factor: str
    main: bool
    scale_name: str
    weight: str = ""
    weight_inits: tuple[str, ...] = ()


def _raise_weight_scale(wq: QParams, need_w: np.ndarray, n_out: int, op_type: str,
                        group: int) -> tuple[QParams, list[int], float]:
    """Weight qparams whose scale is at least ``need_w`` (float64 per output channel)."""
    old = wq.scale.astype(np.float64)
    if old.ndim == 0:
        new = np.maximum(old, need_w.max())
        raised = [int(i) for i in np.nonzero(need_w > old)[0]]
    else:
        req = need_w
        if op_type == "ConvTranspose" and old.size * group == n_out:
            req = need_w.reshape(group, old.size).max(axis=0)
        new = np.maximum(old, req)
        raised = [int(i) for i in np.nonzero(req > old)[0]]
    new32 = new.astype(np.float32)
    new32 = np.where(new32.astype(np.float64) < new, np.nextafter(new32, np.float32(np.inf)), new32)
    factor = float(np.max(new / old))
    return QParams(new32.astype(np.float32), wq.zero_point, wq.qtype, wq.axis, wq.block_size), raised, factor
