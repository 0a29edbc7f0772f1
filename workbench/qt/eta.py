"""The text of a running job's progress: its message, step count, the current phase's ETA and the time
elapsed ("Calibrating: 6 tensors (3/8), ETA 0:12, 0:07 elapsed")."""

from __future__ import annotations

import time

from workbench.core.progress import phase_of


def format_eta(seconds: float) -> str:
    """``m:ss`` of ``seconds`` (rounded, never negative)."""
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}"


class ProgressClock:
    """Times one job; the ETA assumes the current phase (:func:`phase_of` of the message, and its
    total) runs at its average rate so far."""

    def __init__(self) -> None:
        self.start()

    def start(self) -> None:
        self._started = self._phase_started = time.monotonic()
        self._phase: tuple[str, int] | None = None

    def text(self, done: int, total: int, message: str) -> str:
        now = time.monotonic()
        phase = (phase_of(message), total)
        if phase != self._phase:
            self._phase, self._phase_started = phase, now
        eta = ""
        if total > 0 and 0 < done < total:
            eta = f", ETA {format_eta((now - self._phase_started) / done * (total - done))}"
        return f"{message} ({done}/{total or '?'}){eta}, {format_eta(now - self._started)} elapsed"
