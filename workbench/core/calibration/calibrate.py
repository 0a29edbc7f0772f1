"""Calibration: run samples through the instrumented float model into streaming observers.

:func:`calibrate` exposes every tensor of ``plan.activations`` as an extra output of ONE
onnxruntime session (:mod:`workbench.core.calibration.instrument`), runs the data batch by batch and feeds
each output array to its observer (:func:`workbench.core.calibration.observers.make_observer`). Nothing is
kept across batches, so memory does not grow with the number of samples. While the observers
digest batch k, onnxruntime already runs batch k+1 on a helper thread (onnxruntime releases the
GIL during ``run``); cancelling stops a run in progress through ``RunOptions.terminate``.
The session has the graph optimisations of plain inference (so observed values are those of the
deployed float model) with onnxruntime's thread spinning off (see ``instrument.SPIN``).
Tensors ``y = F(x)`` of an element-wise function ``F`` (Sigmoid, Relu, SiLU, GELU, ...) whose ``x``
is observed are not fetched: their observers are derived from x's at the end (``DERIVE``,
:mod:`workbench.core.calibration.observers.derived`), which keeps onnxruntime's fusions (Sigmoid * Mul ->
QuickGelu, the Erf chain -> Gelu) in the instrumented session; nor are Concat outputs whose
inputs are all observed (their observers are merged, :mod:`workbench.core.calibration.observers.merged`).

Non-finite values are counted by the observers and left out of the ranges (nan-aware ranges);
the result lists them as ``(tensor, sample, count)`` and logs a warning, so a scale is never
NaN or Inf (failure case 05). Empty tensors are skipped (case 12); shapes may vary between
batches (case 11).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
import onnxruntime as ort

from workbench.core.calibration.instrument import InstrumentedSession, instrument, main_graph_tensors
from workbench.core.calibration.kept_outputs import KeptOutputs
from workbench.core.calibration.observers import MinMaxObserver, Observer, kernels, make_observer
from workbench.core.calibration.observers.derived import Deriver, find_derivations
from workbench.core.calibration.observers.merged import apply_merges, find_merges
from workbench.core.data.base import DataSource
from workbench.core.data.loader import open_data
from workbench.core.errors import CalibrationError, Cancelled, DataError, RecipeError, runtime_reason
from workbench.core.formats.qparams import QParams
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.wording import count

if TYPE_CHECKING:
    from concurrent.futures import Future

log = logging.getLogger(__name__)

RESULT_VERSION = 1
#: Largest default batch (samples per onnxruntime run) when the model's batch axis is dynamic.
MAX_BATCH = 32
#: Default batches are sized so that the observed tensors of one batch take about this many bytes
#: (cache-friendly reductions). One batch is observed while the next runs, so two are in memory:
#: ppocr_mobile_v2_cls (about 3.3 MiB per row) peaked at 269-278 MiB with 64 rows and 330-343 with 256
#: at 96 MiB (its onnxruntime arena kept growing over the first runs), 228-234 and 236-271 at 48 MiB,
#: for the same CPU time. Histograms keep one bin lattice
#: (:class:`~workbench.core.calibration.observers.histogram.StreamingHistogram`), so where later batches
#: start moves only values at bin edges (float32 rounding).
BATCH_BYTES = 48 << 20
#: Overlap the onnxruntime run of batch k+1 with the observer updates of batch k ...
PIPELINE = True
#: ... when one run takes at least this long (wall seconds, timed on the first batch).
MIN_OVERLAP_SECONDS = 0.005
#: Build the observers of ``y = F(x)`` (F element-wise, e.g. Sigmoid or SiLU) from x's observer and
#: those of Concat outputs from their inputs' instead of fetching them
#: (:mod:`workbench.core.calibration.observers.derived`, :mod:`~workbench.core.calibration.observers.merged`).
#: False observes every tensor.
DERIVE = True


def _samples(rows: list[tuple[int, int]]) -> str:
    """``"sample 2 (1), sample 4 (13)"``: the samples and their non-finite value counts, the first 8."""
    return ", ".join(f"sample {s} ({c})" for s, c in rows[:8]) + (" ..." if len(rows) > 8 else "")


@dataclass
class CalibrationResult:
    """Observers after calibration.

    Attributes
    ----------
    observers : dict[str, Observer]
        Tensor name -> observer (its state is the calibration cache).
    samples_seen : int
        Samples run through the model by the calibration that produced the result.
    seconds : float
        Wall time of that calibration (seconds).
    nonfinite : list of (str, int, int)
        ``(tensor, sample index, count)`` of NaN / +-Inf values seen (excluded from the ranges).
    empty : list of str
        Tensors that were empty in every sample (range 0, scale 1).
    reused : list of str
        Tensors whose observer came from ``previous`` (its statistics unchanged; its spec may differ
        in the fields that only set scale and zero point, :data:`QPARAMS_ONLY`).
    batch_size : int
        Samples per onnxruntime run used (0 when nothing was run; not saved).
    dropped : list of (str, str)
        ``(tensor, reason)`` of cache entries :meth:`from_json` left out because their range is
        not valid (NaN, min > max, a bad histogram); those tensors need recalibrating (not saved).
    data_nonfinite : list of (str, int, int)
        ``(model input, sample index, count)`` of NaN / +-Inf values in the calibration data
        itself; a tensor with non-finite values in samples where the data had none was made
        non-finite by the model (:meth:`computed_nonfinite`).
    """

    observers: dict[str, Observer]
    samples_seen: int = 0
    seconds: float = 0.0
    nonfinite: list[tuple[str, int, int]] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    batch_size: int = 0
    dropped: list[tuple[str, str]] = field(default_factory=list)
    data_nonfinite: list[tuple[str, int, int]] = field(default_factory=list)

    def computed_nonfinite(self) -> set[str]:
        """Tensors with NaN / Inf in some sample whose calibration data was finite: the model
        computes them (a ``Log`` of a 0/1 mask, a division by zero), the data is not at fault."""
        bad_samples = {s for _, s, _ in self.data_nonfinite}
        return {t for t, s, _ in self.nonfinite if s not in bad_samples}

    @property
    def warnings(self) -> list[str]:
        """Human-readable remarks: tensors the model made non-finite (each with its samples), each data input
        holding NaN / Inf (its samples), one line for the tensors those samples reach (their values are left
        out of the ranges too: the data is at fault, not each tensor), and empty tensors."""
        out = []
        by_tensor: dict[str, list[tuple[int, int]]] = {}
        for t, s, c in self.nonfinite:
            by_tensor.setdefault(t, []).append((s, c))
        computed = self.computed_nonfinite()
        for t in (t for t in by_tensor if t in computed):
            out.append(
                f"{t}: NaN/Inf computed by the model from finite calibration data: {_samples(by_tensor[t])}; "
                "left out of the range."
            )
        by_input: dict[str, list[tuple[int, int]]] = {}
        for t, s, c in self.data_nonfinite:
            by_input.setdefault(t, []).append((s, c))
        for t, rows in by_input.items():
            out.append(
                f"input {t!r} of the calibration data holds NaN/Inf: {_samples(rows)}. Check the calibration "
                "data."
            )
        reached = [t for t in by_tensor if t not in computed]
        if reached:
            shown = ", ".join(reached[:6]) + (f" and {len(reached) - 6} more" if len(reached) > 6 else "")
            out.append(
                f"NaN/Inf of the calibration data left out of the ranges of the "
                f"{count(len(reached), 'tensor')} they reach: {shown}."
            )
        for t in self.empty:
            out.append(f"{t}: empty in every sample; quantized with scale 1.")
        return out

    def qparams(self) -> dict[str, QParams]:
        """Scale / zero point per tensor; every scale is finite and > 0.

        Raises
        ------
        CalibrationError
            An observer's range is not finite (names the tensor).
        """
        out = {}
        for t, obs in self.observers.items():
            try:
                qp = obs.qparams()
            except RecipeError as exc:
                raise CalibrationError(
                    f"{t}: cannot derive quantization parameters ({exc.message}).",
                    hint="Check the calibration data of this tensor; recalibrate.",
                ) from None
            if not (np.all(np.isfinite(qp.scale)) and np.all(qp.scale > 0)):
                raise CalibrationError(
                    f"{t}: calibration gave a non-finite or zero scale.",
                    hint="Check the calibration data of this tensor; recalibrate.",
                )
            out[t] = qp
        return out

    def to_json(self) -> dict:
        """JSON-safe dict (observer states); the project file's calibration cache."""
        return {
            "version": RESULT_VERSION,
            "samples_seen": self.samples_seen,
            "seconds": self.seconds,
            "observers": {t: o.state() for t, o in self.observers.items()},
            "nonfinite": [list(r) for r in self.nonfinite],
            "empty": list(self.empty),
            "data_nonfinite": [list(r) for r in self.data_nonfinite],
        }

    @classmethod
    def from_json(cls, d: dict) -> CalibrationResult:
        """Inverse of :meth:`to_json`.

        Raises
        ------
        CalibrationError
            Malformed or newer-version cache.
        """
        if not isinstance(d, dict) or not isinstance(d.get("observers"), dict):
            raise CalibrationError(
                "Calibration cache is malformed (no 'observers').", hint="Delete the cache (recalibrate)."
            )
        if int(d.get("version", 0)) > RESULT_VERSION:
            raise CalibrationError(
                "Calibration cache is from a newer version of the workbench.",
                hint="Recalibrate, or update the workbench.",
            )
        bad = {t: why for t, st in d["observers"].items() if (why := _nonfinite_state(st))}
        obs = {}
        for t, state in d["observers"].items():
            if t in bad:
                continue
            try:
                obs[t] = Observer.from_state(state)
            except (CalibrationError, AttributeError, KeyError, TypeError, ValueError, OverflowError) as exc:
                bad[t] = f"malformed state ({exc.message if isinstance(exc, CalibrationError) else exc})"
        try:
            nonfinite = [(str(t), int(s), int(c)) for t, s, c in d.get("nonfinite", [])]
            result = cls(
                obs,
                int(d.get("samples_seen", 0)),
                float(d.get("seconds", 0.0)),
                nonfinite,
                [str(t) for t in d.get("empty", [])],
                data_nonfinite=[(str(t), int(s), int(c)) for t, s, c in d.get("data_nonfinite", [])],
            )
        except (TypeError, ValueError, OverflowError) as exc:
            raise CalibrationError(
                f"Calibration cache is malformed ({exc}).", hint="Delete the cache (recalibrate)."
            ) from None
        result.dropped.extend(bad.items())
        for tensor in list(result.observers):
            why = invalid_range(result.observers[tensor])
            if why:  # a range no calibration can give: never quantize with it
                del result.observers[tensor]
                result.dropped.append((tensor, why))
        return result


def _nonfinite_state(state: Any) -> str | None:
    """Why an observer state (JSON) holds a number :meth:`Observer.state` never writes: NaN or
    +-Inf (an empty range is written as null)."""
    todo = [state.get("data") if isinstance(state, dict) else None]
    while todo:
        value = todo.pop()
        if isinstance(value, float) and not np.isfinite(value):
            return f"its range holds {value}"
        if isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return None


def invalid_range(obs: Observer) -> str | None:
    """Why a (loaded) observer's state is not a range calibration could have produced, else None.

    Checked: a min/max state holds finite numbers with ``min <= max`` per channel / block, or
    nothing (a channel that saw no value); a histogram has a finite ``lo``, a finite ``width > 0``,
    ``vmin <= vmax`` and counts >= 0; the derived range is finite with ``rmin <= rmax``.
    """
    arrays = obs._arrays() if callable(getattr(obs, "_arrays", None)) else None
    if arrays is not None:
        cmin, cmax = (np.asarray(a, np.float64) for a in arrays)
        if cmin.shape != cmax.shape:
            return f"min has shape {cmin.shape} but max {cmax.shape}"
        empty = (cmin == np.inf) & (cmax == -np.inf)
        seen = ~empty
        if np.isnan(cmin).any() or np.isnan(cmax).any():
            return "its range holds NaN"
        if (seen & ~(np.isfinite(cmin) & np.isfinite(cmax))).any():
            return "its range holds an infinite bound"
        if (seen & (cmin > cmax)).any():
            i = int(np.flatnonzero(seen & (cmin > cmax))[0])
            return f"min {cmin.reshape(-1)[i]:.6g} > max {cmax.reshape(-1)[i]:.6g}"
    for h in getattr(obs, "hists", None) or []:
        if h.lo is None:
            continue
        if not (np.isfinite(h.lo) and np.isfinite(h.width) and h.width > 0):
            return f"histogram lo {h.lo!r} / width {h.width!r} is not a finite start and a width > 0"
        if not (np.isfinite(h.vmin) and np.isfinite(h.vmax) and h.vmin <= h.vmax):
            return f"histogram vmin {h.vmin!r} / vmax {h.vmax!r} is not a finite range with vmin <= vmax"
        if (np.asarray(h.counts) < 0).any():
            return "histogram counts are negative"
    try:
        rmin, rmax = obs.compute_range()
    except (ValueError, TypeError, ArithmeticError, CalibrationError, RecipeError) as exc:
        return f"its range cannot be computed ({exc})"
    rmin, rmax = np.asarray(rmin, np.float64), np.asarray(rmax, np.float64)
    if not (np.isfinite(rmin).all() and np.isfinite(rmax).all()):
        return "its range is not finite"
    if (rmin > rmax).any():
        return "its range has min > max"
    return None


def calibrate(
    model,
    plan,
    data,
    *,
    samples: int | None = None,
    batch_size: int | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
    previous: CalibrationResult | None = None,
    finish: bool = True,
) -> CalibrationResult:
    """Observe ``plan.activations`` over ``data`` with the float model in onnxruntime.

    Parameters
    ----------
    model : PreparedModel
        The prepared float model (not modified).
    plan : QuantPlan
        ``plan.activations``: tensor name -> QuantSpec (observer and its settings).
    data : DataSource, str, Path or dict
        Calibration samples (anything :func:`workbench.core.data.loader.open_data` accepts).
    samples : int, optional
        Use at most this many samples.
    batch_size : int, optional
        Samples per onnxruntime run. Default: up to 32 when the model's batch axis is dynamic,
        fewer when one sample's observed tensors are large (about 48 MiB per batch); 1 otherwise.
    progress : callable, optional
        ``progress(done_samples, total_samples, message)`` after each batch (total 0 if unknown).
    cancel : CancelToken, optional
        Checked between batches; cancelling also terminates the onnxruntime run in progress.
    previous : CalibrationResult, optional
        Observers of tensors whose spec is unchanged, or changed only in :data:`QPARAMS_ONLY`
        fields, are reused (copied, with the current spec) and those tensors are not run again;
        with nothing missing the model is not run at all. Never modified.
    finish : bool
        False leaves the derived and merged observers (outputs computed from another observer)
        empty: a shard of a sharded calibration, finished by :func:`merge_shards`.

    Returns
    -------
    CalibrationResult

    Raises
    ------
    Cancelled
        The cancel token fired (``previous`` is left untouched).
    CalibrationError
        A tensor is not in the main graph, or onnxruntime failed on a batch (names the samples).
    DataError
        The data does not match the model.
    """
    start = time.perf_counter()
    specs = dict(plan.activations)
    observers, reused = _reuse(specs, previous)
    missing = [t for t in specs if t not in observers]
    kept_nonfinite = [r for r in previous.nonfinite if r[0] in observers] if previous is not None else []
    kept_empty = [t for t in previous.empty if t in observers] if previous is not None else []
    if not missing:
        return _reused_result(observers, reused, previous)
    for t in missing:
        observers[t] = make_observer(specs[t], name=t)
    source = _open(data, model)
    run = _Run(model, source, {t: observers[t] for t in missing}, cancel)
    try:
        run.execute(samples, batch_size, progress)
        if finish:
            run.finish()
    finally:
        run.close()
    empty = kept_empty + [t for t in missing if observers[t].count == 0 and observers[t].nonfinite == 0]
    result = CalibrationResult(
        observers,
        run.done,
        time.perf_counter() - start,
        kept_nonfinite + run.nonfinite,
        empty,
        reused,
        run.batch_size,
        data_nonfinite=run.data_nonfinite,
    )
    if finish:  # a shard's derived observers are empty until merge_shards builds them
        for w in result.warnings:
            log.warning("Calibration: %s", w)
    return result


def calibrate_split(
    model,
    plan,
    data,
    *,
    at: int,
    samples: int | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
    fetched=frozenset(),
    finish_first: bool = False,
    kept: KeptOutputs | None = None,
) -> tuple[CalibrationResult, CalibrationResult]:
    """One pass over ``data`` (as :func:`calibrate`) that also keeps the observers as they stood after
    rows ``0 .. at - 1``: ``(first rows, unfinished as calibrate(..., finish=False) leaves them;
    every row, finished)``. No batch holds samples on both sides of ``at``. Finish the first with
    :func:`merge_shards` (``[(0, first)]``). It saves a second session and pass where a job needs
    ranges over the first rows and then over all of them (the recipe choice scores on the rows past
    ``at``). ``fetched``: tensors observed from their values even where they could be derived or
    merged from other observers (finish the first result with ``merge_shards(..., fetched=...)`` too).
    ``finish_first``: the first result comes back finished as ``merge_shards(model, plan, [(0, first)],
    fetched=fetched)`` finishes it, by this pass's own derivations: merge_shards found them in the graph
    again and built their onnxruntime session again, on the same model bytes. ``kept``: tensors of some rows
    the pass keeps from its runs (:class:`~workbench.core.calibration.kept_outputs.KeptOutputs`: the recipe
    choice's float outputs of the rows it holds out, which it ran again in a session of its own).

    ``data`` is anything :func:`workbench.core.data.loader.open_data` opens, or one of its
    DataSources (the split groups its samples).

    Raises
    ------
    CalibrationError, Cancelled, DataError
        As :func:`calibrate`; also when the data ends before row ``at``.
    """
    start = time.perf_counter()
    specs = dict(plan.activations)
    observers = {t: make_observer(spec, name=t) for t, spec in specs.items()}
    source = data if isinstance(data, DataSource) else open_data(data, model)
    run = _Run(model, source, observers, cancel, fetched)
    run.split_at = at
    run.keep(model, kept)
    try:
        run.execute(samples, None, progress)
        run.finish()
    finally:
        run.close()
    if run.snapshot is None:
        raise CalibrationError(
            f"{source.describe()}: the calibration data ended after {run.done} rows, before row {at}.",
            hint="Give more rows, or fewer held out.",
        )
    empty = _unobserved(observers)
    full = CalibrationResult(
        observers,
        run.done,
        time.perf_counter() - start,
        run.nonfinite,
        empty,
        [],
        run.batch_size,
        data_nonfinite=run.data_nonfinite,
    )
    for w in full.warnings:
        log.warning("Calibration: %s", w)
    return (_finished_snapshot(run) if finish_first else run.snapshot), full


def _finished_snapshot(run: _Run) -> CalibrationResult:
    """``run``'s snapshot finished with its derivations, as :func:`merge_shards` of it alone finishes it (the
    same observers, rows, sample count and seconds; the snapshot's observers are copies already)."""
    snap = run.snapshot
    rows = list(snap.nonfinite)
    _finish(run.deriver, run.merges, snap.observers, rows)
    return CalibrationResult(
        snap.observers,
        snap.samples_seen,
        snap.seconds,
        rows,
        _unobserved(snap.observers),
        data_nonfinite=list(snap.data_nonfinite),
    )


def _unobserved(observers: dict[str, Observer]) -> list[str]:
    """Tensors whose observer saw no value at all (neither finite nor non-finite)."""
    return [t for t, o in observers.items() if o.count == 0 and o.nonfinite == 0]


#: QuantSpec fields that only turn a range into scale / zero point: an observer's statistics (min / max,
#: histogram) do not depend on them, nor does which tensors a plan derives from others, so an observer
#: made for one value serves another. (``symmetric`` is not one: it changes which activations fold into
#: a Conv, so a fresh calibration would derive some histograms from other tensors instead.)
QPARAMS_ONLY = ("dtype", "reduce_range", "power_of_two")


def respec(plan, previous: CalibrationResult) -> CalibrationResult:
    """``previous`` re-read for ``plan.activations`` without data: each observer copied with the
    plan's current spec (as :func:`calibrate` reuses them), so a cache made under another recipe
    never gives its old dtype, symmetry or observer to the written model.

    Raises
    ------
    CalibrationError
        A tensor of the plan has no observer in ``previous`` whose statistics serve its spec (it is
        new, or its observer / symmetry / granularity changed); names the tensors.
    """
    specs = dict(plan.activations)
    missing = unserved(plan, previous)
    if missing:
        changed = [t for t in missing if t in previous.observers]
        why = f"{count(len(changed), 'tensor')} whose observer settings changed" if changed else ""
        new = len(missing) - len(changed)
        why += (" and " if why and new else "") + (f"{count(new, 'tensor')} not in it" if new else "")
        raise CalibrationError(
            f"The calibration cache has no usable ranges for {why} "
            f"({', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}).",
            hint="Give calibration data (--data) to calibrate them, or calibrate again.",
        )
    observers, reused = _reuse(specs, previous)
    return _reused_result(observers, reused, previous)


def unserved(plan, previous: CalibrationResult) -> list[str]:
    """The activations of ``plan`` that ``previous`` has no serving observer for (see :func:`_serves`):
    what a calibration with ``previous`` would run the model for. Copies nothing."""
    return [t for t, spec in plan.activations.items() if not _serves(previous.observers.get(t), spec)]


def _reused_result(
    observers: dict, reused: list[str], previous: CalibrationResult | None
) -> CalibrationResult:
    """A result made of reused observers only (the model was not run)."""
    if previous is None:
        return CalibrationResult(observers, 0, 0.0, [], [], reused)
    return CalibrationResult(
        observers,
        previous.samples_seen,
        0.0,
        [r for r in previous.nonfinite if r[0] in observers],
        [t for t in previous.empty if t in observers],
        reused,
        data_nonfinite=list(previous.data_nonfinite),
    )


def _reuse(specs: dict, previous: CalibrationResult | None) -> tuple[dict[str, Observer], list[str]]:
    """Copies of ``previous``'s observers whose spec equals the current one, or differs only in
    :data:`QPARAMS_ONLY` fields (then the copy takes the current spec: the same statistics give the
    new dtype's scale and zero point)."""
    if previous is None:
        return {}, []
    out = {}
    for t, spec in specs.items():
        obs = previous.observers.get(t)
        if _serves(obs, spec):
            out[t] = obs.copy(spec)
    return out, list(out)


def _serves(obs: Observer | None, spec) -> bool:
    """True when observer ``obs`` (None: none cached) holds the statistics ``spec`` needs: the same
    spec, or one differing only in :data:`QPARAMS_ONLY` fields."""
    return obs is not None and (obs.spec == spec or _same_statistics(obs.spec, spec))


def _same_statistics(a, b) -> bool:
    """True when specs ``a`` and ``b`` differ at most in :data:`QPARAMS_ONLY` fields."""
    neutral = dict.fromkeys(QPARAMS_ONLY)
    return a.model_copy(update=neutral) == b.model_copy(update=neutral)


def _open(data, model):
    if hasattr(data, "batches"):
        return data

    return open_data(data, model)


def _find_computed(model, specs: dict, inputs, produced, fetched=frozenset()) -> tuple[dict, dict]:
    """``(derivations, merges)`` of a calibration of ``specs``, leaving out the tensors in ``fetched``."""
    if not DERIVE:
        return {}, {}
    direct = {t for t in specs if t in inputs or t in produced}
    derivations = {y: d for y, d in find_derivations(model.proto, specs, direct).items() if y not in fetched}
    roots = {d.source for d in derivations.values()}
    merges = {
        y: m
        for y, m in find_merges(model.proto, specs, direct | set(derivations), roots).items()
        if y not in fetched
    }
    return derivations, merges


def computed_tensors(model, specs: dict) -> set[str]:
    """The tensors of ``specs`` (tensor -> QuantSpec) whose observers a calibration builds from other
    observers (element-wise functions of an observed tensor, Concat outputs) instead of fetching them."""
    inputs, _, produced = main_graph_tensors(model.proto)
    derivations, merges = _find_computed(model, specs, inputs, produced)
    return set(derivations) | set(merges)


def _derivations(
    model, observers: dict[str, Observer], inputs, produced, fetched=frozenset()
) -> tuple[Deriver, dict]:
    """The derived observers (element-wise functions of an observed tensor) and merged ones (Concat
    outputs) among ``observers``: they are computed from their sources, not fetched (except those in
    ``fetched``)."""
    specs = {t: o.spec for t, o in observers.items()}
    derivations, merges = _find_computed(model, specs, inputs, produced, fetched)
    return Deriver(model.proto, derivations, observers), merges


def _finish(
    deriver: Deriver, merges: dict, observers: dict[str, Observer], rows: list[tuple[str, int, int]]
) -> None:
    """Build the derived, then the merged observers; non-finite rows of a source count for both."""
    deriver.apply(observers)
    apply_merges(merges, observers)
    if not rows:
        return
    for d in deriver.derivations.values():
        rows += [(d.tensor, s, c) for t, s, c in rows if t == d.source]
    for m in merges.values():
        per_sample: dict[int, int] = {}
        for src in m.sources:
            for t, s, c in rows:
                if t == src:
                    per_sample[s] = per_sample.get(s, 0) + c
        rows += [(m.tensor, s, c) for s, c in per_sample.items()]


def merge_shards(
    model, plan, shards: list[tuple[int, CalibrationResult]], *, fetched=frozenset(), warn: bool = True
) -> CalibrationResult:
    """One result from the unfinished results of calibration shards (``calibrate(..., finish=False)``
    on consecutive row ranges; ``(first row, result)`` each, in row order).

    Each observed tensor's observers are merged in row order (``Observer.merge``: MinMax exactly, as
    the min / max of the shards' ranges; histogram observers re-binned onto the wider grid, within
    one bin of a single pass); constant tensors are taken from the first shard (every shard saw the
    same values); then the derived and merged observers are built from the merged sources, exactly as
    one pass would build them. Non-finite rows keep their sample index in the whole data. ``warn``:
    log the result's warnings (the recipe choice's first rows, a subset of a pass that warns, do not).

    Raises
    ------
    CalibrationError
        No shards, or shards calibrated with different specs.
    """
    if not shards:
        raise CalibrationError(
            "No calibration shards to merge.", hint="Give the sharded calibration some data."
        )
    inputs, inits, produced = main_graph_tensors(model.proto)
    first = shards[0][1]
    # copies (a histogram copies its bins directly; the state is the round trip's): the recipe choice's one shard
    # of 230 observers on nudenet_320n took 39-48 ms through the state, 4-5 ms so
    observers = {t: o.copy() for t, o in first.observers.items()}
    for _, part in shards[1:]:
        for t, obs in observers.items():
            if t in inits and t not in inputs:
                continue
            other = part.observers.get(t)
            if other is None:
                raise CalibrationError(
                    f"{t}: missing from a calibration shard.",
                    hint="Calibrate every shard with the same plan.",
                )
            obs.merge(other)
    rows = [(t, s + start, c) for start, part in shards for t, s, c in part.nonfinite]
    specs = dict(plan.activations)
    deriver, merges = _derivations(
        model, {t: observers[t] for t in specs if t in observers}, inputs, produced, fetched
    )
    _finish(deriver, merges, observers, rows)
    empty = _unobserved(observers)
    result = CalibrationResult(
        observers,
        sum(p.samples_seen for _, p in shards),
        sum(p.seconds for _, p in shards),
        rows,
        empty,
        data_nonfinite=[(t, s + start, c) for start, part in shards for t, s, c in part.data_nonfinite],
    )
    for w in result.warnings if warn else ():
        log.warning("Calibration: %s", w)
    return result


class _Run:
    """One calibration pass over the data for the observers in ``observers``."""

    def __init__(
        self, model, source, observers: dict[str, Observer], cancel: CancelToken | None, fetched=frozenset()
    ):
        self.source = source
        self.observers = observers
        self.cancel = cancel
        self.done = 0
        self.batch_size = 0
        self.nonfinite: list[tuple[str, int, int]] = []
        self.data_nonfinite: list[tuple[str, int, int]] = []
        self._seconds = 0.0
        #: :func:`calibrate_split`: the row count after which :attr:`snapshot` copies the observers
        self.split_at: int | None = None
        #: :func:`calibrate_split`: tensors of some rows kept from the runs (:meth:`keep`)
        self.kept: KeptOutputs | None = None
        self.snapshot: CalibrationResult | None = None
        inputs, inits, produced = main_graph_tensors(model.proto)
        floats = {
            onnx.TensorProto.FLOAT,
            onnx.TensorProto.FLOAT16,
            onnx.TensorProto.DOUBLE,
            onnx.TensorProto.BFLOAT16,
        }
        #: float model inputs with values but no finite one yet (all-NaN data is an error, not a range)
        self._all_nonfinite = {
            vi.name
            for vi in model.proto.graph.input
            if vi.name in inputs and vi.type.tensor_type.elem_type in floats
        }
        self._float_inputs = sorted(self._all_nonfinite)
        self._nonempty: set[str] = set()
        self.deriver, self.merges = _derivations(model, observers, inputs, produced, fetched)
        self.derived = self.deriver.derivations
        self.from_feed = [t for t in observers if t in inputs and t not in self.derived]
        consts = [t for t in observers if t in inits and t not in inputs]
        fetch = [t for t in observers if t in produced and t not in self.derived and t not in self.merges]
        lost = [t for t in observers if t not in inputs and t not in inits and t not in produced]
        if lost:
            raise CalibrationError(
                f"Tensor {lost[0]!r} (and {len(lost) - 1} more) is not produced in the main graph "
                "of the model, so it cannot be calibrated.",
                hint="Tensors inside If/Loop bodies are not calibrated; leave their nodes in float.",
            )
        for t in consts:
            observers[t].update(model.initializer(t))
        self.run_options = ort.RunOptions()
        self.session: InstrumentedSession | None = instrument(model.proto, fetch) if fetch else None
        if cancel is not None:
            opts = self.run_options
            cancel.on_cancel(lambda: setattr(opts, "terminate", True))

    def keep(self, model, kept: KeptOutputs | None) -> None:
        """Keep ``kept``'s tensors of its rows from the runs, when the session outputs them (else it stays
        incomplete)."""
        if kept is None:
            return
        if self.session is None:
            kept.usable = False
            return
        kept.check(model.proto, {o.name for o in self.session.session.get_outputs()})
        self.kept = kept

    def finish(self) -> None:
        """Build the derived, then the merged observers; non-finite rows of a source count for both."""
        _finish(self.deriver, self.merges, self.observers, self.nonfinite)

    def close(self) -> None:
        if self.session is not None:
            self.session.close()

    # -- the loop ------------------------------------------------------------------------------
    def execute(self, samples: int | None, batch_size: int | None, progress: ProgressFn | None) -> None:
        n = self.source.num_samples()
        total = min(n, samples) if n is not None and samples is not None else (n or samples or 0)
        msg = f"Calibrating {count(len(self.observers), 'tensor')}"
        if progress is not None:
            progress(0, total, msg)  # the phase shows at once (the first batch also builds the session)
        steps = self._pipeline(self._batches(samples, batch_size))
        gate = ExitStack()  # the compiled loops stay unloaded for a job too small to win their loading back
        try:
            for idx, feed, outs in steps:
                if self.done == 0 and not self._compiled_pays(idx, feed, outs, total):
                    gate.enter_context(kernels.without_loading())
                self._observe(idx, feed, outs)
                # freed before the pipeline resumes: it starts the run after next at once, and this
                # batch's activations would otherwise still be held beside two more
                del feed, outs
                self.done += len(idx)
                if self.split_at is not None and self.done == self.split_at:
                    self._take_snapshot()
                if progress is not None:
                    # an unknown length stays 0 (a busy bar, the message says what runs), not done/done = 100 %
                    progress(self.done, max(total, self.done) if total else 0, msg)
                self._check()
        finally:
            gate.close()
            steps.close()
        if self.done == 0:
            raise DataError("The calibration data yielded no samples.", hint="Check the data source.")
        bad = sorted(self._all_nonfinite & self._nonempty)
        if bad:
            raise DataError(
                f"The calibration data has no finite value for input {bad[0]!r} in {self.done} "
                "samples (all NaN/Inf): no range can be calibrated from it.",
                hint="Check how the data file was made (a failed preprocessing step?).",
            )

    def _compiled_pays(self, idx: list[int], feed: dict, outs: list[np.ndarray], total: int) -> bool:
        """Whether the job bins enough values for the compiled kernels to pay for their loading
        (:data:`~workbench.core.calibration.observers.kernels.MIN_JOB_VALUES`), estimated from the
        first batch: the values of the tensors whose observers bin them (not MinMax), per sample,
        times the samples the job will read (unknown: assume it pays)."""
        if not total:
            return True
        seen = [(t, feed[t]) for t in self.from_feed]
        if self.session is not None:
            seen += list(zip(self.session.fetch, outs, strict=True))
        binned = sum(np.size(x) for t, x in seen if not isinstance(self.observers[t], MinMaxObserver))
        return binned / max(len(idx), 1) * total >= kernels.MIN_JOB_VALUES

    def _take_snapshot(self) -> None:
        observers = {t: o.copy() for t, o in self.observers.items()}  # as merge_shards copies them
        empty = _unobserved(observers)
        self.snapshot = CalibrationResult(
            observers,
            self.done,
            0.0,
            list(self.nonfinite),
            empty,
            [],
            self.batch_size,
            data_nonfinite=list(self.data_nonfinite),
        )

    def _check(self) -> None:
        if self.cancel is not None:
            self.cancel.check()

    def _batches(self, samples: int | None, batch_size: int | None) -> Iterator[tuple[list[int], dict]]:
        """``(sample indices, feed)``; a default batch size is found by running sample 0 alone."""
        self._check()
        src = self.source
        can_batch = src.can_batch
        if batch_size is None and can_batch and self.session is not None and (samples is None or samples > 1):
            first = next(iter(src.samples(1)), None)
            if first is None:
                return
            outs = self._run(first, [0])
            yield [0], first, outs
            per_sample = max(sum(a.nbytes for a in outs), 1)
            batch_size = int(min(MAX_BATCH, max(1, BATCH_BYTES // per_sample)))
            log.debug("Calibration batch size %d (%d bytes observed per sample).", batch_size, per_sample)
            skip = {k: len(v) for k, v in first.items()}  # sample 0's rows (a sample may hold several)
        else:
            batch_size = batch_size or (MAX_BATCH if can_batch else 1)
            skip = None
        self.batch_size = batch_size
        for idx, feed in self._parts(batch_size, samples):
            if skip is not None and idx[0] == 0:
                idx, feed = idx[1:], {k: v[skip[k] :] for k, v in feed.items()}
                if not idx:
                    continue
            yield idx, feed, None

    def _parts(self, batch_size: int, samples: int | None) -> Iterator[tuple[list[int], dict]]:
        """The batches of the data; with :attr:`split_at` (a DataSource: :func:`calibrate_split`),
        none holds samples on both sides of it (samples are grouped, never sliced: one may hold
        several rows)."""
        if self.split_at is None:
            return _indexed(self.source, batch_size, samples)
        return self.source.indexed_batches(batch_size, samples, break_at=self.split_at)

    def _pipeline(self, batches) -> Iterator[tuple[list[int], dict, list[np.ndarray]]]:
        """Run batch k+1 in onnxruntime on a helper thread while batch k is observed.

        Only when a batch's run takes at least ``MIN_OVERLAP_SECONDS`` (timed on the first batch run
        here, not on the one-sample batch-size probe): handing a batch to the thread and back costs
        about 0.2 ms of CPU, a quarter of digits_cnn's runs.
        """
        if self.session is None:
            yield from ((idx, feed, []) for idx, feed, _ in batches)
            return
        for idx, feed, outs in batches:  # in turn until one batch has been run (and timed) here
            timed = outs is None
            yield idx, feed, (self._run(feed, idx) if timed else outs)
            if timed:
                break
        else:
            return
        if not PIPELINE or self._seconds < MIN_OVERLAP_SECONDS:
            yield from ((i, f, o if o is not None else self._run(f, i)) for i, f, o in batches)
            return
        # imported here: a job whose runs are too short to overlap never loads concurrent.futures
        from concurrent.futures import ThreadPoolExecutor

        item = next(batches, None)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-calib")
        pending: Future | None = None
        try:
            while item is not None:
                idx, feed, outs = item
                if outs is None:
                    pending = pending or pool.submit(self._run, feed, idx)
                    outs = pending.result()
                pending = None
                item = next(batches, None)
                if item is not None and item[2] is None:
                    pending = pool.submit(self._run, item[1], item[0])
                yield idx, feed, outs
        finally:
            if pending is not None and not pending.done():
                self.run_options.terminate = True
            pool.shutdown(wait=True)

    def _run(self, feed: dict, idx: list[int]) -> list[np.ndarray]:
        t0 = time.perf_counter()
        kept = self.kept if self.kept is not None and self.kept.wants(idx) else None
        try:
            if kept is None:
                outs = self.session.run(feed, self.run_options)
            else:  # the same session and graph: its outputs asked for beside the observed ones
                fetch = self.session.fetch
                names = fetch + [t for t in dict.fromkeys(kept.names) if t not in fetch]
                values = dict(
                    zip(names, self.session.session.run(names, feed, self.run_options), strict=True)
                )
                outs = [values[t] for t in fetch]
                kept.take(idx, feed, [values[t] for t in kept.names])
            self._seconds = time.perf_counter() - t0
            return outs
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            if self.run_options.terminate or (self.cancel is not None and self.cancel.cancelled):
                raise Cancelled() from None
            where = f"sample {idx[0]}" if len(idx) == 1 else f"samples {idx[0]}..{idx[-1]}"
            raise CalibrationError(
                f"onnxruntime failed on calibration {where}: {runtime_reason(exc)}",
                hint="Check that these samples match the model's inputs (shapes, and values such "
                "as indices in the range the model takes).",
            ) from None

    # -- observing -----------------------------------------------------------------------------
    def _observe(self, idx: list[int], feed: dict, outs: list[np.ndarray]) -> None:
        for t in self._float_inputs:
            x = feed.get(t)
            if x is not None and np.size(x) and not np.isfinite(x).all():
                x = np.asarray(x)
                self.data_nonfinite.extend(
                    (t, s, c) for s, c in _per_sample(x, idx, int(np.size(x) - np.isfinite(x).sum()))
                )
        for t in [t for t in self._all_nonfinite if t in feed and np.size(feed[t])]:
            self._nonempty.add(t)
            if np.isfinite(feed[t]).any():
                self._all_nonfinite.discard(t)
        for t in self.from_feed:
            self._update(t, feed[t], idx)
        if self.session is not None:
            for t, x in zip(self.session.fetch, outs, strict=True):
                self._update(t, x, idx)

    def _update(self, t: str, x: np.ndarray, idx: list[int]) -> None:
        if x.size == 0:
            return
        obs = self.observers[t]
        before = obs.nonfinite
        obs.update(x)
        if obs.nonfinite != before:
            self.nonfinite.extend((t, s, c) for s, c in _per_sample(x, idx, obs.nonfinite - before))


def _per_sample(x: np.ndarray, idx: list[int], total: int) -> list[tuple[int, int]]:
    """Non-finite counts per sample when axis 0 is the batch axis, else all on the first sample."""
    if len(idx) == 1 or x.ndim == 0 or x.shape[0] != len(idx):
        return [(idx[0], total)]
    bad = (~np.isfinite(x)).reshape(len(idx), -1).sum(axis=1)
    return [(s, int(c)) for s, c in zip(idx, bad, strict=True) if c]


def _indexed(src: Any, batch_size: int, samples: int | None) -> Iterator[tuple[list[int], dict]]:
    if hasattr(src, "indexed_batches"):
        yield from src.indexed_batches(batch_size, samples)
        return
    i = 0
    for feed in src.batches(batch_size):
        k = len(next(iter(feed.values()))) if feed and src.can_batch else 1
        if samples is not None and i >= samples:
            return
        yield list(range(i, i + k)), feed
        i += k
