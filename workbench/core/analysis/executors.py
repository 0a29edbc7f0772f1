"""Where the sensitivity sweep's tasks run: this process, local processes, or a cluster.

An executor has one method, ``map(fn, tasks)``, which yields ``fn(task)`` for every task *in
task order*, lazily (the caller checks cancel and reports progress between results, and stops
iterating to cancel). ``fn`` is a module-level function and each task a picklable dataclass of
bytes and numpy arrays, so any engine that can ship a function and its argument can run them.
A Ray executor, for instance, is::

    class RayExecutor:
        def map(self, fn, tasks):
            remote = ray.remote(fn)
            refs = [remote.remote(t) for t in tasks]
            for ref in refs:
                yield ray.get(ref)

and is passed as ``sensitivity_sweep(..., executor=RayExecutor())``. :func:`default_executor`
gives local processes (one per two cores, spawn start method), or this process when that is 1.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Protocol


class Executor(Protocol):
    """Runs ``fn`` over ``tasks``; yields the results in task order."""

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]: ...


class InlineExecutor:
    """Runs every task in this process, one after the other."""

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        for task in tasks:
            yield fn(task)


class ProcessExecutor:
    """Runs tasks in ``workers`` local processes (spawn), at most ``2 * workers`` in flight so
    task data does not pile up in memory; closing the iterator early cancels queued tasks."""

    def __init__(self, workers: int = 2):
        self.workers = max(1, int(workers))

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=mp.get_context("spawn"))
        pending: deque = deque()
        it = iter(tasks)
        try:
            for task in it:
                pending.append(pool.submit(fn, task))
                if len(pending) >= 2 * self.workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for f in pending:
                f.cancel()
            pool.shutdown(wait=True, cancel_futures=True)


def default_executor() -> Executor:
    """Local processes, one per two CPU cores (onnxruntime already uses threads inside a task);
    :class:`InlineExecutor` when that makes one process."""
    workers = (os.cpu_count() or 1) // 2
    return ProcessExecutor(workers) if workers > 1 else InlineExecutor()
