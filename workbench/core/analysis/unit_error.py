"""Per-node-unit error of a quantized model against its float original.

For every node unit, the unit's output tensor in the float model is compared with the same
tensor after its QuantizeLinear -> DequantizeLinear pair in the quantized model (matched through
the writer's ``tensor_map``, i.e. by graph structure, never by name suffix). Both models run in
onnxruntime over the same samples; the quantized one with graph optimizations disabled so the
fake-quantized values are exactly those of the QDQ graph. Statistics stream: memory does not grow
with the number of samples.

For a Concat unit the figures are those of its worst input segment (the slice of the output that
came from one input), so a small-range input erased by a shared grid shows up even when a
large-range input dominates the output's energy.

Figures (per unit, over all elements of all samples):
    SQNR  = 10 log10( sum(ref^2) / sum((ref - q)^2) )   [dB]
    MSE   = mean((ref - q)^2)
    cosine = sum(ref*q) / sqrt(sum(ref^2) * sum(q^2))
    max_abs = max |ref - q|
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import partial

import numpy as np
import onnx

from workbench.core.analysis.noise_trace import PROBE
from workbench.core.analysis.own_noise import OwnFragments, own_fragments
from workbench.core.formats.error_sums import error_sums, sqnr_sums
from workbench.core.progress import CancelToken, ProgressFn, no_progress
from workbench.core.runtime.session import add_outputs, make_session


@dataclass
class UnitError:
    """Error of one node unit's output (see module docstring for the formulas)."""

    node: str
    op_type: str
    tensor: str
    sqnr_db: float
    mse: float
    cosine: float
    max_abs: float

    def to_json(self) -> dict:
        """JSON-safe dict; non-finite figures become None."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, d: dict) -> UnitError:
        """Inverse of :meth:`to_json`: None becomes NaN, except an SQNR of None with MSE 0, which is +inf."""

        def num(v) -> float:
            return math.nan if v is None else float(v)

        mse = num(d.get("mse"))
        sqnr = d.get("sqnr_db")
        sqnr = (math.inf if mse == 0.0 else math.nan) if sqnr is None else float(sqnr)
        return cls(d["node"], d.get("op_type", ""), d.get("tensor", ""), sqnr, mse,
                   num(d.get("cosine")), num(d.get("max_abs")))


class _Acc:
    __slots__ = ("sig", "err", "dot", "q2", "maxabs", "n")

    def __init__(self) -> None:
        self.sig = self.err = self.dot = self.q2 = self.maxabs = 0.0
        self.n = 0

    def update(self, ref: np.ndarray, q: np.ndarray) -> None:
        """Add the pairs of ``ref`` and ``q`` where both are finite (NaN / Inf in either model, from non-finite
        data, are left out, as evaluate does); arrays of different shapes add nothing."""
        self.add(error_sums(ref, q))

    def add(self, sums: tuple | None) -> None:
        """Add the sums of :func:`~workbench.core.formats.error_sums.error_sums` (None or no pairs: nothing)."""
        if sums is None or sums[5] == 0:
            return
        self.sig += sums[0]
        self.err += sums[1]
        self.dot += sums[2]
        self.q2 += sums[3]
        self.maxabs = max(self.maxabs, sums[4])
        self.n += sums[5]

    def sums(self) -> tuple[float, float, float, float, float, int]:
        return self.sig, self.err, self.dot, self.q2, self.maxabs, self.n

    @classmethod
    def of(cls, sums: tuple) -> _Acc:
        acc = cls()
        acc.sig, acc.err, acc.dot, acc.q2, acc.maxabs, acc.n = sums
        return acc

    def figures(self) -> tuple[float, float, float, float]:
        if self.err == 0.0:
            sqnr = math.inf
        elif self.sig == 0.0:
            sqnr = -math.inf
        else:
            sqnr = 10.0 * math.log10(self.sig / self.err)
        mse = self.err / self.n if self.n else math.nan
        denom = math.sqrt(self.sig * self.q2)
        cos = self.dot / denom if denom > 0 else (1.0 if self.err == 0 else 0.0)
        return sqnr, mse, cos, self.maxabs


def unit_outputs(plan, tensor_map: dict[str, str]) -> dict[str, tuple[str, str, str]]:
    """Float tensor -> (unit node, op type, quantized tensor) for every unit output we can compare."""
    pairs: dict[str, tuple[str, str, str]] = {}
    for name, unit in plan.units.items():
        if unit.excluded:
            continue
        for t in unit.results:
            if t in tensor_map and t not in pairs:
                pairs[t] = (name, unit.op_type, tensor_map[t])
    return pairs


def concat_segments(proto: onnx.ModelProto, node_name: str) -> tuple[int, list[tuple[str, int]]] | None:
    """``(axis, [(input tensor, size along axis), ...])`` of a Concat node when every size is static."""
    node = next((n for n in proto.graph.node if n.name == node_name), None)
    if node is None or node.op_type != "Concat":
        return None
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    dims = {vi.name: vi.type.tensor_type.shape.dim for vi in
            list(proto.graph.value_info) + list(proto.graph.input) + list(proto.graph.output)}
    sizes = []
    for t in node.input:
        d = dims.get(t)
        if d is None or len(d) == 0:
            return None
        dim = d[axis % len(d)]
        if not dim.HasField("dim_value"):
            return None
        sizes.append((t, dim.dim_value))
    return axis, sizes


def _segments(ref: np.ndarray, q: np.ndarray, seg) -> list[tuple[str, np.ndarray, np.ndarray]]:
    axis, sizes = seg
    axis = axis % ref.ndim
    if ref.shape[axis] != sum(n for _, n in sizes):
        return []
    out, start = [], 0
    for t, n in sizes:
        idx = [slice(None)] * ref.ndim
        idx[axis] = slice(start, start + n)
        out.append((t, ref[tuple(idx)], q[tuple(idx)]))
        start += n
    return out


def analyze_units(float_proto: onnx.ModelProto, quant_proto: onnx.ModelProto, plan, tensor_map: dict[str, str],
                  batches, *, progress: ProgressFn | None = None, cancel: CancelToken | None = None,
                  total: int = 0) -> list[UnitError]:
    """Per-unit error, worst (lowest SQNR) first.

    Parameters
    ----------
    batches : iterable of dict[str, numpy.ndarray]
        Feeds for the float model (the quantized model has the same inputs).
    total : int
        Number of batches, for progress only.
    """
    pairs = unit_outputs(plan, tensor_map)
    if not pairs:
        return []
    segs = unit_segments(float_proto, pairs)
    sums = accumulate(float_proto, quant_proto, pairs, segs, batches, progress=progress, cancel=cancel, total=total)
    return unit_rows(pairs, segs, sums)


def unit_segments(float_proto: onnx.ModelProto, pairs: dict) -> dict:
    """Concat outputs among ``pairs`` -> their input segments (a Concat is scored by its worst one)."""
    segs = {t: concat_segments(float_proto, pairs[t][0]) for t in pairs if pairs[t][1] == "Concat"}
    return {t: s for t, s in segs.items() if s}


def accumulate(float_proto: onnx.ModelProto, quant_proto: onnx.ModelProto, pairs: dict, segs: dict, batches, *,
               own: dict[str, tuple[str, ...]] | None = None, progress: ProgressFn | None = None,
               cancel: CancelToken | None = None, total: int = 0) -> dict:
    """The error sums of every unit output (and Concat segment) over ``batches``: ``{key: (sig, err,
    dot, q2, maxabs, n)}``, keys a tensor name or ``(tensor, segment)``. Sums of disjoint batches add
    (:func:`add_sums`), so analysis shards merge without keeping any activation.

    ``own`` (unit -> its node names, :func:`~workbench.core.analysis.own_noise.unit_nodes`): those units'
    own noise is measured too, each unit's QDQ fragment run on the float run's tensors
    (:mod:`~workbench.core.analysis.own_noise`: the float run also outputs the tensors the fragments read,
    and the fragments model runs after the quantized one, whose outputs are dropped first; its session's
    memory arena comes on top: ppocrv4_rec's pass peaked at 0.66 GB RSS, 0.52 without), under the keys
    :func:`own_key` of the same tensors and segments.

    ``progress`` counts :func:`analysis_steps` steps (``total`` batches): the sessions built, then in each
    batch each run of the float and of the quantized model and the units' errors added in groups, then the
    fragments' run and their errors (:class:`_Steps`), so it moves every few tenths of a second on minilm_l6_v2
    (a batch of 8 rows took 1-8 s, one report)."""
    progress = progress or no_progress
    f_names = list(pairs)
    frags = own_fragments(float_proto, quant_proto, pairs, own) if own else None
    mine = _Own(frags, segs, {i.name for i in float_proto.graph.input}, set(f_names)) if frags else None
    steps = _Steps(progress, total, len(f_names), len(mine.tensors) if mine else 0)
    steps.start("Measuring per-node error (building the float and quantized sessions)")
    q_names = [pairs[t][2] for t in f_names]
    taps = f_names + (mine.taps if mine else [])
    f_sess = make_session(add_outputs(float_proto, taps))
    q_sess = make_session(add_outputs(quant_proto, q_names), optimize=False)
    steps.sessions_built()
    accs = {t: _Acc() for t in f_names}
    seg_accs = {(t, i): _Acc() for t, s in segs.items() for i, _ in s[1]}
    budget = _RowBudget(splittable=_dynamic_batch(f_sess) and _dynamic_batch(q_sess))
    for feed in batches:
        if cancel is not None:
            cancel.check()
        first = None
        if budget.per_row is None:  # one row run alone to size the runs
            probe = budget.first_row(feed)
            first = (f_sess.run(taps, probe), q_sess.run(q_names, probe))
            budget.measured(*first, probe)
        parts = list(budget.runs(feed))  # views of the feed's rows
        if first is not None and _leading_rows(parts[0]) != _leading_rows(probe):
            first = None  # the first run takes more rows than the probe: its outputs are not kept
        for p, part in enumerate(parts):
            f_out = first[0] if first is not None else f_sess.run(taps, part)
            steps.ran(p, len(parts), 1)
            q_out = first[1] if first is not None else q_sess.run(q_names, part)
            steps.ran(p, len(parts), 2)
            first = None  # the probe's rows are the first run's (runs of one row, or a batch that runs whole)
            for k, (t, r, q) in enumerate(zip(f_names, f_out, q_out, strict=False)):
                _add_run(accs[t], seg_accs, t, r, q, segs.get(t))
                steps.units_added(p, len(parts), k + 1)
            del q_out
            if mine is not None:
                mine.run(dict(zip(taps, f_out, strict=True)) | part, partial(steps.own_added, p, len(parts)))
            del f_out
        steps.batch_done()
    out = {k: a.sums() for k, a in {**accs, **seg_accs}.items()}
    return out | (mine.sums() if mine is not None else {})


def own_key(tensor: str, segment: str | None = None) -> tuple:
    """The key of :func:`accumulate`'s sums of ``tensor``'s own noise (of its Concat ``segment``): a tuple
    starting with ``""`` (no tensor is named ``""``, so it is neither a tensor's key nor a segment's)."""
    return ("", tensor) if segment is None else ("", tensor, segment)


class _Own:
    """The own-noise side of :func:`accumulate`: the fragments model (:class:`OwnFragments`), its session
    (built on the first run, its inputs typed as the float run's arrays) and the sums of each tensor it
    measures (and of its Concat segments, ``segs``). ``taps``: what the float run must also output."""

    def __init__(self, frags: OwnFragments, segs: dict, graph_inputs: set[str], tapped: set[str]) -> None:
        self.frags, self.segs = frags, segs
        self.tensors = list(frags.outputs)
        self.names = [frags.outputs[t] for t in self.tensors]
        self.taps = [x for x in frags.inputs if x not in graph_inputs and x not in tapped]
        self.sess = None
        self.accs = {t: _Acc() for t in self.tensors}
        self.seg_accs = {(t, i): _Acc() for t in self.tensors if t in segs for i, _ in segs[t][1]}

    def run(self, values: dict, added) -> None:
        """One run of the fragments on the float run's ``values`` (tensor -> array, the feed's included);
        ``added(k)`` after the sums of the ``k``-th tensor are added."""
        if self.sess is None:
            self.sess = self.frags.session(values)
            if self.sess is None:  # refused (logged): the figures are derived instead
                self.tensors, self.names, self.accs, self.seg_accs = [], [], {}, {}
                return
        out = self.sess.run(self.names, {x: values[x] for x in self.frags.inputs})
        added(0)
        for k, (t, q) in enumerate(zip(self.tensors, out, strict=True)):
            _add_run(self.accs[t], self.seg_accs, t, values[t], q, self.segs.get(t), sqnr_sums)
            added(k + 1)

    def sums(self) -> dict:
        out = {own_key(t): a.sums() for t, a in self.accs.items()}
        return out | {own_key(t, i): a.sums() for (t, i), a in self.seg_accs.items()}


def _add_run(acc: _Acc, seg_accs: dict, t: str, r, q, seg, summed=None) -> None:
    """Add one run's output ``t`` (float ``r``, quantized ``q``) to its sums, and to those of its Concat segments
    (``seg``: :func:`concat_segments`, or None). When the segments cover the output, its sums are theirs added
    (each value read once, not twice: nudenet_320n has 19 such Concats); only the order of the float64
    additions differs from summing the output whole, and a Concat's row shows its worst segment anyway.
    ``summed``: :func:`~workbench.core.formats.error_sums.error_sums`, or ``sqnr_sums`` where only the SQNR
    is wanted (the own noise)."""
    summed = summed or error_sums
    parts = _segments(np.asarray(r), np.asarray(q), seg) if seg else []
    whole = bool(parts) and np.shape(r) == np.shape(q)
    if not whole:
        acc.add(summed(r, q))
    for i, rs, qs in parts:
        sums = summed(rs, qs)
        seg_accs[(t, i)].add(sums)
        if whole:
            acc.add(sums)


#: the units' errors of a run are reported in at most this many groups (each unit alone would send hundreds of
#: reports a second through the job's queue)
UNIT_GROUPS = 8


def batch_steps(units: int, own: int = 0) -> int:
    """The progress steps :func:`accumulate` counts for one batch measuring ``units`` tensors, ``own`` of them
    also on float inputs: the float run, the quantized run and the units' errors, then (``own`` > 0) the
    fragments' run and their errors (a batch split into several runs shares them)."""
    return units + 2 + (own + 1 if own else 0)


def analysis_steps(batches: int, units: int, own: int = 0) -> int:
    """The progress total of :func:`accumulate` over ``batches`` batches measuring ``units`` tensors (``own`` of
    them on float inputs too): one step for the sessions, then :func:`batch_steps` per batch (0 when
    ``batches`` is unknown, 0)."""
    return 1 + batches * batch_steps(units, own) if batches else 0


class _Steps:
    """:func:`accumulate`'s progress: :func:`analysis_steps` of ``total`` batches (``total`` 0: unknown). A batch
    split into ``n`` runs gives run ``p`` the steps ``[p/n, (p+1)/n)`` of its batch; within a run a report goes
    out after each model's run and after every ``units / UNIT_GROUPS`` units of each pass of sums (the quantized
    run's, then the fragments')."""

    MESSAGE = "Measuring per-node error"

    def __init__(self, progress: ProgressFn, total: int, units: int, own: int = 0) -> None:
        self.progress, self.width = progress, batch_steps(units, own)
        self.total = analysis_steps(total, units, own)
        self.units, self.own = units, own
        self.every = max(1, -(-units // UNIT_GROUPS))
        self.own_every = max(1, -(-own // UNIT_GROUPS))
        self.batches = self.sent = 0

    def start(self, message: str) -> None:
        self.progress(0, self.total, message)

    def sessions_built(self) -> None:
        self._send(1)

    def ran(self, part: int, parts: int, step: int) -> None:
        """Step ``step`` (1: the float run, 2: the quantized run) of run ``part`` of ``parts`` of the current
        batch is done."""
        self._send(1 + self.batches * self.width + (part * self.width + step) // parts)

    def units_added(self, part: int, parts: int, k: int) -> None:
        """The errors of ``k`` units of the quantized run are added (reported every ``every`` units and at
        the last)."""
        if k % self.every == 0 or k == self.units:
            self.ran(part, parts, 2 + k)

    def own_added(self, part: int, parts: int, k: int) -> None:
        """The fragments' run is done (``k`` 0), or the own errors of ``k`` units are added."""
        if k == 0 or k % self.own_every == 0 or k == self.own:
            self.ran(part, parts, self.units + 3 + k)

    def batch_done(self) -> None:
        self.batches += 1
        self._send(1 + self.batches * self.width)

    def _send(self, done: int) -> None:
        if done > self.sent:  # a step of a batch split into more runs than steps may not move the count
            self.sent = done
            self.progress(done, self.total, self.MESSAGE)


#: Bytes of tapped activations (both models) one onnxruntime run may return. Every unit output of a
#: batch comes back at once: 16 rows of a 264-unit text recognizer are 2.5 GB per model. The rows
#: per run follow from the first run's size, so memory stays flat in the batch size and row count.
#: 128 MiB: ppocrv4_rec's per-unit pass peaked at 0.49 GB RSS (256 MiB: 0.72 GB, above its quantize's 0.49).
TAP_BUDGET = 128 * 2**20


def _leading_rows(feed: dict) -> int | None:
    """The common leading dimension of the feeds (the rows of a batch), or None when they differ."""
    dims = {np.shape(v)[0] if np.ndim(v) else None for v in feed.values()}
    return dims.pop() if len(dims) == 1 else None


def _dynamic_batch(sess) -> bool:
    """True when every input of ``sess`` has a leading dimension that is not a fixed number (its feeds
    may be split along their rows); a model made for batch 2 takes exactly 2 rows per run."""
    return all(not inp.shape or not isinstance(inp.shape[0], int) for inp in sess.get_inputs())


class _RowBudget:
    """Splits feeds along their rows into runs whose tapped outputs fit :data:`TAP_BUDGET`. The bytes
    per row are measured once, on a first row run alone; the runs of a batch then do not depend on
    where the batch starts, so row-range shards split like one pass (onnxruntime's float32 results
    can differ in the last bits between batch sizes). ``splittable=False`` (an input's batch dimension
    is fixed): every feed runs whole."""

    def __init__(self, splittable: bool = True) -> None:
        self.per_row: int | None = None
        self.splittable = splittable

    def first_row(self, feed: dict) -> dict:
        n = _leading_rows(feed) if self.splittable else None
        return {k: v[:1] for k, v in feed.items()} if n and n > 1 else feed

    def runs(self, feed: dict):
        n = _leading_rows(feed) if self.splittable else None
        if not n or n <= 1:
            yield feed
            return
        step = max(1, TAP_BUDGET // max(self.per_row or 1, 1))
        for start in range(0, n, step):
            yield {k: v[start:start + step] for k, v in feed.items()}

    def measured(self, f_out: list, q_out: list, feed: dict) -> None:
        rows = _leading_rows(feed) or 1
        total = sum(np.asarray(a).nbytes for a in f_out) + sum(np.asarray(a).nbytes for a in q_out)
        self.per_row = max(1, total // rows)


def add_sums(parts: list[dict]) -> dict:
    """The error sums of several shards added (max abs error: the largest)."""
    out: dict = {}
    for part in parts:
        for k, (sig, err, dot, q2, mx, n) in part.items():
            a = out.get(k, (0.0, 0.0, 0.0, 0.0, 0.0, 0))
            out[k] = (a[0] + sig, a[1] + err, a[2] + dot, a[3] + q2, max(a[4], mx), a[5] + n)
    return out


class UnitRows(list):
    """The rows of :func:`unit_rows` (a list of :class:`UnitError`, worst first), ``probed``: the SQNR (dB) of
    each probed float-node output (a residual Add; see :func:`workbench.core.analysis.noise_trace.probe_pairs`),
    which no unit owns, by tensor name; and ``own``: the SQNR (dB) of each row's tensor as its unit computes it
    from float inputs (its own noise, :mod:`workbench.core.analysis.own_noise`), by tensor name, for the
    tensors measured so."""

    def __init__(self, rows=(), probed: dict[str, float] | None = None, own: dict[str, float] | None = None) -> None:
        super().__init__(rows)
        self.probed = dict(probed or {})
        self.own = dict(own or {})


def unit_rows(pairs: dict, segs: dict, sums: dict) -> UnitRows:
    """Rows worst (lowest SQNR) first from the error sums of :func:`accumulate`; pairs whose unit is
    :data:`~workbench.core.analysis.noise_trace.PROBE` (``""``) go to ``probed`` instead of a row, the sums of
    :func:`own_key` to ``own`` (a Concat, as its row, by its worst segment)."""
    rows, probed, own = [], {}, {}
    for t, (node, op, _q) in pairs.items():
        if node == PROBE:
            probed[t] = _Acc.of(sums[t]).figures()[0]
            continue
        sqnr, mse, cos, mx = _figures(sums, t, segs.get(t), lambda i, t=t: t if i is None else (t, i))
        rows.append(UnitError(node, op, t, sqnr, mse, cos, mx))
        if own_key(t) in sums:
            own[t] = _figures(sums, t, segs.get(t), lambda i, t=t: own_key(t, i))[0]
    rows.sort(key=lambda r: (r.sqnr_db, r.node))
    return UnitRows(rows, probed, own)


def _figures(sums: dict, t: str, seg, key) -> tuple[float, float, float, float]:
    """:meth:`_Acc.figures` of tensor ``t``'s sums (``key(None)``), or of its worst Concat segment (``seg``:
    :func:`concat_segments`; ``key(input)``) that has pairs."""
    acc = _Acc.of(sums[key(None)])
    if seg:
        parts = [_Acc.of(sums[key(i)]) for i, _ in seg[1] if sums[key(i)][5]]
        acc = min(parts, key=lambda a: a.figures()[0], default=acc)
    return acc.figures()
