"""Progress callbacks and cancel tokens for long jobs; the core knows nothing of threads.

A job reports ``progress(done, total, message)``. It is split into phases (opening, calibration,
quantizing, analysis, sweep, export); :func:`phase_of` names the phase of a message and every phase
starts with a ``done = 0`` event, so a front end shows what runs as soon as it starts (no
"24/24, 100 %" while the next step works unseen). Within a phase ``done`` never decreases and
``total`` stays the same; ``total`` is 0 only where the length cannot be known (a Python reader
without a length): the message then says what is being done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from workbench.core.errors import Cancelled

#: ``progress(done, total, message)``; ``total`` may be 0 when unknown.
ProgressFn = Callable[[int, int, str], None]


def phase_of(message: str) -> str:
    """The phase a progress message belongs to: the text before its last ``": "`` (the whole
    message when there is none). ``"Analysing: Measuring per-node error"`` -> ``"Analysing"``."""
    return message.rsplit(": ", 1)[0] if ": " in message else message


#: The phases the quantize pipeline's latency passes name themselves, in the order they run (the latency
#: placement's probes before calibration; after the model is written the placement guard's second plan,
#: the latency check, the latency fallback's rewrites). Each is longer than a second on minilm_l6_v2.
PIPELINE_PHASES = ("Latency placement", "Placement guard", "Latency check", "Latency fallback")

#: The phases a comparison of a quantized file with its float model reports
#: (:func:`workbench.core.inspection.diff_error.compare_models`), in the order they run, each with its expected
#: share of the job's time; the last counts samples. minilm_l6_v2 with 64 samples: matching 0.05 s (after the
#: 0.6 s check that the two correspond, which reports nothing), loading the two onnxruntime sessions 0.5-1.4 s,
#: comparing 4.5-8.5 s (its first batch of 8 samples 0.7-3 s).
COMPARE_PHASES = (("Matching the models", 2.0), ("Loading the models", 13.0), ("Comparing float and quantized", 85.0))


#: The steps of opening a model (:func:`workbench.core.model.load.load_model`), in the order they run: parsing
#: the file, checking it (its tensors, external data and onnx.checker), preparing it (opset, weights, names,
#: folds), inferring shapes. A cancel is honoured between them.
OPEN_STEPS = ("Reading", "Checking", "Preparing", "Inferring shapes")

#: ``step(name)`` of an open: checks the cancel token, then reports ``name`` (one of :data:`OPEN_STEPS`).
StepFn = Callable[[str], None]


def open_steps(progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> StepFn:
    """The ``step(name)`` an open calls as each of :data:`OPEN_STEPS` starts: raises :class:`Cancelled` when
    ``cancel`` was cancelled, else reports ``progress(index, len(OPEN_STEPS), name)``."""

    def step(name: str) -> None:
        if cancel is not None:
            cancel.check()
        if progress is not None:
            progress(OPEN_STEPS.index(name), len(OPEN_STEPS), name)
    return step


def in_phase(progress: ProgressFn, name: str, *, keep: tuple[str, ...] = ()) -> ProgressFn:
    """``progress`` with ``"name: "`` before every message (``name`` alone for an empty one), except the
    messages that start with one of ``keep`` (phases of their own, e.g. :data:`PIPELINE_PHASES`): those
    pass unchanged. A message that starts with the verb ``name`` starts with ("Calibrating 2 tensors" in
    phase "Calibrating") loses that word: "Calibrating: 2 tensors", not "Calibrating: Calibrating 2 tensors"."""
    verb = name.split(" ", 1)[0]
    repeated = f"{verb} " if verb.endswith("ing") else None

    def fn(done: int, total: int, message: str) -> None:
        if keep and message.startswith(keep):
            progress(done, total, message)
            return
        if repeated and message.startswith(repeated):
            message = message[len(repeated):].lstrip()
        progress(done, total, f"{name}: {message}" if message else name)
    return fn


def one_step(progress: ProgressFn, message: str) -> Callable[[], None]:
    """Report ``0 of 1`` for a phase that is one indivisible step; returns the call that reports
    ``1 of 1`` when it is done (``done = one_step(progress, "Writing: model.onnx"); ...; done()``)."""
    progress(0, 1, message)
    return lambda: progress(1, 1, message)


class CancelToken:
    """Thread-safe flag a GUI or signal handler sets; long loops call :meth:`check` between steps."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._hooks: list[Callable[[], None]] = []

    def cancel(self) -> None:
        """Request cancellation and run the registered hooks (e.g. ``RunOptions.terminate``)."""
        self._event.set()
        for hook in list(self._hooks):
            hook()

    def on_cancel(self, hook: Callable[[], None]) -> None:
        """Register ``hook`` to run when :meth:`cancel` is called (immediately if already cancelled)."""
        self._hooks.append(hook)
        if self.cancelled:
            hook()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise :class:`Cancelled` if cancellation was requested."""
        if self._event.is_set():
            raise Cancelled()


def no_progress(done: int, total: int, message: str) -> None:
    """Default progress callback: does nothing."""
