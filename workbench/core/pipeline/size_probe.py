"""Which size-derived tensors really change with the input's size: the float model run at two sizes.

:func:`workbench.core.planning.shape_guard.size_derived_tensors` answers from the graph alone, and takes a
dimension that ONNX shape inference leaves unknown as dynamic. Many such tensors are the same at every
size: digits_transformer's attention scale ``Sqrt(head_dim)`` reads the last dimension of a ``Reshape``
whose target holds -1, which shape inference does not resolve under a symbolic batch, although it is the
model width over the head count whatever the batch. So the candidates are computed on two feeds: the
first calibration sample as given, and the same sample at another size along every dynamic axis of every
input: halved where the axis holds 2 or more (its first half), tiled twice where it holds 1 (nudenet_320n's
[1, 3, 320, 320] -> [2, 3, 160, 160], half a sample's work; tiled everywhere it was [2, 3, 640, 640], eight
samples' work, 0.29-0.30 s of CPU a job). A candidate whose value (shape and elements) is the same on both
is not size-derived. Only the nodes the candidates depend on run (:func:`~workbench.core.graph.cone.cone_model`):
minilm_l6_v2's one candidate needs 5 of its 368 nodes and 0.8 of its 90 MB of weights (the whole model's
session cost 0.25-0.27 s of CPU and 70k page faults a job, the cone's 0.02-0.04 s and 1k). When those nodes
cannot run on the halved feed (a stride that no longer divides the size), the tiled one is tried; when they
cannot run on that either (a length past an embedding table, a fixed internal reshape), every candidate is
kept: the graph's answer stands.
"""

from __future__ import annotations

import logging

import numpy as np
import onnx

from workbench.core.graph.cone import cone_model
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.latency_check import latency_feed
from workbench.core.runtime.session import make_session

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


def halved(x: np.ndarray, axes: list[int]) -> np.ndarray:
    """``x`` cut to the first half of each of ``axes`` that holds 2 or more (``n // 2``), and repeated twice
    along those that hold 1 (shape ``[2, 3, 160, 160]`` from ``[1, 3, 320, 320]`` with axes 0, 2, 3)."""
    for a in axes:
        if a >= x.ndim:
            continue
        n = x.shape[a]
        x = np.concatenate([x, x], axis=a) if n == 1 else np.take(x, np.arange(n // 2), axis=a)
    return x


def changing_with_size(model: PreparedModel, data, tensors: list[str], memo: dict | None = None) -> list[str]:
    """The tensors of ``tensors`` whose value differs between the first sample of ``data`` and that sample
    at another size along the inputs' dynamic axes (:func:`halved`, else :func:`tiled`; all of ``tensors``
    when no input has a dynamic axis or the model cannot run on either feed). ``data``: as :func:`~workbench.core.pipeline.latency_check.latency_feed`
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
    """:func:`changing_with_size` itself, run on the float model's nodes that ``tensors`` depend on."""
    inputs = {vi.name: dynamic_axes(vi) for vi in model.proto.graph.input}
    try:
        feed = latency_feed(model, data)
        if not any(a < np.ndim(v) for k, v in feed.items() for a in inputs.get(k, [])):
            return list(tensors)  # no input has a dynamic axis
        cone = cone_model(model.proto, tensors)
        feed = {vi.name: feed[vi.name] for vi in cone.graph.input if vi.name in feed}
        session = make_session(cone, threads=1)
        given = session.run(tensors, feed)
    except Exception as exc:  # noqa: BLE001 - any failure keeps the graph's answer
        log.debug("Size probe not run (%s): every size-derived candidate kept.", str(exc).strip()[:200])
        return list(tensors)
    other = _run_resized(session, tensors, feed, inputs)
    if other is None:
        return list(tensors)
    return [t for t, a, b in zip(tensors, given, other, strict=True)
            if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True)]


def _run_resized(session, tensors: list[str], feed: dict, inputs: dict[str, list[int]]) -> list | None:
    """The candidates on the feed halved along its dynamic axes, else tiled along them; None when the model
    runs on neither."""
    for resize in (halved, tiled):
        other = {k: resize(np.asarray(v), inputs.get(k, [])) for k, v in feed.items()}
        try:
            return session.run(tensors, other)
        except Exception as exc:  # noqa: BLE001 - the next size, then the graph's answer
            log.debug("Size probe at a %s size failed (%s).", resize.__name__, str(exc).strip()[:200])
    return None
