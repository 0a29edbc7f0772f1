"""Per-unit sensitivity from one analysis pass.

The error at a unit's output is the error its inputs bring plus the noise the unit adds itself, its
*local SQNR* (own noise). The analysis measures it directly where it can: the unit's QDQ fragment on
the float model's values of its inputs, against the float output
(:mod:`~workbench.core.analysis.own_noise`, ``UnitRows.own``). Otherwise it is derived: treating
quantization noise as additive and uncorrelated (the usual model, e.g. Widrow & Kollar,
"Quantization Noise", 2008), noise-to-signal ratios add:

    1 / SQNR_out = 1 / SQNR_in + 1 / SQNR_local        (linear ratios, not dB)

so ``SQNR_local = 1 / (1/SQNR_out - 1/SQNR_in)``, where SQNR_in is the worst SQNR among the
unit's quantized inputs (infinite for graph inputs; with the graph given, inputs are traced through
shared grids and pass-through nodes to the unit upstream, or to a probed residual Add,
:mod:`~workbench.core.analysis.noise_trace`). Derived, a unit whose output is no noisier than its
noisiest input gets none (+inf), though it rounds its output as any other (nudenet_320n, cpu-u8s8: 77
of 156 units, measured: none). A unit with a low local SQNR is the one to promote to a wider dtype or
keep in float. This needs one float and one quantized run (and the fragments' run), instead of one
run per unit.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from dataclasses import asdict, dataclass, field

import onnx

from workbench.core.analysis.executors import Executor, InlineExecutor, ThreadExecutor
from workbench.core.analysis.noise_trace import Tracer
from workbench.core.analysis.spill import SpillDir, resolve
from workbench.core.analysis.sweep_graph import (
    only_float,
    only_quantized,
    pair_index,
    side_reads,
    with_fragments,
)
from workbench.core.analysis.sweep_tasks import (
    CacheTask,
    FragmentTask,
    SharedSessions,
    Sqnr,
    SuffixTask,
    energy,
    run_cache,
    run_fragments,
    run_suffix,
)
from workbench.core.analysis.sweep_types import tensor_types
from workbench.core.data.finite import finite_rows
from workbench.core.data.loader import open_data_source
from workbench.core.errors import RecipeError
from workbench.core.progress import CancelToken, ProgressFn, no_progress
from workbench.core.recipe.spec import PlanMode

log = logging.getLogger(__name__)


@dataclass
class Sensitivity:
    """Local SQNR (dB) a unit adds, and its absolute output SQNR (dB)."""

    node: str
    op_type: str
    local_sqnr_db: float
    output_sqnr_db: float


def _lin(db: float) -> float:
    if db == math.inf:
        return math.inf
    return 10.0 ** (db / 10.0)


def local_sensitivity(plan, rows, *, graph=None) -> list[Sensitivity]:
    """Rank units by the noise they add themselves, most harmful (lowest local SQNR) first.

    A row whose tensor has a figure measured on float inputs (``rows.own``, a
    :class:`~workbench.core.analysis.unit_error.UnitRows` of :func:`workbench.core.api.analyze`) gets it;
    the others get the figure derived from the accumulated noise (module docstring).

    Parameters
    ----------
    plan : QuantPlan
        Gives each unit's input tensors and which unit produces each tensor.
    rows : list of UnitError
        Output of :func:`workbench.core.analysis.unit_error.analyze_units` for the fully quantized model
        (a :class:`~workbench.core.analysis.unit_error.UnitRows` also carries the SQNR of the probed
        float-node outputs, ``probed``).
    graph : onnx.GraphProto, optional
        The main graph the rows were measured on (what ``analyze``, the report and Model Explorer's
        node data pass). Inputs are then traced (:class:`~workbench.core.analysis.noise_trace.Tracer`):
        through shared grids and nodes with one noisy input to the unit upstream, noiseless when computed
        from the graph's inputs and initializers alone; at a float node that mixes noisy tensors (a
        residual Add) its probed figure, NaN for the unit when it was not probed. Without ``graph`` (autotune's ranking, kept as it was tuned) an
        input no unit produces counts as noiseless, and the unit is charged with the noise upstream.
    """
    out_db = {r.tensor: r.sqnr_db for r in rows}
    producer_db: dict[str, float] = {}
    for unit in plan.units.values():
        for t in unit.results:
            if t in out_db:
                producer_db[t] = out_db[t]
    probed = getattr(rows, "probed", None) or {}
    measured = getattr(rows, "own", None) or {}
    tracer = Tracer(plan, {**probed, **producer_db}, graph) if graph is not None else None
    result = []
    for r in rows:
        if r.tensor in measured:
            result.append(Sensitivity(r.node, r.op_type, measured[r.tensor], r.sqnr_db))
            continue
        unit = plan.units.get(r.node)
        if tracer is not None:
            own = set(unit.results) if unit else set()
            ins = [tracer.sqnr(t, own) for t in (unit.inputs if unit else [])]
        else:
            ins = [producer_db[t] for t in (unit.inputs if unit else []) if t in producer_db]
        if any(math.isnan(d) for d in ins):
            result.append(Sensitivity(r.node, r.op_type, math.nan, r.sqnr_db))  # an input's noise is not measured
            continue
        result.append(Sensitivity(r.node, r.op_type, _local_db(r.sqnr_db, ins), r.sqnr_db))
    result.sort(key=lambda s: (math.isnan(s.local_sqnr_db), 0.0 if math.isnan(s.local_sqnr_db) else s.local_sqnr_db,
                               s.node))
    return result


def _local_db(out_db: float, ins_db: list[float]) -> float:
    """The unit's own SQNR (dB) from its output's and its inputs' (module docstring): inf when the output
    is no noisier than the worst input, -inf when the output is all noise (SQNR -inf), NaN when the
    output's figure is NaN."""
    if math.isnan(out_db):
        return math.nan
    r_in = min((_lin(d) for d in ins_db), default=math.inf)
    r_out = _lin(out_db)
    inv = (1.0 / r_out if r_out > 0 else math.inf) - (1.0 / r_in if r_in > 0 else 0.0)
    if inv <= 0:
        return math.inf
    return -math.inf if math.isinf(inv) else 10.0 * math.log10(1.0 / inv)


# ----------------------------------------------------------------------------- end-to-end sweep
@dataclass
class UnitSensitivity:
    """End-to-end figures of one node unit (SQNR in dB over all model outputs, against float).

    ``only_quant_db``: only this unit quantized; ``only_float_db``: every unit quantized but this
    one; ``local_db``: this unit's own output, only it quantized (float inputs);
    ``gain_db``: ``only_float_db - all_quant_db`` (what keeping it float buys end to end).
    """

    node: str
    op_type: str
    only_quant_db: float
    only_float_db: float
    local_db: float
    gain_db: float

    def to_json(self) -> dict:
        return {k: (v if not isinstance(v, float) or math.isfinite(v) else repr(v)) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, d: dict) -> UnitSensitivity:
        return cls(d["node"], d.get("op_type", ""), *(float(d[k]) for k in FIGURES))


#: The figures of :class:`UnitSensitivity`, in table order.
FIGURES = ("only_quant_db", "only_float_db", "local_db", "gain_db")


@dataclass
class SweepResult:
    """Outcome of :func:`sensitivity_sweep`: ``rows`` worst first (lowest ``only_quant_db``);
    ``recipe``: the JSON of the recipe the sweep measured (with the units the latency placement kept
    float), when the caller records it; ``job``: the job's inputs and options, when the caller records them
    ({model, data, samples, recipe}: :func:`workbench.core.report.sweep_match.sweep_job_stamp`). The CLI's
    ``sweep --json`` records both, so ``report --sweep-json`` can refuse a table of another job."""

    rows: list[UnitSensitivity]
    all_quant_db: float
    samples: int
    tasks: int
    recipe: str | None = None
    job: dict | None = None

    def suggestion(self, min_gain_db: float = 0.5, max_fraction: float = 0.1) -> list[str]:
        """Units to keep in float: those whose exclusion raises the end-to-end SQNR by at least
        ``min_gain_db``, best gain first, at most ``max_fraction`` of the units (at least one)."""
        good = sorted((r for r in self.rows if r.gain_db >= min_gain_db and not math.isnan(r.gain_db)),
                      key=lambda r: (-r.gain_db, r.node))
        cap = max(1, int(max_fraction * len(self.rows)))
        return [r.node for r in good[:cap]]

    def to_json(self) -> dict:
        doc = {"rows": [r.to_json() for r in self.rows], "all_quant_db": _json_num(self.all_quant_db),
               "samples": self.samples, "tasks": self.tasks}
        return doc | ({"recipe": self.recipe} if self.recipe is not None else {}) \
            | ({"job": self.job} if self.job is not None else {})

    @classmethod
    def from_json(cls, d: dict) -> SweepResult:
        recipe, job = d.get("recipe"), d.get("job")
        return cls([UnitSensitivity.from_json(r) for r in d.get("rows", [])], float(d.get("all_quant_db", "nan")),
                   int(d.get("samples", 0)), int(d.get("tasks", 0)), recipe if isinstance(recipe, str) else None,
                   job if isinstance(job, dict) else None)


def _json_num(v: float):
    return v if math.isfinite(v) else repr(v)


def own_tensors(units_all, unit) -> set[str]:
    """Inputs and outputs of ``unit`` that no other quantized unit reads or writes: their Q -> DQ
    pair exists only for this unit (the writer gives every reader of a kept pair the DQ value). The
    output of a unit that writes float (``writes_float``: MatMul / Gemm) counts as written only
    when read: with its reader float, the planner keeps it float."""
    others = [u for u in units_all if u is not unit and not u.excluded]
    shared = {t for u in others for t in u.inputs} | {t for u in others if not u.writes_float for t in u.outputs}
    return {t for t in list(unit.inputs) + list(unit.outputs) if t not in shared}


def _tasks(units_all, fp, qp, units, tensor_map, f_cache, q_cache, out_names, f_avail, q_avail, index=None,
           same: frozenset[str] = frozenset()):
    """Generate the suffix tasks, two per unit (one for a unit in ``same``, whose "only float"
    variant is the QDQ model), built lazily (one model in memory at a time)."""
    for unit in units:
        for kind in ("quant", "float"):
            if kind == "float" and unit.node in same:
                continue
            try:
                if kind == "quant":
                    sfx = only_quantized(fp, qp, unit, tensor_map, f_avail, index=index)
                else:
                    sfx = only_float(fp, qp, unit, tensor_map, q_avail, own_tensors(units_all, unit), index=index)
            except KeyError as exc:
                log.warning("sensitivity sweep skips %s (%s): %s", unit.node, kind, exc)
                continue
            cache = f_cache if kind == "quant" else q_cache
            computed = set(sfx.outputs) & {o.name for o in sfx.proto.graph.output}
            refs, unchanged = [], []
            for fc in f_cache:
                refs.append([fc[o] for o in out_names])
                unchanged.append(sum(energy(resolve(fc[o])) for o, s in zip(out_names, sfx.outputs, strict=True)
                                     if s not in computed))
            feeds = [{x: c[x] for x in sfx.inputs} for c in cache]
            yield SuffixTask(unit.node, kind, sfx.proto, feeds,
                             [s if s in computed else "" for s in sfx.outputs], refs, unchanged)


def sweep_executor() -> Executor:
    """The sweep's default executor: one thread per CPU core (``os.cpu_count()``), inline on a
    one-core machine. Its tasks are onnxruntime runs on one intra-op thread each, which release the
    GIL, so threads use the cores as processes would, without starting interpreters or pickling
    models and activations to them."""
    workers = os.cpu_count() or 1
    return ThreadExecutor(workers) if workers > 1 else InlineExecutor()


def largest_first(units, proto: onnx.ModelProto) -> list:
    """``units`` in the order their suffix tasks are handed out: the unit whose first node comes
    earliest in ``proto``'s (topologically ordered) main graph first, as its suffix models run the
    most downstream nodes; the long tasks start first and the short ones fill in at the end, so
    the workers finish together. Ties keep their order."""
    position = {n.name: i for i, n in enumerate(proto.graph.node)}
    return sorted(units, key=lambda u: min((position.get(x, len(position)) for x in [u.node, *u.nodes]),
                                           default=len(position)))


def sweepable_units(plan, proto: onnx.ModelProto) -> list:
    """Quantized units of the main graph (units inside If / Loop bodies are not swept)."""
    names = {n.name for n in proto.graph.node}
    return [u for u in plan.units.values()
            if not u.excluded and u.node in names and all(n in names for n in u.nodes)]


@dataclass
class FloatRun:
    """The float model's run of the own-error pass, which the float activation cache shares.

    ``extra``: tensors the float session outputs beside the fragments' float inputs (what any unit's
    "only quantized" suffix may read, :func:`~workbench.core.analysis.sweep_graph.side_reads`, and the
    model's outputs); ``keep``: return every output's values per batch (``batches``), so the cache is
    taken from this run (trimmed to what the chosen units' suffixes read once they are chosen). :func:`local_figures` sets ``outputs``, the float session's outputs, so a cache computed
    again (``keep`` False) comes from a session with the same outputs, and so the same values."""

    extra: set[str]
    keep: bool
    outputs: list[str] = field(default_factory=list)
    batches: list[dict] = field(default_factory=list)


def local_figures(fp, qp, units, tensor_map, f_types, feeds, cancel=None,
                  executor: Executor | None = None, float_run: FloatRun | None = None) -> dict[str, float]:
    """Unit -> SQNR (dB) of its own output with only it quantized (float inputs): the float model
    and every unit's fragment run side by side in one session, one pass over ``feeds`` (split in
    contiguous runs of batches over ``executor``'s workers; the sums are added in batch order).
    With ``float_run`` the float session also outputs its ``extra`` tensors, and its outputs are kept
    per batch when it says so."""
    sfx, probes = with_fragments(fp, qp, units, tensor_map, f_types)
    if not sfx.outputs:
        return {}
    graph_inputs = {i.name for i in fp.graph.input}
    outputs = keep = None
    if float_run is not None:
        outputs = float_run.outputs = sorted((set(sfx.inputs) | float_run.extra) - graph_inputs)
        keep = outputs if float_run.keep else None
    sums: dict[str, float] = {}
    shared = _shared_sessions(executor)
    tasks = [FragmentTask(sfx.proto, part, fp, shared, k, outputs, keep, KEEP_BYTES)
             for k, part in enumerate(_split(feeds, _workers(executor)))]
    for part in (executor or InlineExecutor()).map(run_fragments, tasks):
        for batch, kept in part:
            if cancel is not None:
                cancel.check()
            for name, v in batch:
                sums[name] = sums.get(name, 0.0) + v
            if keep is not None and kept is None:  # a task over its budget: the cache runs the float model again
                float_run.keep = keep = None
                float_run.batches.clear()
            if keep is not None:
                float_run.batches.append(kept)
    out = {}
    for u, pairs in probes.items():
        acc = Sqnr()
        for p, _t in pairs:
            acc.sig += sums.get(f"{p}#sig", 0.0)
            acc.err += sums.get(f"{p}#err", 0.0)
            acc.n += 1
        if pairs:
            out[u] = acc.figures()[0]
    return out


#: bytes of float activations a fragments task may keep for the cache beyond its first batch's
#: (:func:`keeps_float_run`)
KEEP_BYTES = 512 << 20


def keeps_float_run(executor, feeds: list) -> bool:
    """Whether the own-error pass keeps the float activations for the cache: on threads of this process
    or inline (nothing to send back). A task keeps its first batch's (held while it runs anyway;
    ppocrv4_rec: 284 tensors, 544 MB a batch of 4) and more while they stay within :data:`KEEP_BYTES`
    (8 samples on 2 threads: one batch each). The float model then runs once, not again for the cache.
    Otherwise the cache runs it again in a session with the same outputs: the same values, at a higher
    cost than a session with only the cached tensors as outputs (ppocrv4_rec, 8 samples: caches round
    1.8-2.0 s of CPU and 340-350k page faults, 1.0-1.3 s and none before the float run was shared;
    onnxruntime keeps every output of a run alive to its end)."""
    return bool(getattr(executor, "shares_memory", False) or isinstance(executor, InlineExecutor)) and bool(feeds)


def _workers(executor) -> int:
    return max(1, int(getattr(executor, "workers", 1) or 1))


def _shared_sessions(executor) -> SharedSessions | None:
    """One round's :class:`~workbench.core.analysis.sweep_tasks.SharedSessions` when ``executor``'s
    workers are threads of this process (``shares_memory``): each session is built once, not once
    per task (ppocrv4_rec, 2 workers: the fragments round built the float and the fragments session
    twice, 0.18 s of CPU more; the caches round the float and the QDQ one, 0.14 s)."""
    return SharedSessions() if getattr(executor, "shares_memory", False) else None


def _split(items: list, parts: int) -> list[list]:
    """``items`` in at most ``parts`` contiguous, non-empty runs of near-equal length."""
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for k in range(parts):
        end = start + size + (1 if k < extra else 0)
        out.append(items[start:end])
        start = end
    return [p for p in out if p]


def _caches(fp, qp, feeds, f_names, q_names, executor, spill, cancel, f_outputs=None, f_cache=None):
    """Float (optimized) and QDQ (as written) activations per batch: each model's batches in as
    many contiguous runs as ``executor`` has workers (:func:`_split`), the QDQ model's first (the
    longer: run as written, more tensors kept), so the workers finish together; arrays come back
    as files of ``spill`` when it is given. One task per model made the float one's worker wait
    for the other (ppocrv4_rec, 2 workers: 0.38 s against 0.70 s of CPU). On shared sessions the
    second QDQ task builds the float model's session first (``CacheTask.warm``), so the two sessions
    are built side by side, not each while a worker waits for it. ``f_outputs``: the float session's
    outputs (:class:`FloatRun`); ``f_cache``: the float activations already taken (only the QDQ model
    runs)."""
    if cancel is not None:
        cancel.check()
    runs = _split(list(range(len(feeds))), _workers(executor))
    shared = _shared_sessions(executor)
    models = ((qp, False, q_names, "q"),) + (((fp, True, f_names, "f"),) if f_cache is None else ())
    tasks = [CacheTask(proto, optimize, [feeds[b] for b in run], names, spill, tag, run[0], shared,
                       outputs=f_outputs if tag == "f" else None)
             for proto, optimize, names, tag in models for run in runs]
    if shared is not None and len(runs) > 1 and f_cache is None:
        tasks[1].warm = tasks[len(runs)]  # the second QDQ task builds the float session beside the first's QDQ one
    parts = list((executor or InlineExecutor()).map(run_cache, tasks))
    q_cache = [values for part in parts[:len(runs)] for values in part]
    if f_cache is None:
        f_cache = [values for part in parts[len(runs):] for values in part]
    return f_cache, q_cache


def _needed(units_all, fp, qp, chosen, tensor_map, f_types, q_types,
            index=None) -> tuple[set[str], set[str], set[str]]:
    """Tensors the suffix models of ``chosen`` read from the float and from the QDQ run, and the
    units whose "only float" variant is the QDQ model itself (``same_as_base``: nothing to run)."""
    f_need, q_need, same = set(), set(), set()
    for unit in chosen:
        try:
            f_need.update(only_quantized(fp, qp, unit, tensor_map, f_types, build=False, index=index).inputs)
        except KeyError:
            pass
        try:
            sfx = only_float(fp, qp, unit, tensor_map, q_types, own_tensors(units_all, unit), build=False,
                             index=index)
        except KeyError:
            continue
        q_need.update(sfx.inputs)
        if sfx.same_as_base:
            same.add(unit.node)
    return f_need, q_need, same


def sensitivity_sweep(model, result, data, *, samples: int | None = 8, batch_size: int = 4,
                      top: int | None = None, executor: Executor | None = None, progress: ProgressFn | None = None,
                      cancel: CancelToken | None = None) -> SweepResult:
    """For every node unit: end-to-end SQNR with only it quantized and with only it left float.

    Cost: one pass of the float model with every unit's QDQ fragment beside it (each unit's own
    error, ``local_db``; its float run keeps the activations the suffixes read, :class:`FloatRun`:
    with more batches than workers the float model runs again for them, in a session with the same
    outputs), one pass of the QDQ model keeping activations, then for
    the ``top`` units with the worst own error (all with None) two suffix models each (one when the
    unit's "only float" model is the QDQ model itself: its pairs are shared and its weights dequantize
    exactly, so its figure is the all-quantized one); everything
    runs on ``executor`` (default :func:`sweep_executor`: one thread per core, each onnxruntime session
    on one intra-op thread).
    ppocrv4_rec (208 units, 8 samples, top 16; x86_64 AVX512-VNNI, 2 cores, load average 0.5-0.9):
    3.7 s wall, 6.6 s CPU, 2.8x in wall time the 64-row calibration pass ``workbench-cli sweep`` runs
    before it (5.5x a 32-row pass), 4.1 s CPU of it the 28 suffix models (``benchmarks/sensitivity_sweep.py``).

    Fidelity: a suffix keeps or drops a Q -> DQ pair as the writer would for the edited recipe
    when the pair belongs to the unit or to a neighbouring unit (every unit of digits_cnn and the
    test model: equal to the whole variant model to 1e-3 dB). Where the planner re-plans a
    pass-through chain after the edit (a Reshape / Transpose output between attention MatMuls
    gets its own calibrated range once its source unit is excluded), the whole model differs:
    digits_transformer, 8 samples, same 32-sample calibration: "only quantized" equal for 31 of
    36 units (the others 0.5-8.7 dB apart), "only float" for 34 of 36 (about 1 dB apart).

    The float and the QDQ model run once over ``samples`` samples with the activations kept;
    then each variant runs only the unit and what is downstream of it, reading the rest from
    those caches (:mod:`workbench.core.analysis.sweep_graph`). Its outputs are those of the whole
    variant model. All three rounds (fragments pass in runs of batches, the two caches in runs of
    batches per model, two suffix models per unit, handed out earliest unit first,
    :func:`largest_first`) are tasks of :mod:`workbench.core.analysis.sweep_tasks` on ``executor``
    (:mod:`workbench.core.analysis.executors`; default :func:`sweep_executor`, threads of this
    process, which take the models and arrays as they are and share a round's sessions,
    :func:`_shared_sessions`), inside one ``with`` block of it when it has one (workers start once). Executors
    whose workers are other processes of this machine (``shares_files``) get the activations as
    memory-mapped ``.npy`` files (:mod:`workbench.core.analysis.spill`), others as arrays in the
    task. Figures are added in batch order, so the table does not depend on the executor or on
    the order the tasks run in.

    Parameters
    ----------
    model : PreparedModel
        The float model.
    result : QuantizeResult
        From :func:`workbench.core.api.quantize` (static QDQ).
    data : path, dict or DataSource
        Samples fed to both models (float32/int arrays as the model's inputs).

    Returns
    -------
    SweepResult
        Rows worst first. SQNR (dB) = 10 log10(sum ref^2 / sum (ref - q)^2) over all outputs.

    Raises
    ------
    RecipeError
        The recipe is not static (dynamic or weight-only: no activation Q -> DQ to sweep).
    DataError, ModelError, Cancelled
    """

    progress = progress or no_progress
    executor = executor or sweep_executor()
    if result.plan.mode != PlanMode.STATIC:
        raise RecipeError(f"The sensitivity sweep compares static QDQ units; the recipe's preset "
                          f"{result.recipe.preset if result.recipe else ''!r} is {result.plan.mode}.",
                          hint="Pick a static preset (e.g. cpu-u8s8) to sweep, then switch back.")
    fp, qp = _same_opset(model.proto, result.proto)
    source = finite_rows(open_data_source(data, model))  # samples with NaN / Inf inputs are left out
    n = source.num_samples()
    n = min(n, samples) if (n is not None and samples) else (samples or n)
    bs = batch_size if source.can_batch else 1
    feeds = list(source.batches(bs, limit=n))
    if source.note():
        log.warning("%s", source.note())
    units = sweepable_units(result.plan, fp)
    # one session of the executor for the three rounds (fragments, caches, suffixes): local
    # processes or a private Ray instance start once
    session = executor if hasattr(executor, "__enter__") else contextlib.nullcontext()
    with session, (SpillDir() if getattr(executor, "shares_files", False) else contextlib.nullcontext()) as spill:
        start = getattr(executor, "start", None)
        if start is not None:
            start()  # the workers start up while this process measures the types
        figures, local, all_quant_db, done = _sweep(result, fp, qp, feeds, units, top, executor,
                                                    spill.path if spill else None, progress, cancel)
    rows = []
    for u in units:
        f = figures[u.node]
        oq, of = f.get("quant", math.nan), f.get("float", math.nan)
        rows.append(UnitSensitivity(u.node, u.op_type, oq, of, local.get(u.node, math.nan), _gain(of, all_quant_db)))
    rows.sort(key=lambda r: (math.isnan(r.only_quant_db), r.only_quant_db if not math.isnan(r.only_quant_db)
                             else r.local_db, r.node))
    # a batched source's feeds hold rows along axis 0; a stacked one's (one sample per feed) may be 0-d
    seen = sum(len(next(iter(f.values()))) for f in feeds) if source.can_batch else len(feeds)
    return SweepResult(rows, all_quant_db, seen, done)


def _gain(only_float_db: float, all_quant_db: float) -> float:
    """dB the output gains when the unit alone is float: +inf when that makes it exact (the unit was
    the only noise), NaN when either figure is not a number."""
    if math.isfinite(all_quant_db) and only_float_db == math.inf:
        return math.inf
    if math.isfinite(only_float_db) and math.isfinite(all_quant_db):
        return only_float_db - all_quant_db
    return math.nan


def _sweep(result, fp, qp, feeds, units, top, executor, spill, progress, cancel):
    """The measuring part of :func:`sensitivity_sweep`: (figures per unit and kind, local figures,
    all-quantized SQNR dB, tasks done)."""
    f_types = tensor_types(fp, True)
    q_types = tensor_types(qp, False, f_types)  # the QDQ model's float tensors are the float model's
    index = pair_index(fp, qp)  # node lists and reads shared by every suffix
    out_names = [o.name for o in fp.graph.output]
    float_run = FloatRun(side_reads(index, units, result.tensor_map) | set(out_names), keeps_float_run(executor, feeds))
    progress(0, 2, "Preparing: measuring each unit's own error")
    local = local_figures(fp, qp, units, result.tensor_map, f_types, feeds, cancel, executor, float_run)
    chosen = units
    if top is not None and top < len(units):
        chosen = sorted(units, key=lambda u: (local.get(u.node, math.inf), u.node))[:top]
    units_all = list(result.plan.units.values())
    f_need, q_need, same = _needed(units_all, fp, qp, chosen, result.tensor_map, f_types, q_types, index)
    progress(1, 2, "Preparing: caching float and quantized activations")
    f_names = sorted(f_need | set(out_names))
    f_cache, f_outputs = _float_cache(float_run, fp, feeds, f_names)
    f_cache, q_cache = _caches(fp, qp, feeds, f_names, sorted(q_need | set(out_names)), executor, spill, cancel,
                               f_outputs, f_cache)
    all_q = Sqnr()
    for fc, qc in zip(f_cache, q_cache, strict=True):
        for o in out_names:
            all_q.update(resolve(fc[o]), resolve(qc[o]))
    all_quant_db = all_q.figures()[0]
    tasks = _tasks(units_all, fp, qp, largest_first(chosen, fp), result.tensor_map, f_cache, q_cache, out_names, f_types, q_types,
                   index, frozenset(same))
    figures: dict[str, dict[str, float]] = {u.node: {} for u in units}
    for node in same:  # its "only float" model is the QDQ model: the all-quantized figure, exactly
        figures[node]["float"] = all_quant_db
    total, done = 2 * len(chosen), len(same)
    progress(2, 2, "Preparing: activations cached")
    progress(0, total, "Sweeping units")
    results = executor.map(run_suffix, tasks)
    try:
        for node, kind, e2e in results:
            if cancel is not None:
                cancel.check()
            figures[node][kind] = e2e
            done += 1
            progress(done, total, f"Sweeping units ({node})")
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
    return figures, local, all_quant_db, done


def _float_cache(float_run: FloatRun, fp, feeds, f_names: list[str]) -> tuple[list[dict] | None, list[str]]:
    """``(float activations per batch or None, the float session's outputs)``: the values ``f_names``
    the own-error pass kept (graph inputs from the feeds), or None and the outputs for the cache
    round's session: the pass's (the same values); with a tensor it lacks (not expected: the pass's
    session outputs what any suffix reads) that one added."""
    graph_inputs = {i.name for i in fp.graph.input}
    outputs = float_run.outputs or sorted(float_run.extra - graph_inputs)
    missing = [x for x in f_names if x not in graph_inputs and x not in outputs]
    if missing:
        log.debug("sensitivity sweep: the float run lacks %s; the cache runs the float model again", missing[:3])
        return None, sorted(set(outputs) | set(missing))
    if not float_run.keep or len(float_run.batches) != len(feeds):
        return None, outputs
    cache = [{x: kept[x] if x in kept else feed[x] for x in f_names}
             for kept, feed in zip(float_run.batches, feeds, strict=True)]
    float_run.batches.clear()  # the tensors no chosen unit's suffix reads go
    return cache, outputs


def _same_opset(fp: onnx.ModelProto, qp: onnx.ModelProto) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """The float model at the QDQ model's default-domain opset (the writer may have upgraded it)."""
    def version(p):
        return next((o.version for o in p.opset_import if o.domain in ("", "ai.onnx")), 0)

    if version(fp) == version(qp):
        return fp, qp
    from onnx import version_converter

    return version_converter.convert_version(fp, version(qp)), qp

