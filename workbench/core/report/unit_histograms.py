"""Histograms of one unit's output, activation inputs and weight, for the app's Errors panel.

The activations (output and inputs) come from one onnxruntime run of the float model per data row, the
tensors added as outputs together (a graph input is read from the row itself): the inputs cost no run of
their own. The weight comes from the model's initializer, with the grid it was written with
(:func:`workbench.core.analysis.weight_grid.written_weight_qparams`): a per-channel weight is drawn whole
and, over it, one channel (the worst, or the one asked for) with that channel's own clip range and grid.
Each histogram is a dict of JSON-safe values: ``tensor``, ``counts`` (ints), ``edges`` (``len(counts) + 1``
floats), ``rmin`` / ``rmax`` (the values' range), ``values`` (finite elements counted); or ``tensor`` and
``missing`` (why there are no values: a constant, a tensor inside an If/Loop body).
"""

from __future__ import annotations

import numpy as np

from workbench.core.data.loader import open_data_source
from workbench.core.formats.qparams import QParams
from workbench.core.io.external import tensor_array
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.report.activation_values import activation_values

#: bins of an app histogram
BINS = 128


def histogram_of(tensor: str, values: np.ndarray, bins: int = BINS, edges: np.ndarray | None = None) -> dict:
    """The histogram dict of ``values`` (any shape; non-finite ones left out) over ``bins`` equal bins spanning
    them, or over ``edges`` when given; no values: empty ``counts`` and ``edges``."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"tensor": tensor, "counts": [], "edges": [], "rmin": 0.0, "rmax": 0.0, "values": 0}
    counts, edges = np.histogram(v, bins=edges if edges is not None else bins)
    return {"tensor": tensor, "counts": counts.tolist(), "edges": edges.tolist(), "rmin": float(v.min()),
            "rmax": float(v.max()), "values": int(v.size)}


def why_missing(model, tensor: str) -> str | None:
    """Why ``tensor`` has no activation values to draw (None: it has): a constant, or not in the main graph."""
    graph = model.proto.graph
    if tensor in {t.name for t in graph.initializer}:
        return "a constant (an initializer), not an activation"
    produced = {o for n in graph.node for o in n.output} | {i.name for i in graph.input}
    if tensor not in produced:
        return "not a tensor of the main graph (inside an If/Loop body, or no such tensor): its values are not kept"
    return None


def activation_histograms(model, tensors: list[str], data, *, samples: int, bins: int = BINS,
                          progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> dict:
    """Histograms of the float activations ``tensors`` over the first ``samples`` rows of ``data``, one run per row.

    Returns ``{"hists": {tensor: histogram dict}, "rows": rows run, "data_rows": rows the data holds (None when
    unknown: a reader without a count that had more)}``.

    Raises
    ------
    DataError
        The data does not fit the model.
    Cancelled
        ``cancel`` was set.
    """
    missing = {t: why for t in tensors if (why := why_missing(model, t)) is not None}
    wanted = [t for t in dict.fromkeys(tensors) if t not in missing]
    source = open_data_source(data, model)
    values, rows, more = activation_values(model, wanted, source, samples=samples, label="Histograms", threads=1,
                                           progress=progress, cancel=cancel)
    hists = {t: {"tensor": t, "missing": why} for t, why in missing.items()}
    for t in wanted:
        hists[t] = histogram_of(t, values[t], bins)
    return {"hists": hists, "rows": rows, "data_rows": source.num_samples() or (None if more else rows)}


def weight_histogram(model, weight: str, qp: QParams | None, *, channel: int | None = None,
                     bins: int = BINS) -> dict:
    """Histogram of the initializer ``weight`` (every value), and with a per-channel ``qp`` (1-D scale along
    ``qp.axis``) of its channel ``channel`` (default: the one whose values reach furthest, the widest grid)
    on the same edges: ``channel``, ``channels``, ``channel_counts`` and ``channel_qparams``
    (:meth:`QParams.to_json` of that channel alone, so it has one clip range and one grid). A missing
    initializer gives ``missing``."""
    init = next((t for t in model.proto.graph.initializer if t.name == weight), None)
    if init is None:
        return {"tensor": weight, "missing": "not an initializer of the model"}
    w = np.asarray(tensor_array(init), dtype=np.float64)
    out = histogram_of(weight, w, bins)
    per_channel = (qp is not None and np.asarray(qp.scale).ndim == 1 and qp.block_size is None
                   and qp.axis is not None and w.ndim > qp.axis and w.shape[qp.axis] == np.asarray(qp.scale).size)
    if not per_channel or not out["values"]:
        return out
    axis, n = qp.axis, w.shape[qp.axis]
    if channel is None or not 0 <= channel < n:
        reach = np.abs(np.moveaxis(w, axis, 0).reshape(n, -1)).max(axis=1)
        channel = int(np.argmax(reach))
    own = QParams(np.asarray(qp.scale)[channel], np.asarray(qp.zero_point)[channel], qp.qtype)
    out.update(channel=channel, channels=n, channel_qparams=own.to_json(),
               channel_counts=histogram_of(weight, np.take(w, channel, axis=axis), edges=np.asarray(out["edges"]))[
                   "counts"])
    return out
