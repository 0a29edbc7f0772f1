"""GUI-thread work in slices: a generator stepped from a zero-timer until a time budget is spent.

Opening a 20,000-node graph does about 100 ms of work on the GUI thread (unpickling the layout,
colours, items, fit) and, on a loaded 2-core machine, twice that. Done at once it freezes the
window; :class:`SliceRunner` steps a generator for at most :data:`BUDGET_S` (wall clock) and then
returns to the event loop, which paints, handles input and runs timers before the next slice.
A step that must wait for something outside (a worker's result) yields :data:`WAIT`; the runner
then sleeps until :meth:`SliceRunner.resume`.

Also :func:`dismantle`: frees a large dataclass tree (an old graph's scene data) a slice at a time,
where dropping the last reference would free hundreds of thousands of objects in one go (~20 ms).
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

from PySide6.QtCore import QObject, QTimer

log = logging.getLogger(__name__)

#: Longest run of one slice (seconds, wall clock); a step itself may take longer.
BUDGET_S = 0.012
#: Yielded by a step that waits for :meth:`SliceRunner.resume`.
WAIT = object()
#: Elements of a list or dict freed per step of :func:`dismantle`.
FREE_CHUNK = 2000

_gc_pauses = 0


def pause_gc() -> None:
    """Hide every object alive now from Python's cyclic garbage collector (``gc.freeze``) until the
    matching :func:`resume_gc` (nested pauses count).

    An open allocates ~10 objects per node; meanwhile the collector's full passes would scan the
    app's whole heap (90 ms at 20,000 nodes on this machine), landing in some slice. Frozen, the
    heap from before is skipped and collections scan only what the open made; reference counting
    frees everything as usual. Not ``gc.disable``: that would defer one large pass over all the
    open's objects to its end."""
    global _gc_pauses
    if _gc_pauses == 0:
        gc.freeze()
    _gc_pauses += 1


def resume_gc() -> None:
    """End one :func:`pause_gc`; after the last one the frozen objects go back to the collector's
    oldest generation (``gc.unfreeze``; no pass runs then)."""
    global _gc_pauses
    if _gc_pauses == 0:
        return
    _gc_pauses -= 1
    if _gc_pauses == 0:
        gc.unfreeze()


class SliceRunner(QObject):
    """Steps one generator at a time in slices of at most :data:`BUDGET_S` from a zero-timer.

    ``on_error(exc)`` is called (and the generator dropped) when a step raises.
    """

    def __init__(self, parent: QObject, on_error: Callable[[BaseException], None]):
        super().__init__(parent)
        self._gen: Generator | None = None
        self._waiting = False
        self._on_error = on_error
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._slice)

    def start(self, gen: Generator) -> None:
        """Drop the current generator (if any) and step ``gen`` from the next event-loop turn."""
        self.stop()
        self._gen = gen
        self._timer.start()

    def stop(self) -> None:
        """Drop the current generator without running it further (also from inside one of its
        steps, e.g. a signal handler that opens another model)."""
        gen, self._gen, self._waiting = self._gen, None, False
        self._timer.stop()
        if gen is not None and not gen.gi_running:
            gen.close()

    def running(self) -> bool:
        return self._gen is not None

    def resume(self) -> None:
        """Continue a generator that yielded :data:`WAIT`."""
        if self._gen is not None and self._waiting:
            self._waiting = False
            self._timer.start()

    def _slice(self) -> None:
        gen = self._gen
        if gen is None:
            return
        deadline = time.perf_counter() + BUDGET_S
        try:
            while time.perf_counter() < deadline:
                waits = next(gen) is WAIT
                if self._gen is not gen:  # a step stopped it or started another
                    gen.close()
                    return
                if waits:
                    self._waiting = True
                    return
        except StopIteration:
            if self._gen is gen:
                self._gen = None
                self._waiting = False
            return
        except Exception as exc:  # noqa: BLE001 - a failed step is reported, never lost in the event loop
            log.error("canvas step failed", exc_info=True)
            if self._gen is gen:  # (a replaced generator's failure concerns no one)
                self._gen = None
                self._on_error(exc)
            return
        self._timer.start()


def dismantle(obj: Any, depth: int = 0) -> Iterator[None]:
    """Empty the large lists and dicts of a dataclass tree a chunk per step (yields between), so
    dropping ``obj`` afterwards frees little at once. ``obj`` is unusable afterwards."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and depth < 4:
        for f in dataclasses.fields(obj):
            yield from dismantle(getattr(obj, f.name), depth + 1)
    elif type(obj) is list and len(obj) > FREE_CHUNK:
        while obj:
            del obj[-FREE_CHUNK:]
            yield
    elif type(obj) is dict and len(obj) > FREE_CHUNK:
        while obj:
            for _ in range(min(FREE_CHUNK, len(obj))):
                obj.popitem()
            yield
