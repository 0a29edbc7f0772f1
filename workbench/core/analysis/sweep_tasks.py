"""The sensitivity sweep's fanned-out work: self-contained tasks and the module-level functions
that run them on an executor (:mod:`workbench.core.analysis.executors`).

Three kinds, each run once per batch or per unit variant:

* :class:`FragmentTask` -- batches through the float model, then every unit's QDQ fragment on the
  float tensors it reads; returns the in-graph error sums (float32 scalars, as Python floats);
* :class:`CacheTask` -- one batch through the float or the QDQ model, keeping the activations the
  suffix models read (written to ``.npy`` files when ``spill`` names a folder, see
  :mod:`workbench.core.analysis.spill`);
* :class:`SuffixTask` -- one variant of one unit over every batch; returns its end-to-end SQNR.

Every function returns exactly what the same computation gives in the caller's process: the
caller adds the per-batch figures in batch order, as a single process would.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from workbench.core.analysis.spill import ArrayFile, resolve, save_array
from workbench.core.formats.error_sums import sqnr_sums
from workbench.core.runtime.session import QDQ_AS_WRITTEN, add_outputs, make_session


class Sqnr:
    """Running SQNR: float64 sums of ref^2 and (ref - q)^2 over the pairs where both are finite
    (:func:`~workbench.core.formats.error_sums.sqnr_sums`: the same ``sig``, ``err`` and ``n`` as
    ``error_sums``, without its dot product, q^2 and max: ppocrv4_rec's sweep compares 27 suffix models'
    outputs over 2 batches of 1.06M values, 3.0 ms a batch instead of 4.7, 0.17 s of CPU instead of 0.26)."""

    def __init__(self) -> None:
        self.sig = self.err = 0.0
        self.n = 0

    def update(self, ref, q) -> None:
        sums = sqnr_sums(np.asarray(ref), np.asarray(q))
        if sums is None:
            return
        self.sig += sums[0]
        self.err += sums[1]
        self.n += sums[5]

    def figures(self) -> tuple[float]:
        """``(SQNR dB,)``: 10 log10(sig / err); +inf without error, -inf without signal."""
        if self.err == 0.0:
            return (math.inf,)
        return (-math.inf if self.sig == 0.0 else 10.0 * math.log10(self.sig / self.err),)


def energy(a) -> float:
    """sum(a^2) as float32 dot product (the signal of an output a suffix does not change)."""
    r = np.asarray(a, dtype=np.float32).ravel()
    return float(np.dot(r, r))


class SharedSessions:
    """onnxruntime sessions shared by the tasks of one round that run on threads of this process
    (an executor with ``shares_memory``): the session of a key is built once, by the first task
    that asks for it, and the other tasks wait for it instead of building their own (onnxruntime's
    ``InferenceSession.run`` may be called from several threads at once). The sessions are the
    same as the tasks would build (same model, same options), so the values are too. A copy sent
    to another process starts empty (its tasks build their own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[str, tuple[threading.Lock, list]] = {}

    def get(self, key: str, build: Callable[[], Any]) -> Any:
        """The session of ``key``, built with ``build()`` when no task built it yet."""
        with self._lock:
            lock, got = self._slots.setdefault(key, (threading.Lock(), []))
        with lock:
            if not got:
                got.append(build())
            return got[0]

    def __reduce__(self):
        return SharedSessions, ()


#: initializers of at least this many bytes reach a task's session as buffers (:func:`task_session`)
TASK_BUFFER_BYTES = 4096


def task_session(proto: onnx.ModelProto, optimize: bool, config: dict[str, str] | None = None):
    """The session a task runs ``proto`` in: one intra-op thread (the executor's workers are what
    use the cores), graph optimisations as ``optimize`` says (session ``config`` entries, e.g.
    :data:`~workbench.core.runtime.session.QDQ_AS_WRITTEN`), and no memory arena
    (:func:`~workbench.core.runtime.session.make_session` ``arena=False``): each session of the sweep
    runs one to a few batches, so an arena grown for it (fresh pages from the system, given back
    when the session ends) was touched once and dropped; buffers from the heap are reused from one
    session to the next. ppocrv4_rec, 8 samples, 2 threads, three alternations at load 9-10: 389-398k
    page faults and 0.60-0.66 s of system CPU for the sweep instead of 470-489k and 0.76-0.81 s (user
    CPU the same, 6.8-7.0 s). Allocation only: the kernels, and so the values, are the same.

    Initializers of :data:`TASK_BUFFER_BYTES` or more reach onnxruntime as buffers used in place
    (``buffer_bytes``), not serialised into the model's bytes and parsed back: a suffix model of
    ppocrv4_rec's earliest units carries 10.7 MB of float weights in 344 initializers, each under the
    1 MiB of other sessions. The same bytes, so the same values."""
    return make_session(proto, optimize=optimize, threads=1, arena=False, buffer_bytes=TASK_BUFFER_BYTES,
                        config=config)


def qdq_kept_session(proto: onnx.ModelProto):
    """:func:`task_session` of a float model with Q -> DQ fragments in it (the fragments model, an
    "only quantized" suffix): onnxruntime's optimisations for the float nodes (fusions, NCHWc
    layout: what the float model's own session runs), every Q / DQ run as written
    (:data:`~workbench.core.runtime.session.QDQ_AS_WRITTEN`; weights' DequantizeLinear folded into
    float32 constants by onnxruntime's own kernel, the same values). ppocrv4_rec, 8 samples: the 16
    "only quantized" suffixes 3.0 -> 2.2 s of thread CPU to run (0.3 s more to build), figures
    within 0.0002 dB of the graph run as written; the fragments pass 0.1 s less, local figures
    within 3e-6 dB."""
    return task_session(proto, optimize=True, config=QDQ_AS_WRITTEN)


def _session(shared: SharedSessions | None, key: str, build: Callable[[], Any]) -> Any:
    return build() if shared is None else shared.get(key, build)


@dataclass
class FragmentTask:
    """Some batches through the fragments model (:func:`workbench.core.analysis.sweep_graph.with_fragments`);
    the float tensors the fragments read come from ``float_model`` (onnxruntime's default optimisations, as
    the float activation cache), batch by batch. ``sessions``: the round's shared sessions (tasks on
    threads); ``index``: the task's number in its round (an odd one builds the float session first,
    an even one the fragments', so two threads build the two side by side). ``float_outputs``: the
    tensors the float session outputs (:func:`float_session`; at least the fragments' float inputs);
    ``keep``: tensors of them to return per batch (the float activation cache, taken from this run): the
    first batch's, and more as long as the task's kept arrays stay within ``keep_bytes``."""

    model: onnx.ModelProto  # pickles as its serialized bytes
    feeds: list[dict[str, np.ndarray]]
    float_model: onnx.ModelProto
    sessions: SharedSessions | None = None
    index: int = 0
    float_outputs: list[str] | None = None
    keep: list[str] | None = None
    keep_bytes: int = 0


def float_session(float_model: onnx.ModelProto, outputs: list[str]):
    """The float model's session of the sweep, with ``outputs`` (tensors of it, graph inputs left out)
    as extra outputs: optimised as the float model runs, one thread. The fragments pass and the float
    activation cache read the same tensors from a session with the same outputs (which fusions
    onnxruntime makes depends on them, and so a tensor's last bits), so both see the same values."""
    return task_session(add_outputs(float_model, outputs), optimize=True)


def run_fragments(task: FragmentTask) -> list[tuple[list[tuple[str, float]], dict[str, np.ndarray] | None]]:
    """Per batch: ``([(output name, value), ...] of the fragments model in session order, {tensor:
    value} of ``task.keep``)``; None for every batch instead of the values once a second batch would
    take them over ``task.keep_bytes`` (the caller then runs the float model again for them)."""
    reads = [i.name for i in task.model.graph.input]  # the session's inputs (the model has no initializer among them)
    graph_inputs = {i.name for i in task.float_model.graph.input}
    fetch = [x for x in reads if x not in graph_inputs]
    keep = list(task.keep or ())
    outputs = task.float_outputs if task.float_outputs is not None else fetch
    run = list(dict.fromkeys(fetch + [x for x in keep if x not in graph_inputs]))
    build = {"fragments": lambda: qdq_kept_session(task.model),
             "float": lambda: float_session(task.float_model, outputs) if run else None}
    built = {key: _session(task.sessions, key, build[key])
             for key in (("float", "fragments") if task.index % 2 else ("fragments", "float"))}
    sess, source = built["fragments"], built["float"]
    names = [o.name for o in sess.get_outputs()]
    out, kept, held = [], [], 0
    for feed in task.feeds:
        values = dict(feed)
        if source is not None:
            values.update(zip(run, source.run(run, feed), strict=True))
        got = sess.run(names, {x: values[x] for x in reads})
        out.append([(name, float(v)) for name, v in zip(names, got, strict=True)])
        if keep and kept is not None:
            kept.append({x: values[x] for x in keep})
            held += sum(np.asarray(v).nbytes for v in kept[-1].values())
            if held > task.keep_bytes and len(kept) > 1:
                kept = None  # over the budget: nothing kept (a first batch is held while it runs anyway)
    return [(sums, kept[b] if kept else None) for b, sums in enumerate(out)]


@dataclass
class CacheTask:
    """Batches through ``model`` keeping the tensors ``names`` (graph inputs are taken from the
    feed); with ``spill`` (a folder every worker can read) the arrays are written there as
    ``<tag>-<batch>-<i>.npy`` (``<batch>`` counted from ``first``, the number of the task's first
    batch among the caller's) and returned as :class:`~workbench.core.analysis.spill.ArrayFile`."""

    model: onnx.ModelProto
    optimize: bool
    feeds: list[dict[str, np.ndarray]]
    names: list[str]
    spill: str | None = None
    tag: str = "cache"
    first: int = 0
    sessions: SharedSessions | None = None  # the round's shared sessions (tasks on threads), by ``tag``
    warm: CacheTask | None = None  # with ``sessions``: a task of the other model, whose session this one builds first
    outputs: list[str] | None = None  # the float model's: its session's outputs (:func:`float_session`), a superset of names


def _cache_session(task: CacheTask) -> tuple[Any, list[str]]:
    """``(session, names)``: the session of ``task``'s model with the tensors ``names`` it fetches as
    outputs (``task.names`` less the graph inputs; no session when nothing is left)."""
    inputs = {i.name for i in task.model.graph.input}
    wanted = [x for x in task.names if x not in inputs]
    if task.outputs is not None:
        build = lambda: float_session(task.model, task.outputs)  # noqa: E731
    else:
        build = lambda: task_session(add_outputs(task.model, wanted), optimize=task.optimize)  # noqa: E731
    sess = _session(task.sessions, task.tag, build) if wanted else None
    return sess, wanted


def run_cache(task: CacheTask) -> list[dict[str, np.ndarray | ArrayFile]]:
    """Per batch: tensor name -> value (or its file). With ``warm`` (tasks on threads sharing their
    sessions), the other model's session is built first, while another task builds this model's: the
    two builds run side by side instead of one worker waiting for each (ppocrv4_rec: 0.04-0.05 s for
    the QDQ session, 0.06-0.07 s for the float one)."""
    if task.warm is not None and task.sessions is not None:
        _cache_session(task.warm)
    sess, wanted = _cache_session(task)
    out = []
    for b, feed in enumerate(task.feeds, start=task.first):
        values = dict(zip(wanted, sess.run(wanted, feed), strict=True)) if sess is not None else {}
        values.update({k: v for k, v in feed.items() if k in task.names})
        if task.spill is not None:
            values = {k: save_array(task.spill, f"{task.tag}-{b}-{i}", v) for i, (k, v) in enumerate(values.items())}
        out.append(values)
    return out


@dataclass
class SuffixTask:
    """One variant of one unit, self-contained for an executor."""

    node: str
    kind: str  # "quant" (only this unit quantized) or "float" (only this unit float)
    model: onnx.ModelProto  # pickles as its serialized bytes
    feeds: list[dict[str, np.ndarray | ArrayFile]]
    outputs: list[str]  # suffix output per float model output ("" where the suffix does not compute it)
    refs: list[list[np.ndarray | ArrayFile]]  # per batch: the float model's outputs
    unchanged: list[float]  # signal energy of outputs the suffix does not compute (error 0 there)


def run_suffix(task: SuffixTask) -> tuple[str, str, float]:
    """Run a suffix model; ``(node, kind, end-to-end SQNR dB)``. An "only quantized" suffix (the
    float model's nodes with one unit's fragment) runs optimised with its Q / DQ as written
    (:func:`qdq_kept_session`), an "only float" one (the QDQ model's nodes) as written, as the QDQ
    activations it reads were computed."""
    sess = qdq_kept_session(task.model) if task.kind == "quant" else task_session(task.model, optimize=False)
    names = [o.name for o in sess.get_outputs()]
    e2e = Sqnr()
    for feed, refs in zip(task.feeds, task.refs, strict=True):
        got = dict(zip(names, sess.run(names, {k: resolve(v) for k, v in feed.items()}), strict=True))
        for name, ref in zip(task.outputs, refs, strict=True):
            if name in got:
                e2e.update(resolve(ref), got[name])
    e2e.sig += sum(task.unchanged)
    return task.node, task.kind, e2e.figures()[0]
