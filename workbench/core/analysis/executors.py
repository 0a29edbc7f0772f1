"""Where fanned-out tasks run (the sensitivity sweep's suffix models): this process (one thread or
several), local processes, or a Ray cluster.

An executor has one method, ``map(fn, tasks)``, which yields ``fn(task)`` for every task *in
task order*, lazily (the caller checks cancel and reports progress between results, and stops
iterating to cancel). ``fn`` is a module-level function and each task a picklable dataclass of
bytes and numpy arrays, so any engine that can ship a function and its argument can run them;
the results do not depend on where they ran. :func:`make_executor` turns the CLI's
``--executor inline|processes|ray[:ADDRESS]`` into one; :func:`default_executor` gives local
processes (one per core, spawn start method), or this process on a one-core machine.
:class:`ThreadExecutor` runs tasks on threads of this process (the sweep's default: its tasks are
onnxruntime runs, which release the GIL).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import signal
import socket
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from workbench.core.errors import WorkbenchError


class Executor(Protocol):
    """Runs ``fn`` over ``tasks``; yields the results in task order."""

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]: ...


class InlineExecutor:
    """Runs every task in this process, one after the other."""

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        for task in tasks:
            yield fn(task)


def ignore_interrupts() -> None:
    """Worker start-up: ignore SIGINT. A Ctrl-C in a terminal reaches the whole process group; the
    caller cancels its queued tasks and ends the workers, which otherwise each printed a
    KeyboardInterrupt traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _PoolExecutor:
    """What the process and thread executors share: ``map`` over a concurrent.futures pool with at
    most ``2 * workers`` tasks in flight, and the pool kept across maps inside ``with`` blocks.
    Subclasses give ``_get_pool`` and ``close``."""

    def __init__(self, workers: int = 2):
        self.workers = max(1, int(workers))
        self._depth = 0  # nesting of ``with`` blocks

    def _get_pool(self):
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        pool = self._get_pool()
        pending: deque = deque()
        try:
            for task in tasks:
                pending.append(pool.submit(fn, task))
                if len(pending) >= 2 * self.workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for f in pending:
                f.cancel()
            wait(pending)
            if not self._depth:
                self.close()

    def __enter__(self):
        self._depth += 1
        return self

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if not self._depth:
            self.close()


class ProcessExecutor(_PoolExecutor):
    """Runs tasks in ``workers`` local processes (spawn), at most ``2 * workers`` in flight so
    task data does not pile up in memory; closing the iterator early cancels queued tasks and
    waits for the running ones.

    Each :meth:`map` starts its processes and ends them when it finishes, except inside a ``with``
    block: there the processes start once (on :meth:`start` or the first map) and serve every map
    until the block ends (a job that fans out in several rounds, like the sensitivity sweep, pays
    the interpreter start-up once). ``shares_files`` is True: the workers see this machine's files, so a caller may pass large
    arrays as paths of ``.npy`` files instead of pickling them (see
    :mod:`workbench.core.analysis.spill`).
    """

    shares_files = True

    def __init__(self, workers: int = 2):
        super().__init__(workers)
        self._pool: ProcessPoolExecutor | None = None
        self._finalizer = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=mp.get_context("spawn"),
                                             initializer=ignore_interrupts)
            self._finalizer = weakref.finalize(self, self._pool.shutdown, wait=True, cancel_futures=True)
        return self._pool

    def start(self) -> None:
        """Inside a ``with`` block: start the worker processes now (they import their modules while
        the caller works). Outside one it does nothing (each map starts its own)."""
        if not self._depth:
            return
        pool = self._get_pool()
        for _ in range(self.workers):
            pool.submit(int)

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        try:
            yield from super().map(fn, tasks)
        except BrokenProcessPool:
            self.close()  # a worker died: the next map starts fresh processes
            raise

    def close(self) -> None:
        """End the worker processes (a later :meth:`map` starts new ones)."""
        if self._finalizer is not None:
            self._finalizer()
        self._pool = self._finalizer = None

class ThreadExecutor(_PoolExecutor):
    """Runs tasks on ``workers`` threads of this process, at most ``2 * workers`` in flight;
    closing the iterator early cancels queued tasks and waits for the running ones.

    For tasks whose work is onnxruntime runs, which release the GIL, as the sensitivity sweep's
    are: the cores are used without starting processes, and the tasks' models and arrays are
    handed over as they are, not pickled or written to files (``shares_memory``). Each
    :meth:`map` starts its threads and ends them when it finishes, except inside a ``with``
    block: there the threads serve every map until the block ends.
    """

    shares_memory = True

    def __init__(self, workers: int = 2):
        super().__init__(workers)
        self._pool: ThreadPoolExecutor | None = None

    def _get_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="workbench-task")
        return self._pool

    def close(self) -> None:
        """End the threads (a later :meth:`map` starts new ones)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None


def default_executor() -> Executor:
    """Local processes, one per CPU core (``os.cpu_count()``; the fanned-out tasks run
    onnxruntime with one intra-op thread each, so the processes are what uses the cores);
    :class:`InlineExecutor` on a one-core machine."""
    workers = os.cpu_count() or 1
    return ProcessExecutor(workers) if workers > 1 else InlineExecutor()


class RayExecutor:
    """Runs tasks as Ray tasks (Ray 2.x, the optional ``[ray]`` extra).

    ``address`` None starts a local Ray instance on 127.0.0.1 with ``workers`` CPUs for the
    duration of one :meth:`map` (and shuts it down after), or of a ``with`` block; "auto" or "HOST:PORT" joins an existing
    cluster, whose workers need the same Workbench, onnxruntime and numpy installed. Each task is
    put in the object store once and referenced (no model pickled per retry); at most
    ``2 * workers`` are in flight. A task whose worker process dies is retried once by Ray; a
    second death raises :class:`WorkbenchError` naming the task. Closing the iterator early (cancel)
    cancels the tasks still queued or running, so no work is left behind on the cluster.
    """

    def __init__(self, address: str | None = None, workers: int = 2):
        self.address = address or None
        self.workers = max(1, int(workers))
        self._depth = 0  # nesting of ``with`` blocks: a Ray instance started inside one lives until it ends
        self._started = False

    def __enter__(self) -> RayExecutor:
        self._depth += 1
        return self

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if not self._depth and self._started:
            self._started = False
            _import_ray(local=self.address is None).shutdown()

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        ray = _import_ray(local=self.address is None)
        started = not ray.is_initialized()
        if started:
            kwargs = {"include_dashboard": False, "log_to_driver": False, "ignore_reinit_error": True,
                      "logging_level": logging.ERROR}
            if self.address is None:
                kwargs.update(num_cpus=self.workers)
            if self.address not in (None, "auto"):
                _reachable(self.address)
            try:
                ray.init(address=self.address, **kwargs)
            except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ...
                raise WorkbenchError(f"Cannot reach the Ray cluster at {self.address or 'a new local instance'}: "
                                     f"{str(exc).splitlines()[0][:200]}",
                                     hint="Start it with `ray start --head`, or use --executor processes.") from None
        remote = ray.remote(max_retries=1, retry_exceptions=False)(fn)
        pending: deque = deque()
        index = 0
        try:
            for task in tasks:
                pending.append((index, remote.remote(ray.put(task))))
                index += 1
                if len(pending) >= 2 * self.workers:
                    yield self._get(ray, *pending.popleft())
            while pending:
                yield self._get(ray, *pending.popleft())
        finally:
            for _, ref in pending:
                ray.cancel(ref, force=True)
            if started and self._depth:
                self._started = True  # shut down when the ``with`` block ends
            elif started:
                ray.shutdown()

    @staticmethod
    def _get(ray, index: int, ref) -> Any:
        try:
            return ray.get(ref)
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
            raise WorkbenchError(f"Ray task {index} failed twice: its worker died ({exc.__class__.__name__}).",
                                 hint="Check the workers' memory and logs (`ray status`), or use --executor "
                                      "processes.") from None
        except ray.exceptions.RayTaskError as exc:
            raise exc.as_instanceof_cause() from None


#: Ray binds a local instance to the machine's network address unless told it is a single-node
#: setup; this keeps its head, raylet and workers on 127.0.0.1 (the variable is read at import).
_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _reachable(address: str, seconds: float = 5.0) -> None:
    """Refuse a ``HOST:PORT`` nobody listens on before Ray waits minutes for it.

    Raises
    ------
    WorkbenchError
        The address is not ``HOST:PORT``, or no connection within ``seconds``.
    """
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise WorkbenchError(f"Ray address {address!r} is not HOST:PORT.", hint="Use e.g. ray:10.0.0.5:6379 or ray:auto.")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=seconds).close()
    except OSError as exc:
        raise WorkbenchError(f"Cannot reach a Ray cluster at {address} ({exc.strerror or exc}).",
                             hint="Start it with `ray start --head` there, check the address, or use "
                                  "--executor processes.") from None


def _import_ray(local: bool = False):
    if local:
        os.environ.setdefault(_LOOPBACK_ENV, "0")
    try:
        import ray  # optional dependency: the [ray] extra
    except ImportError:
        raise WorkbenchError("The Ray executor needs Ray, which is not installed.",
                             hint="pip install 'onnx-quant-workbench[ray]' (or pip install 'ray>=2.9').") from None
    if local and os.environ.get(_LOOPBACK_ENV) == "0":
        ray._private.ray_constants.ENABLE_RAY_CLUSTER = False  # ray was imported before the variable was set
    return ray


#: names accepted by :func:`make_executor`
EXECUTORS = ("inline", "processes", "ray")


def check_executor_spec(spec: str) -> None:
    """Refuse an ``--executor`` value :func:`make_executor` would refuse by its form (unknown name, bad worker
    count), without starting or importing anything, so a command can say so before its long work.

    Raises
    ------
    WorkbenchError
        As :func:`make_executor` for the same value.
    """
    name, _, arg = spec.partition(":")
    if name == "processes" and arg and (not arg.isdigit() or int(arg) < 1):
        raise WorkbenchError(f"--executor {spec!r}: the process count must be a whole number of 1 or more.",
                             hint="Use e.g. --executor processes:2.")
    if not (name == "inline" and not arg or name in ("processes", "ray")):
        raise WorkbenchError(f"Unknown executor {spec!r}.", hint="Use inline, processes[:N], ray or ray:ADDRESS.")


def make_executor(spec: str | None) -> Executor:
    """An executor from ``inline``, ``processes[:N]``, ``ray`` or ``ray:ADDRESS`` (None: the default).

    Raises
    ------
    WorkbenchError
        An unknown name, a bad worker count, or Ray asked for but not installed.
    """
    if spec is None:
        return default_executor()
    check_executor_spec(spec)
    name, _, arg = spec.partition(":")
    if name == "inline":
        return InlineExecutor()
    if name == "processes":
        return ProcessExecutor(int(arg) if arg else max(2, os.cpu_count() or 1))
    _import_ray(local=not arg)
    if arg and arg != "auto":
        _reachable(arg)  # before any work, not after the calibration
    return RayExecutor(arg or None, workers=max(2, (os.cpu_count() or 1) // 2))
