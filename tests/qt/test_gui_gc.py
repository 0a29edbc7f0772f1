"""Cyclic garbage is collected on the GUI thread only while the main window is open.

A worker thread opening ppocrv4_rec ran CPython's automatic collection itself (it allocates most) and
freed the reference cycles of closed windows there, Qt objects owned by Python among them
(pyqtgraph's ``ViewBoxMenu`` / ``QMenu``): Qt widgets destroyed off the GUI thread while it ran Qt, a
segmentation fault in tests/qt/test_problems_grouped.py after four other test files.
"""

from __future__ import annotations

import gc
import threading

from workbench.qt.gui_gc import GuiThreadCollector, collection_due

WORKER = "allocating-worker"


class Cycle:
    """A reference cycle that records the name of the thread that frees it."""

    def __init__(self, freed: list[str]):
        self.me = self
        self.freed = freed

    def __del__(self):
        self.freed.append(threading.current_thread().name)


def _allocate_in_a_worker() -> list:
    """100,000 lists made by a worker thread and kept (as an opened model is): far past generation 0's
    threshold (700), so an automatic collection, when on, runs in that thread."""
    kept: list = []
    worker = threading.Thread(target=lambda: kept.extend([] for _ in range(100_000)), name=WORKER)
    worker.start()
    worker.join()
    return kept


def _cycle_freed_by(qtbot, freed: list[str]) -> list[str]:
    gc.collect()  # generation 0 empty: no collection is due before the worker allocates
    Cycle(freed)
    kept = _allocate_in_a_worker()
    assert WORKER not in freed
    qtbot.waitUntil(lambda: bool(freed), timeout=60_000)
    del kept
    return freed


def test_a_worker_thread_never_collects_while_the_window_is_open(qtbot, gui_gc, window):
    gui_gc.stop()  # the tests' own collector off: only the window's is left
    assert _cycle_freed_by(qtbot, []) == [threading.main_thread().name]


def test_closing_the_window_turns_the_automatic_collector_on_again(qtbot, gui_gc, window):
    gui_gc.stop()
    window.close()
    assert gc.isenabled()
    freed: list[str] = []
    gc.collect()
    Cycle(freed)
    del _allocate_in_a_worker()[:]
    assert freed == [WORKER]  # what the window's collector prevents


def test_collectors_nest(qtbot, gui_gc):
    other = GuiThreadCollector()
    other.start()
    gui_gc.stop()
    assert not gc.isenabled() and other.running and not gui_gc.running
    other.stop()
    assert gc.isenabled()
    gui_gc.start()
    assert not gc.isenabled()


def test_the_generation_due_is_the_oldest_past_its_threshold():
    thresholds = (700, 10, 10)
    assert collection_due((700, 10, 10), thresholds) is None  # passed means more than
    assert collection_due((701, 0, 0), thresholds) == 0
    assert collection_due((701, 11, 0), thresholds) == 1
    assert collection_due((5, 11, 11), thresholds) == 2
    assert collection_due((10_000, 50, 50), (0, 10, 10)) is None  # gc.set_threshold(0): collection off


def test_a_window_deleted_without_a_close_turns_the_automatic_collector_on_again(qtbot, gui_gc):
    from PySide6.QtCore import QObject

    gui_gc.stop()
    parent = QObject()
    GuiThreadCollector(parent).start()
    assert not gc.isenabled()
    del parent  # its collector goes with it, never stopped
    assert gc.isenabled()
