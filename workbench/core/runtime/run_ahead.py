"""Run the next item on a helper thread while the caller works on the one before (onnxruntime releases the GIL)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Run ahead at all (tests compare the values both ways) ...
PIPELINE = True
#: ... and only when the first item's run took at least this long (wall seconds): handing an item to the thread
#: and back costs about 0.2 ms of CPU (as the calibration pass's own pipeline, which has the same threshold).
MIN_OVERLAP_SECONDS = 0.005


def run_ahead(run: Callable[[T], R], items: Iterable[T]) -> Iterator[tuple[T, R]]:
    """``(item, run(item))`` for each of ``items``, in order, as a plain loop gives them.

    The first item is run here and yielded before the second is drawn from ``items``, so a generator may
    depend on what the caller did with the first result (its slice size). From then on, when that first run
    took at least :data:`MIN_OVERLAP_SECONDS`, ``run(item k + 1)`` starts on one helper thread before
    ``(item k, result)`` is yielded: while the caller works on result k (numpy or compiled loops that release
    the GIL), onnxruntime computes the next one. At most two results are alive at once, the one yielded and
    the one being computed. An exception of ``run`` is raised here at the item it belongs to; closing the
    generator early waits for a run in progress.
    """
    it = iter(items)
    for first in it:
        t0 = time.perf_counter()
        result = run(first)
        took = time.perf_counter() - t0
        yield first, result
        break
    else:
        return
    result = None
    if not PIPELINE or took < MIN_OVERLAP_SECONDS:
        yield from ((item, run(item)) for item in it)
        return
    from concurrent.futures import ThreadPoolExecutor  # stdlib; loaded only for runs worth overlapping

    end = object()
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-ahead")
    try:
        item = next(it, end)
        pending = pool.submit(run, item) if item is not end else None
        while pending is not None:
            result = pending.result()
            following = next(it, end)
            pending = pool.submit(run, following) if following is not end else None
            yield item, result
            item, result = following, None
    finally:
        pool.shutdown(wait=True)
