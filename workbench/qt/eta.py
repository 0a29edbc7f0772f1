"""The text and the bar of a running job's progress.

:class:`ProgressClock` words one progress event: its message, step count, an ETA and the time elapsed
("Calibrating: 6 tensors (3/8), ETA 0:12, 0:07 elapsed"). :class:`OverallProgress` turns the job's
phases (each restarts at ``done = 0``, :mod:`workbench.core.progress`) into one fraction of the whole
job that never decreases, each phase weighted by its expected share (:func:`job_phases`), so a bar
does not restart at every phase and the ETA is of the whole job.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from workbench.core.progress import COMPARE_PHASES, phase_of

#: a bar showing :attr:`OverallProgress.fraction` counts 0..OVERALL_STEPS
OVERALL_STEPS = 1000

#: (phase, expected share) of the steps shared by the jobs that quantize with the cached ranges
_QUANTIZE = [("Planning", 3.0), ("Calibrating", 15.0), ("Calibrating the rest", 4.0), ("Quantizing", 5.0)]
#: the calibration's steps: its CLI quantize names its latency passes (placement probes before the calibration,
#: placement guard, latency check, latency fallback after it: :data:`workbench.core.progress.PIPELINE_PHASES`);
#: minilm_l6_v2 timings: probes 0.5-0.9 s, placement guard 6-7 s, latency check 0.5-3 s, analysis 12-16 s;
#: the latency fallback only runs after a slowdown, rewriting and measuring again
_CALIBRATE = [("Planning", 3.0), ("Latency placement", 2.0), ("Calibrating", 15.0), ("Placement guard", 16.0),
              ("Latency check", 3.0), ("Latency fallback", 10.0), ("Calibrating the rest", 4.0), ("Quantizing", 5.0)]
#: the recipe choice a calibration or export runs first (its calibration pass, its candidates, the units it keeps
#: float or gives 16-bit activations: :data:`workbench.core.tuning.recipe_choice.PHASE_UNITS`)
_CHOICE = [("Choosing the recipe: Calibrating", 7.0), ("Choosing the recipe", 8.0), ("Choosing units", 14.0)]
#: the sweep's two counts (:func:`workbench.core.analysis.sensitivity.sensitivity_sweep`): preparing (each unit's own
#: error, the cached activations: 2 steps) then one step per unit and kind; one phase for both filled the bar at
#: the end of the preparing and held it at 100 % while the units were swept
_SWEEP = [("Sensitivity", 20.0), ("Sensitivity: Sweeping units", 50.0)]
#: each job's own last phase and its share (minilm_l6_v2 timings: the analysis is a third of a calibration; its
#: end-to-end output pass runs each model once more, without taps)
_LAST = {"calibrate": [("Analysing", 30.0), ("Output error", 3.0), ("Weights vs activations", 7.0)],
         "export": [("Writing", 10.0)], "sensitivity": _SWEEP, "report": [("Report", 70.0)],
         "evaluate": [("Evaluating", 70.0)]}


def job_phases(kind: str, *, choose: bool = False) -> list[tuple[str, float]]:
    """The phases of the core job ``kind`` (:mod:`workbench.core.jobs`) in the order it runs them, each with
    its expected share of the job's time (any unit; :class:`OverallProgress` normalises them); ``choose``: the
    job runs the recipe choice first. A phase is named by the start of its progress messages. An unknown
    ``kind`` has no phases (its progress is then shown phase by phase). ``"compare"``: the comparison of a
    quantized file with the open float model (:data:`workbench.core.progress.COMPARE_PHASES`)."""
    if kind == "compare":
        return list(COMPARE_PHASES)
    opening = [("Opening", 5.0)]
    if kind == "autotune":
        return opening + [("Autotune", 95.0)]
    if kind == "choose":
        return opening + [("Choosing", 95.0)]
    if kind not in _LAST:
        return []
    quantize = _QUANTIZE
    if kind == "export":  # with data, its Quantizing calibrates, writes and measures the latency (one phase)
        quantize = [(n, 40.0 if n == "Quantizing" else w) for n, w in _QUANTIZE]
    if kind == "calibrate":
        quantize = _CALIBRATE
    return opening + (_CHOICE if choose else []) + quantize + _LAST[kind]


def _matches(message: str, name: str) -> bool:
    return message.startswith(name) and message[len(name):len(name) + 1] in ("", ":", " ")


class OverallProgress:
    """The fraction (0..1) of one job done, from its ``progress(done, total, message)`` events and its
    phases (:func:`job_phases`).

    A message belongs to the longest phase name it starts with (followed by ``":"``, a space or
    nothing). Phases the job skips (a cached calibration, no recipe choice) are passed over; a message of
    an earlier or an unknown phase leaves the fraction where it is. Within a phase ``done / total`` of the
    first step count goes across the phase's share; a later count (another ``total``, or ``done``
    starting again) goes half of what is left, so the fraction never decreases.
    """

    def __init__(self, phases: list[tuple[str, float]]):
        whole = sum(w for _n, w in phases) or 1.0
        self._names = [n for n, _w in phases]
        self._shares = [w / whole for _n, w in phases]
        self._starts = [sum(self._shares[:i]) for i in range(len(phases))]
        self._index = -1
        self._lo, self._hi, self._in_phase = 0.0, 1.0, 0.0
        self._last: tuple[int, int] | None = None
        self.fraction = 0.0

    @property
    def known(self) -> bool:
        """Whether the job has phases (else :attr:`fraction` stays 0 and a bar shows each phase)."""
        return bool(self._names)

    @property
    def past_first_phase(self) -> bool:
        """Whether a phase after the first (the opening) has started: the ETA can be estimated."""
        return self._index > 0

    def _phase(self, message: str) -> int:
        found = [(len(n), i) for i, n in enumerate(self._names) if _matches(message, n)]
        return max(found)[1] if found else -1

    def update(self, done: int, total: int, message: str) -> float:
        """Take one progress event; returns :attr:`fraction` (0..1, never less than before)."""
        index = self._phase(message)
        if index < 0 or index < self._index:
            return self.fraction
        if index > self._index:
            self._index, self._lo, self._hi, self._in_phase, self._last = index, 0.0, 1.0, 0.0, None
        elif self._last is not None and (total != self._last[1] or done < self._last[0]):
            self._lo = self._in_phase  # another count in the same phase: half of what is left
            self._hi = self._in_phase + (1.0 - self._in_phase) / 2
        self._last = (done, total)
        if total > 0:
            step = min(max(done, 0), total) / total
            self._in_phase = max(self._in_phase, self._lo + (self._hi - self._lo) * step)
        last = index == len(self._names) - 1 and self._in_phase >= 1.0  # exactly 1.0, whatever the rounding
        value = 1.0 if last else self._starts[index] + self._shares[index] * self._in_phase
        self.fraction = min(1.0, max(self.fraction, value))
        return self.fraction


def format_eta(seconds: float) -> str:
    """``m:ss`` of ``seconds`` (rounded, never negative)."""
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}"


class ProgressClock:
    """Times one job. The ETA is of the whole job when :meth:`text` is given its overall fraction (from the
    second phase on); else it assumes the current phase (:func:`phase_of` of the message, and its total)
    runs at its average rate so far. ``now``: the clock in seconds (tests give their own)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self.start()

    def start(self) -> None:
        self._started = self._phase_started = self._now()
        self._phase: tuple[str, int] | None = None

    def text(self, done: int, total: int, message: str, overall: OverallProgress | None = None) -> str:
        """``"message (done/total), ETA m:ss, m:ss elapsed"`` (no ETA while it cannot be estimated)."""
        now = self._now()
        phase = (phase_of(message), total)
        if phase != self._phase:
            self._phase, self._phase_started = phase, now
        eta = ""
        if overall is not None and overall.known:
            f = overall.fraction
            if overall.past_first_phase and 0 < f < 1:
                eta = f", ETA {format_eta((now - self._started) / f * (1 - f))}"
        elif total > 0 and 0 < done < total:
            eta = f", ETA {format_eta((now - self._phase_started) / done * (total - done))}"
        return f"{message} ({done}/{total or '?'}){eta}, {format_eta(now - self._started)} elapsed"
