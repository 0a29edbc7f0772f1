"""Which size-derived tensors really change with the input's size: the float model run at two sizes.

:func:`workbench.core.planning.shape_guard.size_derived_tensors` answers from the graph alone, and takes a
dimension that ONNX shape inference leaves unknown as dynamic. Many such tensors are the same at every
size: digits_transformer's attention scale ``Sqrt(head_dim)`` reads the last dimension of a ``Reshape``
whose target holds -1, which shape inference does not resolve under a symbolic batch, although it is the
model width over the head count whatever the batch. So the candidates are computed on two feeds: the
first calibration sample as given, and the same sample tiled twice along every dynamic axis of every
input (batch 1 -> 2, nudenet_320n's 320x320 -> 640x640). A candidate whose value (shape and elements)
is the same on both is not size-derived. When the model cannot run on the tiled feed (a length past an
embedding table, a fixed internal reshape), every candidate is kept: the graph's answer stands.
"""

from __future__ import annotations

import logging

import numpy as np
import onnx

from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.latency_check import latency_feed
from workbench.core.runtime.session import add_outputs, make_session

log = logging.getLogger(__name__)


def dynamic_axes(vi: onnx.ValueInfoProto) -> list[int]:
    """Axes of graph input ``vi`` whose size is symbolic or unknown (none when its rank is unknown: such an
    input is fed as it is)."""
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return []
    return [i for i, d in enumerate(tt.shape.dim) if not d.HasField("dim_value")]


def tiled(x: np.ndarray, axes: list[int]) -> np.ndarray:
    """``x`` repeated twice along each of ``axes`` (shape ``[2, 3, 640, 640]`` from ``[1, 3, 320, 320]``
    with axes 0, 2, 3)."""
    for a in axes:
        if a < x.ndim:
            x = np.concatenate([x, x], axis=a)
    return x


def changing_with_size(model: PreparedModel, data, tensors: list[str], memo: dict | None = None) -> list[str]:
    """The tensors of ``tensors`` whose value differs between the first sample of ``data`` and that sample
    tiled twice along the inputs' dynamic axes (all of ``tensors`` when no input has a dynamic axis or the
    model cannot run on either feed). ``data``: as :func:`~workbench.core.pipeline.latency_check.latency_feed`
    takes it (None: one random sample). Order kept.

    ``memo``: answers of earlier calls on ``model`` (:attr:`~workbench.core.planning.plan.GraphFacts.size_probes`),
    by the ``data`` object and ``tensors``; a call with the same ones returns the kept answer without running
    the model (nudenet_320n's recipe choice probed twice, for its ``preset`` and ``mse`` variants: 0.3-0.35 s
    of CPU each). ``data=None`` (a random sample) is not kept."""
    if not tensors:
        return []
    key = (id(data), tuple(tensors))
    kept = memo.get(key) if memo is not None and data is not None else None
    if kept is not None and kept[0] is data:  # the same object (held in the memo, so its id is not reused)
        return list(kept[1])
    found = _probe(model, data, tensors)
    if memo is not None and data is not None:
        memo[key] = (data, tuple(found))
    return found


def _probe(model: PreparedModel, data, tensors: list[str]) -> list[str]:
    """:func:`changing_with_size` itself, run on the float model."""
    inputs = {vi.name: dynamic_axes(vi) for vi in model.proto.graph.input}
    try:
        feed = latency_feed(model, data)
        big = {k: tiled(np.asarray(v), inputs.get(k, [])) for k, v in feed.items()}
        if all(big[k].shape == np.shape(feed[k]) for k in feed):
            return list(tensors)
        session = make_session(add_outputs(model.proto, tensors), threads=1)
        small_out = session.run(tensors, feed)
        big_out = session.run(tensors, big)
    except Exception as exc:  # noqa: BLE001 - any failure keeps the graph's answer
        log.debug("Size probe not run (%s): every size-derived candidate kept.", str(exc).strip()[:200])
        return list(tensors)
    return [t for t, a, b in zip(tensors, small_out, big_out, strict=True)
            if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True)]
