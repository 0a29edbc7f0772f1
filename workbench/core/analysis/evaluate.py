"""End-to-end comparison of a float model and its quantized version on evaluation data.

Both models run in onnxruntime (CPU) on the same feeds, batch by batch; each output is compared
with streaming sums, so memory does not grow with the number of samples unless a task metric
needs the whole set.
"""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from workbench.core.analysis.metrics import (
    METRICS,
    REF_PREFIX,
    MetricFn,
    check_metric_labels,
    check_metric_output,
    load_metric,
)
from workbench.core.data.finite import FiniteRows, finite_rows
from workbench.core.data.loader import DataSource, open_data, open_data_source
from workbench.core.errors import Cancelled, DataError, ModelError
from workbench.core.graph.outputs import pair_outputs, renamed_note
from workbench.core.graph.walk import NameAllocator, all_names
from workbench.core.io.external import has_lazy
from workbench.core.io.ort_session import QUIET_LOG, proto_session
from workbench.core.model.load import PreparedModel, load_model, prepare_proto
from workbench.core.model.naming import fix_node_names
from workbench.core.progress import CancelToken, ProgressFn, no_progress
from workbench.core.qonnx.reader import is_qonnx_node
from workbench.core.runtime.session import session_runtime
from workbench.core.wording import count

ModelLike = Any  # PreparedModel | onnx.ModelProto | str | Path
_EXTERNAL_LIMIT = 1_800_000_000  # bytes; protobuf cannot serialise a model >= 2 GiB in one piece


@dataclass
class OutputError:
    """Error of one model output, quantized vs float, over all evaluated samples.

    Attributes
    ----------
    name : str
        Output name (the float model's).
    shape : list of int
        Shape of the output of the first batch.
    sqnr_db : float
        ``10 log10(sum(f^2) / sum((f - q)^2))`` in dB (inf when identical).
    cosine : float
        ``sum(f q) / sqrt(sum(f^2) sum(q^2))`` over all elements.
    max_abs_error : float
        ``max |f - q|``.
    mse : float
        ``mean((f - q)^2)``.
    nonfinite : int
        Elements where either output is NaN or inf (left out of the sums).
    worst_row_sqnr_db : float or None
        The lowest SQNR of a single row (sample): ``10 log10(sum(f^2) / sum((f - q)^2))`` over that row's
        elements, in dB (inf when the row is identical, -inf when its float output is all zero and the
        quantized one is not). The pooled ``sqnr_db`` is dominated by the rows with the largest error
        energy; this says how bad the worst single row is. None when no row was measured or an output
        has no row axis (its first axis is not the batch's).
    worst_row : int or None
        That row's index in the data (the first such row on a tie).
    """

    name: str
    shape: list[int]
    sqnr_db: float
    cosine: float
    max_abs_error: float
    mse: float
    nonfinite: int = 0
    worst_row_sqnr_db: float | None = None
    worst_row: int | None = None

    def worst_row_text(self) -> str:
        """"worst row 9.10 dB, row 41" (:attr:`worst_row_sqnr_db` and :attr:`worst_row`), or "" when there is
        none or every row equals float (+inf)."""
        if self.worst_row_sqnr_db is None or self.worst_row_sqnr_db == math.inf:
            return ""
        return f"worst row {self.worst_row_sqnr_db:.2f} dB, row {self.worst_row}"


@dataclass
class EvalReport:
    """Result of :func:`evaluate`.

    ``float_metric`` / ``quant_metric`` are the task metric on each model (None without a metric);
    ``seconds`` is wall time of the whole evaluation; ``runtime`` says what both models ran with
    (onnxruntime version, execution provider, graph optimisation level: onnxruntime's default,
    so the quantized model runs its fused integer kernels as deployed).
    ``optimization_level`` is the onnxruntime graph optimisation level both sessions ran with
    (``GraphOptimizationLevel`` name, e.g. ``ORT_ENABLE_ALL``). ``left_out``: the data indices of the rows
    read but left out of the figures (NaN / Inf in a float input; ``notes`` names them too).
    """

    outputs: list[OutputError]
    samples: int
    float_metric: float | None = None
    quant_metric: float | None = None
    metric: str | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    runtime: str = ""
    optimization_level: str = ""
    left_out: list[int] = field(default_factory=list)
    #: the output the metric read (a built-in metric: the first, or the one ``metric_output`` named; a
    #: metric function: the one named, else None: it reads what it likes); ``model_outputs``: every output
    metric_output: str | None = None
    model_outputs: list[str] = field(default_factory=list)

    def output(self, name: str) -> OutputError:
        for o in self.outputs:
            if o.name == name:
                return o
        raise KeyError(name)

    def format(self) -> str:
        """Plain-text table for the terminal: one row per output, then the metric if any."""
        width = max([6] + [len(o.name) for o in self.outputs])
        lines = [f"{count(self.samples, 'sample')} in {self.seconds:.2f} s" + (f"; measured with {self.runtime}" if self.runtime else ""),
                 f"{'output':{width}s} {'SQNR dB':>9s} {'cosine':>9s} {'max abs err':>12s} {'MSE':>10s}"]
        for o in self.outputs:
            lines.append(f"{o.name:{width}s} {o.sqnr_db:9.2f} {o.cosine:9.5f} {o.max_abs_error:12.4g} "
                         f"{o.mse:10.3g}" + (f"  ({o.worst_row_text()})" if o.worst_row_text() else "")
                         + (f"  ({o.nonfinite} non-finite)" if o.nonfinite else ""))
        if self.metric is not None:
            lines.append(f"metric {self.metric}{self._read_text()}: float {fmt_metric(self.float_metric)}  "
                         f"quantized {fmt_metric(self.quant_metric)}" + METRIC_LEGENDS.get(self.metric, ""))
        return "\n".join(lines)

    def _read_text(self) -> str:
        """`` on output NAME`` for the metric line ("" when the metric reads what it likes), and with several
        outputs which of them it is and how to read another."""
        if self.metric_output is None:
            return ""
        others = [o for o in self.model_outputs if o != self.metric_output]
        if not others:
            return f" on output {self.metric_output}"
        how = "as --metric-output asked" if self.model_outputs[:1] != [self.metric_output] else "the first output"
        return (f" on output {self.metric_output} ({how}; others: {', '.join(others)}; --metric-output NAME "
                "reads another)")

    def to_json(self) -> dict:
        """JSON-safe dict (inf/nan as strings)."""
        def clean(v):
            return v if not isinstance(v, float) or math.isfinite(v) else str(v)
        return {"samples": self.samples, "metric": self.metric, "float_metric": clean(self.float_metric),
                "quant_metric": clean(self.quant_metric), "seconds": self.seconds, "notes": self.notes, "runtime": self.runtime,
                "optimization_level": self.optimization_level, "left_out": list(self.left_out),
                "metric_output": self.metric_output,
                "outputs": [{k: clean(v) for k, v in asdict(o).items()} for o in self.outputs]}

    @classmethod
    def from_json(cls, data: dict) -> EvalReport:
        """The report :meth:`to_json` wrote (its "inf" / "nan" strings as floats again); KeyError, TypeError or
        ValueError when ``data`` is not one."""
        def number(v):
            return float(v) if isinstance(v, str) else v
        fields = {k: data[k] for k in ("samples", "metric", "seconds", "notes", "runtime", "optimization_level",
                                       "left_out", "metric_output") if k in data}
        outputs = [OutputError(**{k: number(v) if k not in ("name", "shape") else v for k, v in o.items()})
                   for o in data["outputs"]]
        return cls(outputs=outputs, float_metric=number(data.get("float_metric")),
                   quant_metric=number(data.get("quant_metric")), **fields)


def fmt_metric(v: float) -> str:
    """A metric with 4 decimals; a value that rounds to zero prints as 0.0000, never -0.0000."""
    text = f"{v:.4f}"
    return "0.0000" if text == "-0.0000" else text


#: Elements per float64 step of :class:`_Accumulator` (8 MiB per copy): a batch of ppocrv4_rec's
#: [32, 40, 6625] output as float64 was 68 MB per copy, four copies at once.
_CHUNK = 1 << 20


class _Accumulator:
    """Streaming sums of one output pair (float64, in chunks of about :data:`_CHUNK` elements), pooled
    over every row and per row (the worst row's SQNR)."""

    def __init__(self, name: str):
        self.name, self.shape = name, None
        self.ref2 = self.err2 = self.q2 = self.dot = 0.0
        self.max_abs, self.count, self.nonfinite = 0.0, 0, 0
        self.worst: tuple[float, int] | None = None  # (row SQNR dB, row index), the lowest so far
        self.by_row = True  # False once an output had no row axis to split

    def update(self, ref: np.ndarray, q: np.ndarray, rows: list[int] | None = None) -> None:
        """Add one run's outputs; ``rows``: the data indices of the rows in it (axis 0 of the outputs, or
        the whole output when the run held one row)."""
        if self.shape is None:
            self.shape = list(ref.shape)
        if ref.shape != q.shape:
            raise ModelError(f"Output {self.name!r}: float shape {list(ref.shape)} but quantized shape "
                             f"{list(q.shape)}.", hint="The quantized model must compute the same outputs.")
        ref, q = np.asarray(ref), np.asarray(q)
        n = len(rows) if rows else 0
        if n and not (n == 1 or (ref.ndim and ref.shape[0] == n)):
            self.by_row, n = False, 0  # no row axis: pooled figures only
        ref, q = ref.reshape(max(n, 1), -1), q.reshape(max(n, 1), -1)
        ref2, err2 = np.zeros(len(ref)), np.zeros(len(ref))
        width = ref.shape[1]
        step = max(1, _CHUNK // max(width, 1))  # rows per float64 step, or one row in pieces when wider
        for a in range(0, len(ref), step):
            for start in range(0, max(width, 1), _CHUNK):
                r2, e2 = self._add(ref[a:a + step, start:start + _CHUNK], q[a:a + step, start:start + _CHUNK])
                ref2[a:a + step] += r2
                err2[a:a + step] += e2
        if n:
            self._worst_of(ref2, err2, rows)

    def _add(self, ref: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add a block ``[rows, elements]`` to the pooled sums; returns its per-row ``sum(f^2)``, ``sum((f - q)^2)``."""
        r = ref.astype(np.float64)
        x = q.astype(np.float64)
        ok = np.isfinite(r) & np.isfinite(x)
        kept = r.size
        if not ok.all():
            self.nonfinite += int((~ok).sum())
            kept = int(ok.sum())
            r, x = np.where(ok, r, 0.0), np.where(ok, x, 0.0)  # zeros add nothing to the sums
        e = r - x
        r2, e2 = np.einsum("ij,ij->i", r, r), np.einsum("ij,ij->i", e, e)
        self.ref2 += float(r2.sum())
        self.err2 += float(e2.sum())
        self.q2 += float(np.einsum("ij,ij->", x, x))
        self.dot += float(np.einsum("ij,ij->", r, x))
        self.count += kept
        if e.size:
            self.max_abs = max(self.max_abs, float(np.abs(e).max()))
        return r2, e2

    def _worst_of(self, ref2: np.ndarray, err2: np.ndarray, rows: list[int]) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            db = np.where(err2 == 0.0, np.inf, np.where(ref2 == 0.0, -np.inf, 10.0 * np.log10(ref2 / err2)))
        i = int(np.argmin(db))
        if self.worst is None or db[i] < self.worst[0]:
            self.worst = (float(db[i]), int(rows[i]))

    def result(self) -> OutputError:
        if self.err2 == 0.0:
            sqnr = math.inf
        elif self.ref2 == 0.0:
            sqnr = -math.inf
        else:
            sqnr = 10.0 * math.log10(self.ref2 / self.err2)
        if self.ref2 == 0.0 and self.q2 == 0.0:
            cos = 1.0
        elif self.ref2 == 0.0 or self.q2 == 0.0:
            cos = 0.0
        else:
            cos = self.dot / math.sqrt(self.ref2 * self.q2)
        mse = self.err2 / self.count if self.count else math.nan
        worst = self.worst if self.by_row else None
        return OutputError(self.name, self.shape or [], sqnr, cos, self.max_abs, mse, self.nonfinite,
                           worst[0] if worst else None, worst[1] if worst else None)


def make_session(model: ModelLike, *, what: str = "model", threads: int = 0) -> ort.InferenceSession:
    """An onnxruntime CPU session of a PreparedModel, ModelProto or file path.

    Raises
    ------
    ModelError
        onnxruntime cannot load the model (unsupported op, invalid graph, missing file).
    """
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.log_severity_level = QUIET_LOG
    # no memory pattern: with it, onnxruntime's second run allocates one block for the whole
    # traced plan beside what the first run left in its arena (ppocrv4_rec at 32 rows: +200 MiB)
    opts.enable_mem_pattern = False
    proto = getattr(model, "proto", model)
    label = str(getattr(model, "path", None) or (model if isinstance(model, str | Path) else what))
    if isinstance(proto, str | Path) and not Path(proto).is_file():
        raise ModelError(f"{proto}: no such model file (the {what}).", hint="Check the path.")
    try:
        if isinstance(proto, onnx.ModelProto):
            # weights in the user's data file (lazy) or large in memory: handed over in place, not serialised
            if has_lazy(proto) or proto.ByteSize() < _EXTERNAL_LIMIT:
                return proto_session(proto, opts)
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "model.onnx"
                onnx.save_model(proto, str(path), save_as_external_data=True, location="model.onnx.data")
                return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        return ort.InferenceSession(str(proto), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises several types
        if isinstance(proto, str | Path) and "same node name" in str(exc):
            return make_session(_named_apart(proto), what=what, threads=threads)
        if _is_qonnx(proto):
            raise ModelError(f"{label}: the {what} is a QONNX file (Quant nodes of qonnx.custom_op.general), "
                             "which onnxruntime cannot run.",
                             hint=f"Evaluate its QDQ export, or convert it: workbench-cli convert {label} OUT.onnx "
                                  "--to qdq.") from None
        raise ModelError(f"{label}: onnxruntime cannot load the {what} ({exc.__class__.__name__}: "
                         f"{str(exc).strip()[:500]}).",
                         hint="Check that the model is valid (onnx.checker) and its ops are supported.") from None


#: What a built-in metric's number means where its sign or scale is not self-evident.
METRIC_LEGENDS = {"detection_scores": "  (minus the largest change of a detected class's score against the "
                                      "float model: 0 is the same, -0.05 a change of 0.05)"}


def _named_apart(path: str | Path) -> onnx.ModelProto:
    """The model of ``path`` with every node named, and uniquely: onnxruntime refuses a file where two
    nodes share a name (case 24), which node names do not change the outputs of."""
    proto = onnx.load(str(path))
    fix_node_names(proto.graph, NameAllocator(all_names(proto.graph)))
    return proto


def _open_source(data: Any, float_model: ModelLike) -> FiniteRows:
    """A DataSource for ``data`` validated against the float model's inputs, without the samples
    whose inputs hold NaN / Inf (:mod:`workbench.core.data.finite`)."""
    if isinstance(data, DataSource):
        return finite_rows(data)
    if isinstance(float_model, PreparedModel):
        prepared = float_model
    elif isinstance(float_model, onnx.ModelProto):
        prepared = prepare_proto(float_model)
    else:
        prepared = load_model(float_model)
    return finite_rows(open_data(data, prepared))


def _is_qonnx(proto) -> bool:
    """True when ``proto`` (a ModelProto or a file path) has a QONNX node in its main graph."""
    if not isinstance(proto, onnx.ModelProto):
        try:
            proto = onnx.load(str(proto), load_external_data=False)
        except Exception:  # noqa: BLE001 - not readable as ONNX: the caller's error says so
            return False
    return any(is_qonnx_node(n) for n in proto.graph.node)


def _label(model: ModelLike, default: str) -> str:
    path = model.path if isinstance(model, PreparedModel) else (model if isinstance(model, str | Path) else None)
    return str(path) if path else default


def _check_inputs(fsess: ort.InferenceSession, qsess: ort.InferenceSession, float_model, quant_model) -> None:
    """Refuse two models whose graph inputs differ by name or rank (they are not float + quantized of one
    model: onnxruntime would fail on the first batch with "Invalid rank")."""
    fnames = [i.name for i in fsess.get_inputs()]
    qnames = [i.name for i in qsess.get_inputs()]
    why = f"inputs {fnames} vs {qnames}" if sorted(fnames) != sorted(qnames) else None
    ranks = {i.name: len(i.shape) for i in qsess.get_inputs()}
    for i in fsess.get_inputs():
        if why is None and len(i.shape) != ranks[i.name]:
            why = f"input {i.name!r} has rank {len(i.shape)} vs {ranks[i.name]}"
    if why is not None:
        raise ModelError(f"{_label(float_model, 'the float model')} and {_label(quant_model, 'the quantized model')} "
                         f"do not correspond: {why}.",
                         hint="Evaluate a model with its own quantized version (same graph inputs).")


def _batch_fixed_to_one(sess: ort.InferenceSession) -> bool:
    """True when an input of ``sess`` has a leading dimension fixed to 1 (it takes one sample per run)."""
    return any(len(i.shape) > 0 and i.shape[0] == 1 for i in sess.get_inputs())


def _match_outputs(fsess: ort.InferenceSession, qsess: ort.InferenceSession,
                   notes: list[str]) -> list[tuple[str, str]]:
    """(float output, quantized output) pairs; by name, else by position (a note is added to ``notes``)."""
    fnames = [o.name for o in fsess.get_outputs()]
    qnames = [o.name for o in qsess.get_outputs()]
    pairs = pair_outputs(fnames, qnames)
    if not pairs and fnames:
        raise ModelError(f"The quantized model's outputs {qnames} do not match the float model's {fnames}.",
                         hint="Compare a model with its own quantized version.")
    notes.extend(n for n in [renamed_note(fnames, qnames)] if n)
    return pairs


def _run(sess: ort.InferenceSession, names: list[str], feeds: dict, opts: ort.RunOptions,
         cancel: CancelToken | None, what: str, rows: str) -> list[np.ndarray]:
    try:
        return sess.run(names, feeds, opts)
    except Exception as exc:  # noqa: BLE001
        if cancel is not None and cancel.cancelled:
            raise Cancelled() from None
        raise DataError(f"onnxruntime failed on the {what} at samples {rows} ({exc.__class__.__name__}: "
                        f"{str(exc).strip()[:500]}).", hint="Check the data's shapes and dtypes against the "
                        "model inputs.") from None


def evaluate(float_model: ModelLike, quant_model: ModelLike, data: Any, *, samples: int | None = None,
             batch_size: int = 32, metric: str | MetricFn | None = None, progress: ProgressFn | None = None,
             cancel: CancelToken | None = None, metric_output: str | None = None,
             float_as_given: bool = False) -> EvalReport:
    """Run both models on ``data`` and compare every output; optionally score a task metric.

    Parameters
    ----------
    float_model, quant_model : PreparedModel, onnx.ModelProto, str or Path
        The reference and the quantized model (same inputs and outputs).
    data : str, Path, dict spec or DataSource
        Anything :func:`workbench.core.data.loader.open_data` opens, validated against the float model:
        typically an ``.npz`` (keys = input names, ``gt_*`` keys are labels; layout "batch" or
        "stacked" detected from the array ranks).
    samples : int, optional
        Use only the first ``samples`` samples.
    batch_size : int
        Samples per onnxruntime call when both models' batch axes are dynamic (else 1: one of
        them fixes the batch to 1, as a QONNX export for qonnx/FINN does).
    metric : str or callable, optional
        A built-in metric name (:data:`workbench.core.analysis.metrics.METRICS`) or ``metric(outputs,
        batch) -> float`` (see :mod:`workbench.core.analysis.metrics`), computed on each model over the
        whole set (outputs and data concatenated on axis 0).
    metric_output : str, optional
        The float model's output the metric reads: a built-in metric reads the first output, this one is
        put first (``EvalReport.metric_output`` names the one read).
    float_as_given : bool
        Run a ``float_model`` opened from a file as the file holds it, not its prepared graph (BatchNormalization
        and Conv affines folded, opset 13: the same outputs up to float rounding), as the CLI's ``evaluate FLOAT
        QUANTIZED`` does with two files: ppocr_mobile_v2_cls against itself read 132.84 dB, not inf. False (an
        in-memory quantize result, written from the prepared graph): the prepared graph is the reference.

    Returns
    -------
    EvalReport
        Per-output SQNR (dB), cosine, max abs error, MSE, and the metric on each model.

    Raises
    ------
    ModelError
        A model cannot be loaded by onnxruntime or the outputs do not correspond.
    DataError
        Missing input array, wrong dtype, unreadable file, onnxruntime error on a batch; a
        ``metric_output`` the float model does not have.
    Cancelled
        ``cancel`` was set.
    """
    t0 = time.perf_counter()
    progress = progress or no_progress
    metric_fn = load_metric(metric) if isinstance(metric, str) else metric
    given = float_as_given and isinstance(float_model, PreparedModel) and float_model.path is not None
    fsess = make_session(float_model.path if given else float_model, what="float model")
    qsess = make_session(quant_model, what="quantized model")
    _check_inputs(fsess, qsess, float_model, quant_model)
    names = [o.name for o in fsess.get_outputs()]
    if metric_fn is not None and metric_output is not None and metric_output not in names:
        raise DataError(f"--metric-output {metric_output}: {_label(float_model, 'the float model')} has no output "
                        f"{metric_output!r} (outputs: {', '.join(names) or 'none'}).",
                        hint="Name one of the model's outputs.")
    if metric_fn is not None and fsess.get_outputs():
        first = next(o for o in fsess.get_outputs() if o.name == (metric_output or names[0]))
        check_metric_output(metric if isinstance(metric, str) else metric_fn, first.name,
                            [d if isinstance(d, int) else str(d) for d in first.shape], _label(float_model, "the float model"))
    model_notes: list[str] = []
    pairs = _match_outputs(fsess, qsess, model_notes)
    source = _open_source(data, float_model)
    where = str(getattr(source, "path", None) or "the evaluation data")
    if metric_fn is not None:
        check_metric_labels(metric if isinstance(metric, str) else metric_fn, source.labels(),
                            source.num_samples(), where)
    if _batch_fixed_to_one(qsess) or _batch_fixed_to_one(fsess):
        batch_size = 1  # e.g. a QONNX export made for batch 1, compared with its dynamic-batch original
    total = source.num_samples() or 0
    total = min(total, samples) if samples is not None and total else (samples or total)
    n_all = source.num_samples()
    labels = {k: v for k, v in source.labels().items() if n_all is not None and len(v) == n_all}
    run_opts = ort.RunOptions()
    if cancel is not None:
        cancel.on_cancel(lambda: setattr(run_opts, "terminate", True))
    accs = [_Accumulator(f) for f, _ in pairs]
    kept: dict[str, list[np.ndarray]] = {}
    done = 0
    for idx, feeds in source.indexed_batches(batch_size, samples):
        if cancel is not None:
            cancel.check()
        span = f"{idx[0]}..{idx[-1]} of {where}"
        fout = _run(fsess, [f for f, _ in pairs], feeds, run_opts, cancel, "float model", span)
        qout = _run(qsess, [q for _, q in pairs], feeds, run_opts, cancel, "quantized model", span)
        for acc, f, q in zip(accs, fout, qout, strict=True):
            acc.update(f, q, idx)
        if metric_fn is not None:
            _keep(kept, feeds, {k: v[idx] for k, v in labels.items()}, pairs, fout, qout,
                  stacked=not source.can_batch)
        del fout, qout  # before the next batch runs (with a metric, _keep holds what it needs)
        done += len(idx)
        progress(done, max(total, done), f"Evaluating: {done}/{max(total, done)} samples")
    left_out = [source.note()] if source.note() else []
    report = EvalReport([a.result() for a in accs], done, notes=model_notes + list(source.notes) + left_out,
                        runtime=session_runtime(qsess),
                        optimization_level=_optimization_level(qsess),
                        left_out=[i for i, _ in getattr(source, "left_out", [])])
    if metric_fn is not None and done:
        report.metric = metric if isinstance(metric, str) else getattr(metric_fn, "__name__", "metric")
        read = metric_output or (names[0] if isinstance(metric, str) and names else None)
        report.metric_output, report.model_outputs = read, names
        report.float_metric, report.quant_metric = _score(metric_fn, kept, pairs, read)
    report.seconds = time.perf_counter() - t0
    return report


def check_metric_data(metric: str | MetricFn | None, model: ModelLike, data: Any, *, output: str | None = None) -> None:
    """Refuse, before any quantization or model run, evaluation data a built-in metric cannot score:
    ``top1`` without a ``gt_label`` array, with one whose length differs from the input rows, or with
    labels that are not integer class indices (:func:`workbench.core.analysis.metrics.check_metric_labels`).

    ``model`` is the float model (PreparedModel, ModelProto or path) the data is opened for; ``data``
    anything :func:`evaluate` takes. User metric functions and None pass unchecked. The metric must
    also read the model's first output (``output``: that one) as declared (``top1``: a class axis; ``detection_scores``:
    ``[N, 4 + classes, anchors]``; :func:`workbench.core.analysis.metrics.check_metric_output`).

    Raises
    ------
    DataError
        One line naming the data file and the label array, or the model and its first output; also
        the data's own refusals (missing file, an array missing for an input).
    """
    if metric is None or (not isinstance(metric, str) and metric not in METRICS.values()):
        return
    _check_first_output(metric, model, output)
    if isinstance(model, PreparedModel) or isinstance(data, DataSource):
        source = open_data_source(data, model)
    else:
        source = _open_source(data, model)
    where = str(getattr(source, "path", None) or "the evaluation data")
    check_metric_labels(metric, source.labels(), source.num_samples(), where)


def _check_first_output(metric: str | MetricFn, model: ModelLike, output: str | None = None) -> None:
    """:func:`~workbench.core.analysis.metrics.check_metric_output` on the declared shape of ``model``'s
    first graph output, or of the one named ``output`` (a model given as a path is not read here: its loader
    checks it first)."""
    proto = getattr(model, "proto", model)
    if not isinstance(proto, onnx.ModelProto) or not proto.graph.output:
        return
    out = next((o for o in proto.graph.output if o.name == output), proto.graph.output[0])
    t = out.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim] \
        if t.HasField("shape") else None
    check_metric_output(metric, out.name, dims, _label(model, "the model"))


def _optimization_level(sess: ort.InferenceSession) -> str:
    """The graph optimisation level ``sess`` was created with (e.g. ``ORT_ENABLE_ALL``)."""
    level = sess.get_session_options().graph_optimization_level
    return getattr(level, "name", str(level))


def _keep(kept, feeds, rest, pairs, fout, qout, stacked) -> None:
    for k, v in feeds.items():
        kept.setdefault(k, []).append(v[None] if stacked else v)
    for k, v in rest.items():
        kept.setdefault(k, []).append(v)
    for (f, q), a, b in zip(pairs, fout, qout, strict=True):
        kept.setdefault(REF_PREFIX + f, []).append(a)
        kept.setdefault("quant:" + q, []).append(b)


class RaggedRowsError(DataError):
    """Rows whose shapes differ beyond axis 0, which a metric over the whole set cannot take (:func:`concat_rows`)."""


def concat_rows(name: str, parts: list[np.ndarray], hint: str | None = None) -> np.ndarray:
    """``parts`` (one array per batch) joined along axis 0, as a metric gets them (0-d parts stacked).
    ``hint``: what to do, when the caller's verb cannot run without a metric (autotune).

    Raises
    ------
    RaggedRowsError
        The parts differ beyond axis 0 (rows of different lengths, e.g. variable-length sequences): a
        metric over the whole set cannot get them as one array. Names ``name`` and two shapes.
    """
    if not parts or not parts[0].ndim:
        return np.stack(parts) if parts else np.zeros(0)
    tails = {p.shape[1:] for p in parts}
    if len(tails) > 1:
        a, b = sorted(tails)[:2]
        raise RaggedRowsError(f"{name}: the rows have different shapes ([N, {', '.join(map(str, a))}] and "
                        f"[N, {', '.join(map(str, b))}]), so a task metric cannot get the whole set as one array.",
                        hint=hint or "Give rows of one shape (pad the sequences), or measure without a metric: "
                                     "the per-output SQNR and the per-unit figures take rows of any shape.")
    return np.concatenate(parts, axis=0)


def _score(fn: MetricFn, kept: dict[str, list[np.ndarray]], pairs, first: str | None = None) -> tuple[float, float]:
    """The metric on the float and the quantized outputs of ``kept``, output ``first`` put first."""
    cat = {k: concat_rows(f"output {k.removeprefix(REF_PREFIX).removeprefix('quant:')!r}"
                          if k.startswith((REF_PREFIX, "quant:")) else f"input {k!r}", v) for k, v in kept.items()}
    batch = {k: v for k, v in cat.items() if not k.startswith("quant:")}
    order = sorted(pairs, key=lambda p: p[0] != first)  # stable: the named output first, the others in order
    fouts = {f: cat[REF_PREFIX + f] for f, _ in order}
    qouts = {f: cat["quant:" + q] for f, q in order}
    try:
        return float(fn(fouts, batch)), float(fn(qouts, batch))
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - user metric code
        raise DataError(f"The metric failed ({exc.__class__.__name__}: {exc}).",
                        hint="Fix the metric function; it gets (outputs dict, batch dict).") from exc

