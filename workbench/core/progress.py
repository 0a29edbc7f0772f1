"""Progress callbacks and cancel tokens for long jobs; the core knows nothing of threads."""

from __future__ import annotations

import threading
from collections.abc import Callable

from workbench.core.errors import Cancelled

#: ``progress(done, total, message)``; ``total`` may be 0 when unknown.
ProgressFn = Callable[[int, int, str], None]


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
