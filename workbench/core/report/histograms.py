"""Histograms of unit output tensors over a few samples, with the quantization clip range and grid.

The clip range of an affine quantizer is ``[(qmin - zero_point) * scale, (qmax - zero_point) * scale]``
and its grid is ``(q - zero_point) * scale`` for every integer ``q`` in ``[qmin, qmax]`` (ONNX
QuantizeLinear / DequantizeLinear). Only per-tensor parameters have one range and one grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from workbench.core.data.loader import open_data_source
from workbench.core.formats.qparams import QParams
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.report.activation_values import activation_values

#: More integer levels than this inside the plotted range are not drawn (they would fill the plot).
MAX_GRID_LINES = 300


@dataclass
class TensorHistogram:
    """Histogram of one float tensor and the quantizer applied to it.

    ``counts`` (int, ``bins``), ``edges`` (float64, ``bins + 1``); ``clip`` the float clip range or
    None (per-channel, float8 or no parameters); ``grid`` float64 values of the integer levels inside
    the plotted range (empty when more than :data:`MAX_GRID_LINES`); ``outside`` the fraction of
    values outside ``clip``; ``values`` finite elements seen; ``samples`` samples run.
    """

    node: str
    tensor: str
    sqnr_db: float
    counts: np.ndarray
    edges: np.ndarray
    clip: tuple[float, float] | None
    grid: np.ndarray
    qtype: str
    scale: float | None
    zero_point: float | None
    outside: float
    values: int
    samples: int


def clip_range(qp: QParams | None) -> tuple[float, float] | None:
    """``((qmin - zero_point) * scale, (qmax - zero_point) * scale)`` of per-tensor integer params, else None."""
    if qp is None or qp.qt.is_float or np.asarray(qp.scale).size != 1:
        return None
    s = float(np.ravel(qp.scale)[0])
    z = float(np.ravel(qp.zero_point)[0])
    return (qp.qt.qmin - z) * s, (qp.qt.qmax - z) * s


def grid_levels(qp: QParams, lo: float, hi: float) -> np.ndarray:
    """Float values ``(q - zero_point) * scale`` of the integer levels in ``[lo, hi]`` (empty if too many)."""
    if clip_range(qp) is None:
        return np.zeros(0)
    s = float(np.ravel(qp.scale)[0])
    z = float(np.ravel(qp.zero_point)[0])
    if s <= 0:
        return np.zeros(0)
    qlo = max(qp.qt.qmin, math.ceil(lo / s + z))
    qhi = min(qp.qt.qmax, math.floor(hi / s + z))
    if qhi < qlo or qhi - qlo + 1 > MAX_GRID_LINES:
        return np.zeros(0)
    return (np.arange(qlo, qhi + 1) - z) * s


def unit_histograms(model, rows, qparams: dict[str, QParams], data, *, samples: int = 8, bins: int = 96,
                    progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> list[TensorHistogram]:
    """Histograms of the float output tensors of ``rows`` (UnitError) on the first ``samples`` samples.

    One onnxruntime run of the float model per sample, with the tensors added as outputs. The bins
    span the values and the clip range together, so clipping shows.

    Raises
    ------
    DataError
        The data does not fit the model.
    Cancelled
        ``cancel`` was set.
    """
    tensors = [r.tensor for r in rows]
    if not tensors:
        return []
    values, seen, _ = activation_values(model, tensors, open_data_source(data, model), samples=samples,
                                        label="Histograms of the worst units", progress=progress, cancel=cancel)
    return [_histogram(r, values[r.tensor], qparams.get(r.tensor), bins, seen) for r in rows]


def _histogram(row, values: np.ndarray, qp: QParams | None, bins: int, samples: int) -> TensorHistogram:
    clip = clip_range(qp)
    lo = float(values.min()) if values.size else 0.0
    hi = float(values.max()) if values.size else 1.0
    if clip is not None:
        lo, hi = min(lo, clip[0]), max(hi, clip[1])
    if hi <= lo:
        hi = lo + 1.0
    counts, edges = np.histogram(values, bins=bins, range=(lo, hi))
    outside = float(np.mean((values < clip[0]) | (values > clip[1]))) if clip is not None and values.size else 0.0
    return TensorHistogram(
        row.node, row.tensor, row.sqnr_db, counts, edges, clip,
        grid_levels(qp, lo, hi) if qp is not None else np.zeros(0),
        qp.qtype if qp is not None else "none",
        float(np.ravel(qp.scale)[0]) if clip is not None else None,
        float(np.ravel(qp.zero_point)[0]) if clip is not None else None,
        outside, int(values.size), samples)
