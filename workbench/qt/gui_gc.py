"""Python's cyclic garbage collector on the GUI thread only.

CPython runs an automatic collection in whichever thread allocates when a generation's count passes
its threshold. A worker thread opening a model (ppocrv4_rec: thousands of objects) then collected
the reference cycles left by closed windows and tabs, among them Qt widgets owned by Python
(pyqtgraph's ``ViewBoxMenu`` and ``QMenu``, plot items, pixmaps), and destroyed them off the GUI thread
while the GUI thread ran Qt: a segmentation fault. While a :class:`GuiThreadCollector` runs, the
automatic collector is off and a timer of the GUI thread collects instead, by the same generation
thresholds (``gc.get_threshold``); reference counting frees everything else as usual.
"""

from __future__ import annotations

import gc
import itertools
from functools import partial

from PySide6.QtCore import QObject, QTimer

#: How often the GUI thread checks whether a collection is due (milliseconds).
COLLECT_INTERVAL_MS = 500

_RUNNING: set[int] = set()  # the running collectors' numbers
_NUMBERS = itertools.count()


def _stopped(number: int) -> None:
    """Collector ``number`` stopped or was destroyed: the automatic collector is on again when no
    collector runs."""
    _RUNNING.discard(number)
    if not _RUNNING:
        gc.enable()


def collection_due(counts: tuple[int, int, int], thresholds: tuple[int, int, int]) -> int | None:
    """The generation (0, 1 or 2) Python's automatic collector would collect at these counts
    (``gc.get_count()``) and thresholds (``gc.get_threshold()``): the oldest whose count passed its
    threshold; None when none did or collection is off (threshold 0 of generation 0)."""
    if thresholds[0] == 0:
        return None
    for generation in (2, 1, 0):
        if thresholds[generation] and counts[generation] > thresholds[generation]:
            return generation
    return None


class GuiThreadCollector(QObject):
    """Collects cyclic garbage from a timer of the thread it lives in (create it on the GUI thread).

    Between :meth:`start` and :meth:`stop` (or its destruction, e.g. with a parent window never
    closed) the automatic collector is off (``gc.disable``); it is on again once no collector runs."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = COLLECT_INTERVAL_MS):
        super().__init__(parent)
        self._number = next(_NUMBERS)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.collect_due)
        self.destroyed.connect(partial(_stopped, self._number))

    def start(self) -> None:
        """Turn the automatic collector off and collect from this thread's timer instead."""
        _RUNNING.add(self._number)
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Stop collecting here; the automatic collector is on again when no other collector runs."""
        self._timer.stop()
        _stopped(self._number)

    @property
    def running(self) -> bool:
        return self._number in _RUNNING

    def collect_due(self) -> int | None:
        """Run the collection due now, if any; the generation collected (None: none was due)."""
        generation = collection_due(gc.get_count(), gc.get_threshold())
        if generation is not None:
            gc.collect(generation)
        return generation
