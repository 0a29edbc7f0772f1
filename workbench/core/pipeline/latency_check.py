"""The latency check: measure the written model against its float model, warn when slower.

Runs last but one in :data:`workbench.core.pipeline.quantize.QUANTIZE_PASSES` when the job asks for it
(``quantize(..., latency_check=True)``; the CLI's ``quantize`` does unless ``--no-latency-check``).
Both models run on the first calibration sample (a random sample when the job has no data) in
onnxruntime's CPU provider at 1 thread (:mod:`workbench.core.runtime.latency`, cached on disk per
pair of models unless measured on a loaded machine), compared by thread CPU time. The pass never
changes the model: it reports the ratio as an INFO issue
(``IssueCode.LATENCY``) and, when the quantized model measured slower than float, a WARNING
(``IssueCode.SLOWER_THAN_FLOAT``) with the ratio; a ratio up to :data:`NOISE` is measurement noise and
the note says so instead. A slowdown above :data:`NOISE` is then handed to
:mod:`workbench.core.pipeline.latency_fallback`, which rewrites the model: with a slowdown of at least
:data:`MIN_SLOWDOWN_S` per run (or a float run of at least :data:`MIN_FLOAT_S`) it tries islands left float
(:func:`worth_rewriting`); a smaller one (a model that runs in microseconds, where the input Q and output DQ
alone outweigh int8: digits_mlp 1.22-1.27x of 7 us, digits_transformer 1.07-1.09x of 0.088 ms, where no
placement short of float measured faster) leaves every unit float, with one warning that quantization does
not pay at this size. This pass's own warning about such a slowdown ("written as the recipe asks") stands
only where the fallback does not apply (a dynamic or weight-only recipe, ``guard=False``, or units the
recipe names itself). Nothing slower than float is written silently; a slowdown reused from the cache says
so and how to measure again.

A measurement that is not reliable (:attr:`~workbench.core.runtime.latency.LatencyComparison.reliable`:
taken at a load average above one runnable task per core) decides only a clear slowdown (:func:`decisive`:
at least :data:`LOADED_DECISIVE`, which thread CPU time keeps under load); a smaller slowdown measured under
load, of any size, is written as planned with one warning (:func:`unreliable_slowdown`) that names the load
average and how to measure again (a quiet measurement can leave units float).
Cost: 2 s of running plus two session creations (3.7-4.8 s on ppocrv4_rec and ppocr_mobile_v2_cls
on this loaded 2-core machine; at most 301 runs of each model, so milliseconds for tiny models), once per
pair of models.
"""

from __future__ import annotations

import numpy as np

from workbench.core.data.loader import open_data, open_data_source
from workbench.core.errors import WorkbenchError
from workbench.core.io.external import has_lazy
from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.passes import Job, PassResult
from workbench.core.progress import no_progress, one_step
from workbench.core.runtime.latency import REMEASURE_ENV, LatencyComparison, compare
from workbench.core.wording import count

#: Above this quantized / float ratio the check warns (1.0: any measured slowdown) ...
SLOWER_THAN = 1.0
#: ... and the latency fallback tries islands left float when the slowdown is at least this many seconds per
#: run; a smaller one (a model that runs in microseconds, where the input Q and output DQ alone
#: outweigh int8) has every unit left float instead, without trials.
MIN_SLOWDOWN_S = 50e-6
#: A model whose float run takes at least this long is not a microsecond model: any slowdown above
#: :data:`NOISE` has islands tried too (ppocr_mobile_v2_cls: 0.84 ms float, 1.055x quantized, 46 us).
MIN_FLOAT_S = 0.5e-3
#: Ratio above which a slowdown is not measurement noise (the fastest-run ratio of one pair moved by up
#: to 1.5 % between measurements on this machine).
NOISE = 1.02
#: How the latency check's note (:func:`describe`) starts: the figure of the model it measured.
NOTE_HEAD = "latency quantized / float = "
#: How a user measures a pair again instead of reusing its cached figure (the CLI flag sets the variable).
REMEASURE_HOW = f"--remeasure-latency ({REMEASURE_ENV}=1 in the app's environment)"


def shown_ratio(lat: LatencyComparison) -> float:
    """The ratio as the messages print it (2 decimals): the noise decisions compare this, so a ratio
    printed as 1.02 is never called both noise and a slowdown."""
    return round(lat.ratio, 2)


def slower_than_noise(lat: LatencyComparison) -> bool:
    """True when ``lat`` (quantized vs float) is slower than float beyond :data:`NOISE` (as the messages print
    the ratio); up to it the two models cannot be told apart."""
    return shown_ratio(lat) > NOISE


def worth_rewriting(lat: LatencyComparison) -> bool:
    """True when ``lat`` is slower than float by a margin islands left float can win back
    (:func:`slower_than_noise`, and at least :data:`MIN_SLOWDOWN_S` per run or a float run of at least
    :data:`MIN_FLOAT_S`): the latency fallback tries islands left float one by one."""
    if not slower_than_noise(lat):
        return False
    return lat.timed_quant_s - lat.timed_float_s >= MIN_SLOWDOWN_S or lat.timed_float_s >= MIN_FLOAT_S


def too_small_to_try(lat: LatencyComparison) -> bool:
    """True when ``lat`` is slower than float beyond :data:`NOISE` but by less than :func:`worth_rewriting`
    asks (a model that runs in microseconds): no placement short of float pays, so the latency fallback
    leaves every unit float without trials."""
    return slower_than_noise(lat) and not worth_rewriting(lat)


#: A slowdown measured under load still decides when its ratio is at least this: the ratio of thread CPU
#: time moves little with load (ppocr_mobile_v2_cls, all 135 units int8: 1.33-1.36x float at load average
#: 6.7-10.7 on 2 cores, 1.39-1.43x at 0.9), so a clear slowdown is the model's, a small one may be the load's
LOADED_DECISIVE = 1.25


def decisive(lat: LatencyComparison) -> bool:
    """True when ``lat`` may decide: measured reliably, or under load with a ratio of at least
    :data:`LOADED_DECISIVE` (as the messages print it)."""
    return lat.reliable or shown_ratio(lat) >= LOADED_DECISIVE


def acts_on(lat: LatencyComparison) -> bool:
    """True when ``lat`` may change the model: :func:`slower_than_noise` and :func:`decisive` (the latency
    fallback tries islands left float when :func:`worth_rewriting`, leaves every unit float when
    :func:`too_small_to_try`)."""
    return decisive(lat) and slower_than_noise(lat)


def loaded_slowdown(lat: LatencyComparison) -> bool:
    """True when ``lat`` is a slowdown the latency fallback would act on (:func:`slower_than_noise`) but measured
    under load too small to decide (not :func:`decisive`): the check warns with :func:`unreliable_slowdown`
    instead."""
    return slower_than_noise(lat) and not decisive(lat)


def unreliable_slowdown(lat: LatencyComparison, islands: int = 0, planned: float | None = None) -> str:
    """The warning for a slowdown measured on a loaded machine: no (further) island was left float for it, and how
    to measure again (a measurement under load is never cached, so running the command again measures again).
    ``islands``: how many islands the latency fallback had already left float when ``lat`` was measured, on a
    first measurement of ``planned`` (quantized / float) that decided under load; 0: ``lat`` is of the model as
    planned (units the latency placement kept float stay float either way)."""
    if islands:
        what = (f"with {count(islands, 'island')} left float the quantized model measured {lat.ratio:.2f}x the float "
                f"model's latency ({planned:.2f}x as planned), which load alone can cause, so no further island is "
                "left float")
    else:
        what = (f"the quantized model measured {lat.ratio:.2f}x the float model's latency, which load alone can "
                "cause, so it is written as planned, with no island of units left float for the slowdown")
    return (f"the latency could not be measured reliably (load average {lat.load:.1f} on {lat.cores} cores): {what}; "
            "run the command again when the machine is quieter (a measurement under load is not cached: it "
            "measures again), or pass --no-latency-check to skip the check")


def reused_slowdown(lat: dict | None) -> tuple[str, str]:
    """For a latency check reused from an earlier run (``lat``: its :class:`LatencyComparison` as a dict, None
    or {} when it did not run): (``": 2.09x float"`` or "" without figures or with a zero timing, the warning when that ratio is a
    slowdown above :data:`NOISE` or ""). The ratio is the one the check decides on (thread CPU time)."""
    try:
        comparison = LatencyComparison(**(lat or {}))
    except TypeError:  # no figures: the check did not run
        return "", ""
    if not comparison.measured:  # a zero timing is no ratio (it printed 0.00x float)
        return "", ""
    ratio = f": {comparison.ratio:.2f}x float"
    if shown_ratio(comparison) <= NOISE:
        return ratio, ""
    load = f" (measured at {comparison.unreliable_because()}, which load alone can cause)" \
        if not comparison.reliable else ""
    if not worth_rewriting(comparison):  # a microsecond model: keeping units float cannot win much back
        return ratio, (f"quantization does not pay at this size{load}: "
                       f"{(comparison.timed_quant_s - comparison.timed_float_s) * 1e6:.0f} us slower per run, the "
                       "Q/DQ transitions cost more than the integer kernels save; keep the float model for speed")
    return ratio, (f"that is slower than the float model{load}: keep more of it float (--exclude, or exclude nodes "
                   f"in the app's Inspector) or keep the float model for speed; {REMEASURE_HOW} measures again")


def latency_feed(model: PreparedModel, data) -> dict[str, np.ndarray]:
    """The feed latency is measured on: the first sample of ``data`` (path, spec or DataSource),
    or one random sample (symbolic dimensions at the data loader's defaults) when ``data`` is None.

    Raises
    ------
    DataError
        The data does not fit the model, or holds no sample.
    """
    source = open_data_source(data, model) if data is not None else open_data({"kind": "random", "count": 1}, model)
    for feed in source.samples(1):
        return feed
    raise WorkbenchError(f"{source.describe()}: no sample to measure latency on.",
                         hint="Pass calibration data with at least one sample, or --no-latency-check.")


def describe(lat: LatencyComparison, feed: dict[str, np.ndarray]) -> str:
    """One line: the ratio (thread CPU time), both latencies in ms, the wall-clock ratio, the runs, the
    feed's shapes, the load average, and whether the figure was reused or is too unsteady to cache."""
    shapes = ", ".join(f"{k} {list(v.shape)}" for k, v in feed.items())
    if lat.cached:
        how = f"reused from an earlier measurement of the same pair; {REMEASURE_HOW} measures again"
    else:
        how = f"measured in {lat.cost_s:.1f} s" if lat.cost_s >= 0.1 else "measured in under 0.1 s"
    clock = "thread CPU time" if lat.cpu_recorded else "wall clock"
    wall = (f"; wall clock {lat.wall_ratio:.2f} ({lat.quant_s * 1e3:.3f} ms vs {lat.float_s * 1e3:.3f} ms)"
            if lat.cpu_recorded else "")
    load = (f", load average {lat.load:.1f} on {lat.cores} cores, median run {lat.spread:.2f}x the 5th percentile"
            if lat.cores else "")
    text = (f"{NOTE_HEAD}{lat.ratio:.2f} ({clock}: {lat.timed_quant_s * 1e3:.3f} ms vs "
            f"{lat.timed_float_s * 1e3:.3f} ms{wall}; 5th percentile of {lat.runs} alternating runs, onnxruntime CPU, 1 "
            f"thread, {shapes}{load}; {how})")
    if not lat.reliable:
        text += (f"; not cached: taken at {lat.unreliable_because()} (a loaded machine slows the two models "
                 "unequally), measure again when the machine is quieter")
    return text


def written_note(note: PlanIssue, what: str) -> PlanIssue:
    """The latency check's note (:func:`describe`) on a model the latency fallback wrote in place of the one
    planned, headed ``latency of the model written (WHAT) / float = R``: next to the planned model's note
    ("latency quantized / float = 1.11") it read as a second figure of the same model (digits_cnn written as
    the float model printed "latency quantized / float = 1.00" right before "as quantized the model measured
    1.11x"). ``what``: what that model is ("the float model: every unit left float")."""
    return PlanIssue(note.node, note.severity, f"latency of the model written ({what}) / float = "
                     f"{note.message.removeprefix(NOTE_HEAD)}", code=note.code)


class LatencyCheck:
    """Measure the written model against the float model it came from (see the module docstring)."""

    name = "latency-check"

    def applies(self, job: Job) -> bool:
        """True when the job asks for the check and wrote a model with a unit quantized: a model with none (the
        recipe excludes every unit) is the float model, and timing it against itself only printed a ratio of
        1.00 under the quantized model's name; the latency fallback's trials are timed all the same
        (``Job.time_float``)."""
        return job.latency_check and job.written is not None and (job.time_float or _quantizes(job))

    def run(self, job: Job) -> PassResult:
        float_model = job.input_model or job.model
        if has_lazy(float_model.proto) or has_lazy(job.written.proto):
            return PassResult(False, [_skipped("its weights stay in the external data file (too big to copy)")])
        done = one_step(job.progress or no_progress, "Latency check: measuring the quantized model against float")
        try:
            feed = latency_feed(float_model, job.data)
            lat = compare(float_model.proto, job.written.proto, feed)  # weights as buffers, not serialised
        except WorkbenchError as exc:
            return PassResult(False, [_skipped(str(exc))])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            return PassResult(False, [_skipped(_not_run(float_model, job.data, exc))])
        finally:
            done()
        if not lat.measured:  # a zero timing (a replaced compare): no ratio, never 0.00x
            return PassResult(False, [_skipped("the clocks read no time for a model's runs")])
        job.latency = lat
        noise = SLOWER_THAN < lat.ratio and shown_ratio(lat) <= NOISE  # two runs of one pair differ by this much
        slower = lat.ratio > SLOWER_THAN and not noise
        warn = worth_rewriting(lat)
        note = describe(lat, feed)
        if noise:
            note += (f"; as fast as float within measurement noise (ratios up to {NOISE:.2f} vary from one "
                     "measurement to the next)")
        small = slower and not warn
        slowdown = (f"{(lat.timed_quant_s - lat.timed_float_s) * 1e6:.0f} us slower per run, below the "
                    f"{MIN_SLOWDOWN_S * 1e6:.0f} us, or the {(NOISE - 1) * 100:.0f} % of a model over "
                    f"{MIN_FLOAT_S * 1e3:.1f} ms, that trying islands left float needs")
        quantized = job.plan.quantizes_any()
        if small and not quantized:  # the warning below says it otherwise
            note += f"; {slowdown}"
        issues = [PlanIssue("", Severity.INFO, note, code=IssueCode.LATENCY)]
        # a slowdown the latency fallback would act on, measured under load too small to decide: one warning
        # (measuring again when quieter can change the outcome, microsecond models too: every unit float)
        if slower and quantized and loaded_slowdown(lat):
            issues.append(PlanIssue("", Severity.WARNING, unreliable_slowdown(lat), code=IssueCode.SLOWER_THAN_FLOAT))
            return PassResult(False, issues)
        reused = f" (reused from an earlier measurement; {REMEASURE_HOW} measures again)" if lat.cached else ""
        loaded = f" (at {lat.unreliable_because()}, which can move the figure)" if not lat.reliable else ""
        if small and quantized:  # replaced by the latency fallback's warning when it leaves every unit float
            issues.append(PlanIssue(
                "", Severity.WARNING,
                f"quantization does not pay at this size: the quantized model measured {lat.ratio:.2f}x the float "
                f"model's latency{reused or loaded} ({slowdown}; the Q/DQ transitions cost more than the integer kernels save); "
                "written as the recipe asks, keep the float model for speed", code=IssueCode.SLOWER_THAN_FLOAT))
        if warn:
            issues.append(PlanIssue(
                "", Severity.WARNING,
                f"the quantized model measured {lat.ratio:.2f}x the float model's latency (slower than float) at "
                f"these shapes{reused}; keep more of it float (--exclude, or a recipe with fewer op_types), or keep the "
                f"float model for speed", code=IssueCode.SLOWER_THAN_FLOAT))
        return PassResult(False, issues)


def _quantizes(job: Job) -> bool:
    """True when ``job``'s plan leaves a unit quantized (a model written without one holds no Q/DQ)."""
    return job.plan is None or job.plan.quantizes_any()


def unknown_dims(model: PreparedModel) -> list[str]:
    """The names of the model's input dims that are not fixed sizes ("batch", "height", ...; "?" for an
    unnamed one), in input order, each once: the dims a random sample sets to 1."""
    names: list[str] = []
    for inp in model.inputs:
        for d in inp.shape:
            name = d if isinstance(d, str) and d else (None if isinstance(d, int) and d > 0 else "?")
            if name and name not in names:
                names.append(name)
    return names


def _not_run(model: PreparedModel, data, exc: BaseException) -> str:
    """Why the latency check could not measure: onnxruntime failed to run a model on the feed. Without data
    the feed is one random sample with the model's unknown dims set to 1, which a model whose shapes must
    agree (a detector's Concat of feature maps) cannot run: said in those words, with what to do."""
    reason = " ".join(str(exc).split()).removeprefix("[ONNXRuntimeError] : 1 : FAIL : ")
    dims = unknown_dims(model)
    if data is not None or not dims:
        return f"onnxruntime could not run it: {reason}"
    return (f"without --data it runs on a random sample with the model's unknown dims ({', '.join(dims)}) set to "
            f"1, and the model cannot run at that size (onnxruntime: {reason}); give --data (samples of "
            "the real input size) to measure it")


def _skipped(why: str) -> PlanIssue:
    return PlanIssue("", Severity.INFO, f"latency not measured: {why}", code=IssueCode.LATENCY_NOT_MEASURED)
