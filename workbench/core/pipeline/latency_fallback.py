"""Latency fallback: leave float the quantized islands whose Q/DQ measured not to pay.

Runs right after the latency check (:mod:`workbench.core.pipeline.latency_check`) when the job asks
for it (``quantize(..., latency_check=True)``; the CLI's default) and the written model measured
slower than its float model beyond the noise, reliably (see :func:`does_not_pay`: a measurement taken under
load decides only a clear slowdown, else the latency check warns instead). The quantized units are
grouped into islands (:func:`workbench.core.planning.island_guard.quantized_islands`: units that
share an activation tensor, so one island is what runs between one set of Q and DQ transitions).

A slowdown too small for trials (:func:`~workbench.core.pipeline.latency_check.too_small_to_try`: under
``MIN_SLOWDOWN_S`` per run on a float run under ``MIN_FLOAT_S``, a model that runs in microseconds) leaves
every island float at once, written and measured like the last trial below and kept whatever it measures
(digits_mlp: every unit int8 1.26-1.31x float, the best partial placement 1.10x; digits_transformer 1.09-1.17x,
the best 1.04x: benchmarks/results/fusion_latency.md), with one warning that quantization does not pay at this
size and a note per island (``IssueCode.LATENCY_KEPT_FLOAT``, its nodes in the recipe as below). Islands the
recipe names keep this from happening: the model is then written as planned with the check's warning.

Otherwise the pass tries cheaper placements, each written by the pipeline again with the job's
calibration reused (no new calibration pass) and measured against float the same way:

1. with more than one island, each of the :data:`MAX_SINGLE_TRIALS` smallest islands left float in
   turn (greedy: an island stays float when the whole model's ratio fell by at least
   :data:`IMPROVES_BY`), stopping once the model is no longer slower than float;
2. if it is still slower, every remaining island float. With no island left quantized the whole
   model runs as the float model does, so this placement is kept once measured (its ratio, 1.0 up to
   the noise of a loaded machine, is reported); with islands the recipe names still quantized it is
   kept only when it measured faster, like the single trials.

A trial measured under load (not reliable) is not compared: the placement before it stays, and the
note says how many trials were left out and at what load (the every-island-float trial excepted: the
first, reliable, measurement decided it). The best placement measured is the one written; each island left float is reported as a warning
(``IssueCode.LATENCY_KEPT_FLOAT``, with the ratio before and after) and its nodes are added to the
result's recipe (``QuantizeResult.recipe``), so a saved project replays the same model on any
machine without measuring again. Islands holding a node the recipe names itself are never tried.
When the placement kept was measured under load still slower than float, but by less than decides under load
(:func:`~workbench.core.pipeline.latency_check.loaded_slowdown`), no further island is tried, and its own
check's warning ("written as planned") is replaced by one naming the islands left float and both ratios
(ppocr_mobile_v2_cls at load average 6.2 on 2 cores: 1.40x as planned, 1.12x with one island float).
When the placement kept still measured slower than float beyond the noise (reliably, or clearly under load), its
check's warning (which reads as if the recipe's placement were written) is replaced by one that names the islands
left float, the units still quantized, both ratios, why no further island was left float (a remaining slowdown of
microseconds: digits_transformer 1.63x as planned, 1.33x with 2 of its 5 islands float, 36 us a run) and what to do.

Why the whole model is measured and not each unit: the cost of a placement is mostly its
transitions and the layout changes onnxruntime inserts around integer kernels (Transposes to NHWC
for QLinearConv, Q at inputs, DQ at outputs), which no one-op probe prices. Measured on
ppocr_mobile_v2_cls (onnxruntime 1.32, x86_64 AVX512-VNNI, 2 shared cores under heavy load):
1.31x float as planned, 1.12x with only its first Conv quantized, so no placement short of float
pays at 1x3x48x192.

Cost: one re-write and one latency measurement (up to 2 s of runs, at most 301 of each model, plus two
session creations) per trial, at most ``MAX_SINGLE_TRIALS + 1`` trials, only for models that measured
slower than float; cached on disk like the latency check (when measured on a quiet machine), so a
second run of the same job measures nothing. When no unit is left quantized, a warning says that the
file written is the float model and how to write it quantized anyway.

When a placement other than the planned one is written, the issues read measured, decided, written: the
latency check's note on the model as planned ("latency quantized / float = 1.11") stays first, this pass's
warnings follow, and the written model's own note comes last under its own name ("latency of the model written
(the float model: ...) / float = 1.00",
:func:`~workbench.core.pipeline.latency_check.written_note`); digits_cnn printed the float model's 1.00 under
the quantized model's name right before "as quantized the model measured 1.11x".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.pipeline.latency_check import (
    REMEASURE_HOW,
    acts_on,
    loaded_slowdown,
    slower_than_noise,
    too_small_to_try,
    unreliable_slowdown,
    worth_rewriting,
    written_note,
)
from workbench.core.pipeline.passes import Job, Pass, PassResult, run_passes
from workbench.core.planning.island_guard import named_by_recipe, quantized_islands
from workbench.core.recipe.spec import PlanMode
from workbench.core.runtime.latency import LatencyComparison
from workbench.core.wording import count, island_of

log = logging.getLogger(__name__)

#: Islands tried one at a time (smallest first) before every island is tried float together.
MAX_SINGLE_TRIALS = 3
#: A trial is kept only when the whole model's ratio fell by at least this fraction (measurement noise).
IMPROVES_BY = 0.03


def does_not_pay(lat: LatencyComparison | None) -> bool:
    """True when ``lat`` says the quantized model is slower than float beyond the noise, measured reliably or
    clearly slower under load (:func:`~workbench.core.pipeline.latency_check.acts_on`); a smaller slowdown
    measured under load is reported by the latency check, not rewritten."""
    return lat is not None and acts_on(lat)


def islands_may_pay(lat: LatencyComparison | None) -> bool:
    """:func:`does_not_pay`, by a margin islands left float can win back
    (:func:`~workbench.core.pipeline.latency_check.worth_rewriting`): the trials go on while it holds."""
    return does_not_pay(lat) and worth_rewriting(lat)


class LatencyFallback:
    """Leave float the islands whose Q/DQ measured not to pay (see the module docstring).

    Parameters
    ----------
    passes : callable returning the passes that write and measure one trial (the quantize pipeline
        without this pass; a callable so that the pipeline's list can name this pass itself).
    """

    name = "latency-fallback"

    def __init__(self, passes: Callable[[], Sequence[Pass]]):
        self._passes = passes

    def applies(self, job: Job) -> bool:
        return (job.latency_check and job.guard and job.written is not None and job.plan.mode == PlanMode.STATIC
                and does_not_pay(job.latency))

    def run(self, job: Job) -> PassResult:
        every = quantized_islands(job.plan)
        islands = [g for g in every
                   if not any(named_by_recipe(job.user_recipe, n, job.plan.units[n].op_type) for n in g)]
        if not islands:
            return PassResult(False)
        if too_small_to_try(job.latency):
            return self._every_island_float(job, islands, len(islands) == len(every))
        start = job.latency.ratio
        best, kept, tried = job, [], 0
        self._loaded: list[LatencyComparison] = []
        # a first measurement taken under load (decisive: a clear slowdown) has its trials compared under load
        # too; after a reliable one, a trial taken under load is not compared
        self._first = job.latency
        singles = islands[:MAX_SINGLE_TRIALS] if len(islands) > 1 else []
        total = len(singles) + 1
        for group in singles:
            if not islands_may_pay(best.latency):
                break
            trial, tried = self._trial(job, kept + [group], tried, total), tried + 1
            if self._steady(trial) and trial.latency.ratio <= best.latency.ratio * (1 - IMPROVES_BY):
                best, kept = trial, kept + [group]
        rest = [g for g in islands if g not in kept]
        if rest and islands_may_pay(best.latency):
            # with no island left quantized it is the float model's own graph, with no transition to pay for:
            # kept whatever the noise of its measurement (which is still reported)
            all_float = len(islands) == len(every)
            trial, tried = self._trial(job, kept + rest + [_held(job)], tried, total, islands=len(kept + rest)), tried + 1
            # (all float: decided by the first measurement; the trial's own figure is only shown)
            if trial is not None and (all_float or (self._steady(trial)
                                                    and trial.latency.ratio <= best.latency.ratio * (1 - IMPROVES_BY))):
                best, kept = trial, kept + rest
        if job.progress is not None:
            job.progress(total, total, "Latency fallback: done")
        if best is job:
            return PassResult(False, [_kept_as_planned(tried, start, self._loaded)])
        all_float = not best.plan.quantizes_any()
        written = _adopt(job, best, _float_model() if all_float else _with_islands(best, len(kept)))
        issues = [_kept_issue(g, start, best.latency.ratio, len(kept)) for g in kept]
        if loaded_slowdown(best.latency):
            # the kept trial's check, measured under load, said the model is written as planned: replaced by what
            # this pass did (islands left float, then no further one on that figure; with none left quantized,
            # the every-unit-float warning below says it all: a float model's figure against float is noise)
            job.issues = [i for i in job.issues if i.code != IssueCode.SLOWER_THAN_FLOAT]
            if not all_float:
                issues.append(PlanIssue("", Severity.WARNING, unreliable_slowdown(best.latency, len(kept), start),
                                        code=IssueCode.SLOWER_THAN_FLOAT))
        elif not all_float and slower_than_noise(best.latency):
            # the kept trial's check said its model is "written as the recipe asks" (or to keep more of it float)
            # as if nothing were float: replaced by one warning on the placement written
            job.issues = [i for i in job.issues if i.code != IssueCode.SLOWER_THAN_FLOAT]
            issues.append(_still_slower_issue(job, len(kept), start))
        if all_float:
            issues.append(_all_float_issue(start, self._first))
        return PassResult(True, issues + written)

    def _every_island_float(self, job: Job, islands: list[list[str]], all_float: bool) -> PassResult:
        """A microsecond model's slowdown (:func:`~workbench.core.pipeline.latency_check.too_small_to_try`): every
        island float at once, kept whatever it measures (the float model's graph, nothing to pay for); nothing
        when the recipe names a unit of an island (``all_float`` False: those stay quantized, so the model
        cannot run as float does) or the placement could not be measured."""
        if not all_float:
            return PassResult(False)
        first = job.latency
        trial = self._trial(job, islands + [_held(job)], 0, 1, islands=len(islands))
        if job.progress is not None:
            job.progress(1, 1, "Latency fallback: done")
        if trial is None:
            return PassResult(False)
        # the float model's figure against float is noise: no slower-than-float warning of its own
        trial.issues = [i for i in trial.issues if i.code != IssueCode.SLOWER_THAN_FLOAT]
        written = _adopt(job, trial, _float_model())
        return PassResult(True, [_small_island_note(g, first.ratio) for g in islands] + [_too_small_issue(first)]
                          + written)

    def _trial(self, job: Job, groups: list[list[str]], done: int, total: int,
               islands: int | None = None) -> Job | None:
        """The job written again with ``groups`` float (calibration reused), measured; None when unmeasured.
        ``islands``: how many of ``groups`` are islands (the progress says so; the default: all)."""
        if job.cancel is not None:
            job.cancel.check()  # raises Cancelled between trials
        if job.progress is not None:
            shown = len(groups) if islands is None else islands
            job.progress(done, total, f"Latency fallback: measuring with {count(shown, 'island')} float")
        recipe = job.user_recipe.with_excluded([n for g in groups for n in g])
        trial = Job(job.input_model or job.model, recipe, recipe, data=job.data, samples=job.samples,
                    cancel=job.cancel, previous=job.calibration, guard=job.guard,
                    bias_correction=job.bias_correction, latency_check=True, input_model=job.input_model,
                    bias_means=job.bias_means, placement_capped=job.placement_capped, time_float=True)
        run_passes(trial, self._passes())
        if trial.latency is None:
            log.info("latency fallback: a trial was not measured")
            return None
        return trial

    def _steady(self, trial: Job | None) -> bool:
        """True when ``trial`` may be compared: measured reliably, or under load like the first measurement
        (which decided under load, :func:`~workbench.core.pipeline.latency_check.decisive`: its trials are
        compared by the same rule, so a loaded machine does not jump to every island float); a trial under load
        after a reliable first measurement is noted and decides nothing."""
        if trial is None:
            return False
        if not trial.latency.reliable and self._first.reliable:
            log.info("latency fallback: a trial measured at %s, not used", trial.latency.unreliable_because())
            self._loaded.append(trial.latency)
            return False
        return True


def _adopt(job: Job, trial: Job, what: str) -> list[PlanIssue]:
    """``job`` takes over ``trial`` (:meth:`Job.adopt`), and its issues: the trial's plan, guard and latency
    notes replace the first run's, except the latency placement's (the trial's recipe keeps those units
    float, so it does not note them again) and the first run's latency note, which comes before them: what was
    measured first, the pass's decision after it (its issues), and last the trial's latency note, returned as
    :func:`~workbench.core.pipeline.latency_check.written_note` of ``what`` for the pass to put after its
    decision, so the lines read measured, decided, written."""
    placed = _placement_issues(job)
    measured = [i for i in job.issues if i.code == IssueCode.LATENCY]
    job.adopt(trial)
    own = [i for i in trial.issues if i.code == IssueCode.LATENCY]
    rest = [i for i in trial.issues if i.code != IssueCode.LATENCY]
    job.issues = placed + measured + rest
    return [written_note(i, what) for i in own]


def _float_model() -> str:
    """What the model written is when every unit is left float (:func:`_adopt`'s ``what``)."""
    return "the float model: every unit left float; any difference from 1.00 is measurement noise"


def _with_islands(trial: Job, islands: int) -> str:
    """What the model written is with ``islands`` islands left float (:func:`_adopt`'s ``what``)."""
    quantized, counted = trial.plan.quantized_count()
    return (f"{count(islands, 'island')} left float, {quantized} of {count(counted, 'node unit')} "
            "quantized")


def _placement_issues(job: Job) -> list:
    """The latency placement's notes among ``job.issues``: one per unit it kept float, and its note on the units
    measured slower but quantized to keep its int8 share (``job.placement_notes``), which a trial's recipe does
    not bring back."""
    return [i for i in job.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT
            and (i.node in job.placed_float or any(i is n for n in job.placement_notes))]


def _held(job: Job) -> list[str]:
    """Units the job's plan left float by a rule tied to their neighbours (a Conv whose output stays float for
    its consumers), not by the recipe: they would be quantized again once those neighbours are float, so a
    placement with every island float names them too."""
    return [n for n, u in job.plan.units.items() if u.excluded and not named_by_recipe(job.user_recipe, n, u.op_type)]


def _kept_as_planned(tried: int, start: float, loaded: list[LatencyComparison]) -> PlanIssue:
    """The note when no cheaper placement was adopted; it names the trials measured under load (not used)."""
    text = (f"latency fallback: {count(tried, 'cheaper placement')} with islands left float measured no faster than "
            f"{start:.2f}x float; kept as planned")
    if not loaded:
        return PlanIssue("", Severity.INFO, text, code=IssueCode.LATENCY_KEPT_FLOAT)
    worst = max(loaded, key=lambda lat: lat.load_per_core)
    return PlanIssue("", Severity.WARNING,
                     f"{text} ({len(loaded)} of them measured at up to {worst.unreliable_because()}, not reliable, "
                     "so not used); run the command again when the machine is quieter to try them",
                     code=IssueCode.LATENCY_KEPT_FLOAT)


def _all_float_issue(before: float, first: LatencyComparison) -> PlanIssue:
    """The warning when the fallback left every unit float: the file written is the float model (decided on a
    reliable measurement, or on a clear slowdown measured under load, which it names)."""
    load = f", at {first.unreliable_because()}" if not first.reliable else ""
    return PlanIssue(
        "", Severity.WARNING,
        f"the latency fallback left every unit float, so the model written is the float model, not a quantized "
        f"one (as quantized it measured {before:.2f}x its float latency{load}); pass --no-latency-check to write "
        f"it quantized anyway, name nodes in an override to keep their islands quantized, or measure again "
        f"with {REMEASURE_HOW}", code=IssueCode.LATENCY_KEPT_FLOAT, ratio=before)


def _still_slower_issue(job: Job, islands: int, before: float) -> PlanIssue:
    """The one slower-than-float warning when the placement written, with ``islands`` islands left float, still
    measured slower than float beyond the noise (``job.latency``, after :meth:`Job.adopt`; ``before``: the ratio as
    planned): what is quantized and what float, both ratios, why no further island was left float, what to do."""
    lat = job.latency
    quantized, counted = job.plan.quantized_count()
    how = f", at {lat.unreliable_because()}" if not lat.reliable else ""
    how += ", reused from an earlier measurement" if lat.cached else ""
    if too_small_to_try(lat):
        why = (f"{(lat.timed_quant_s - lat.timed_float_s) * 1e6:.0f} us slower per run of "
               f"{lat.timed_float_s * 1e3:.3f} ms, too little for leaving further islands float to win back")
    else:
        why = "no further island left float measured faster"
    return PlanIssue(
        "", Severity.WARNING,
        f"still slower than float: with {count(islands, 'island')} left float ({quantized} of "
        f"{count(counted, 'node unit')} quantized) the model written measured {lat.ratio:.2f}x the float "
        f"model's latency ({before:.2f}x as planned{how}); {why}; keep the float model for speed, exclude more "
        f"nodes (--exclude, or the app's Inspector), or pass --no-latency-check to write every unit the recipe "
        f"asks quantized; {REMEASURE_HOW} measures again", code=IssueCode.SLOWER_THAN_FLOAT)


def _too_small_issue(first: LatencyComparison) -> PlanIssue:
    """The one warning when a microsecond model's slowdown left every unit float: what was measured (the load
    when not reliable, the reuse of a cached figure), what was written, and how to write it quantized."""
    slower_us = (first.timed_quant_s - first.timed_float_s) * 1e6
    how = f", at {first.unreliable_because()}" if not first.reliable else ""
    how += ", reused from an earlier measurement" if first.cached else ""
    return PlanIssue(
        "", Severity.WARNING,
        f"quantization does not pay at this size: as quantized the model measured {first.ratio:.2f}x its float "
        f"latency ({slower_us:.0f} us slower per run of {first.timed_float_s * 1e3:.3f} ms{how}: the Q/DQ "
        "transitions cost more than the integer kernels save), so every unit is left float and the model written "
        f"is the float model; --no-latency-check writes it quantized, {REMEASURE_HOW} measures again",
        code=IssueCode.LATENCY_KEPT_FLOAT, ratio=first.ratio)


def _small_island_note(group: list[str], ratio: float) -> PlanIssue:
    """The note on one island a microsecond model's slowdown left float (the warning about the whole model says
    why, ``ratio``: the whole model's quantized / float latency); its first node is the issue's node, so the app
    and ``analyze`` count it as the latency check's; ``units`` names every unit of the island."""
    return PlanIssue(group[0], Severity.INFO,
                     f"kept float with its {island_of(group)}; quantization "
                     "does not pay at this size (the warning about the whole model); name a node in an override, "
                     "or pass --no-latency-check, to quantize it anyway", code=IssueCode.LATENCY_KEPT_FLOAT,
                     units=tuple(group), ratio=ratio, island=True)


def _kept_issue(group: list[str], before: float, after: float, islands: int) -> PlanIssue:
    """The warning on one island a trial left float: its first node is the issue's node, ``units`` every unit of
    the island, ``ratio`` the model's as planned (``before``)."""
    return PlanIssue(group[0], Severity.WARNING,
                     f"kept float with its {island_of(group)}; as quantized the "
                     f"model measured {before:.2f}x its float latency, with {count(islands, 'island')} left float "
                     f"{after:.2f}x (onnxruntime CPU, 1 thread); name a node in an override, or pass "
                     "--no-latency-check, to quantize it anyway", code=IssueCode.LATENCY_KEPT_FLOAT,
                     units=tuple(group), ratio=before, island=True)
