"""Ctrl+C in the terminal that started ``workbench``: close the window as its close button does.

Python turns SIGINT into a KeyboardInterrupt, raised in whatever Python code runs next on the GUI thread: a
slot took it, the app showed "Internal error: KeyboardInterrupt ... This is a bug" and kept running, its
traceback in the log. Here the signal only writes a byte to a socket (:func:`signal.set_wakeup_fd`) that a
QSocketNotifier watches, so the event loop hears of it at once (no polling timer) and asks the window to
close: a running job and unsaved edits are asked about, as for the close button, and nothing is lost.

A terminal's Ctrl+C reaches the whole process group, the children too: the job and layout children ignore it
(``workbench.qt.engine.child_main``, ``workbench.qt.canvas.worker.child_main``); the window decides whether a
job stops, and stops it through its cancel.
"""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Callable

from PySide6.QtCore import QObject, QSocketNotifier, QTimer, Signal

#: what ``workbench`` prints on stderr when Ctrl+C reaches it
INTERRUPTED = ("workbench: interrupted (Ctrl+C): closing the window; a running job and unsaved edits are asked "
               "about first, as for the close button")


class InterruptWatcher(QObject):
    """Turns SIGINT into :attr:`interrupted`, emitted from the event loop; :meth:`uninstall` puts the
    previous handler and wake-up fd back."""

    interrupted = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._read, self._write = socket.socketpair()
        for end in (self._read, self._write):
            end.setblocking(False)
        self._old_fd = signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)
        self._old_handler = signal.signal(signal.SIGINT, lambda signum, frame: None)  # the fd wakes the loop
        self._notifier = QSocketNotifier(self._read.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._on_wake)

    def _on_wake(self) -> None:
        try:
            got = self._read.recv(512)
        except BlockingIOError:
            return
        if signal.SIGINT in got:  # other signals Python handles also write their number here
            self.interrupted.emit()

    def uninstall(self) -> None:
        self._notifier.setEnabled(False)
        signal.signal(signal.SIGINT, self._old_handler)
        signal.set_wakeup_fd(self._old_fd)
        self._read.close()
        self._write.close()


def close_on_interrupt(window, say: Callable[[str], None] | None = None) -> InterruptWatcher:
    """Close ``window`` (its closeEvent asks about a running job and unsaved edits) when SIGINT arrives;
    ``say`` gets :data:`INTERRUPTED` (default: stderr). A Ctrl+C while its questions are open asks nothing more."""
    watcher = InterruptWatcher(window)
    tell = say or (lambda text: print(text, file=sys.stderr, flush=True))
    closing = [False]

    def on_interrupt() -> None:
        tell(INTERRUPTED)
        if closing[0]:
            return
        closing[0] = True

        def close() -> None:
            try:
                window.close()
            finally:
                closing[0] = False

        QTimer.singleShot(0, window, close)

    watcher.interrupted.connect(on_interrupt)
    return watcher
