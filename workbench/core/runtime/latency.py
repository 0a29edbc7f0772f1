"""Latency of a quantized model against its float model in onnxruntime, cached on disk.

Both models run in onnxruntime's CPU execution provider with one intra-op and one inter-op
thread and the default graph optimizations (so QDQ pairs fuse into integer kernels as they would
for a user), on one fixed feed (the first calibration sample). Runs alternate
(float, quantized, float, ...) so that load from other processes falls on both models alike;
each model's figure is a low percentile of its timed runs (see :class:`LatencyComparison` for why a low
one and not the median, and :mod:`workbench.core.runtime.run_times` for which readings are believed and
why not the single fastest), in thread CPU time (``time.thread_time_ns``: with one intra-op thread
onnxruntime runs the graph on the calling thread, so time other processes take from it is left
out) and in wall-clock time (``time.perf_counter_ns``). The ratio quantized / float of the CPU
times is what decides whether quantization paid; the wall-clock ratio is shown beside it. When under
half of a model's runs have a plausible thread CPU reading, the wall clock decides. A timing of zero is
never a figure: the runs are timed once more, and :class:`LatencyNotMeasured` is raised when they still
read zero; a cache entry with a zero timing is measured again.

A measurement is cached as JSON under ``<user cache dir>/workbench/latency`` (platformdirs; the
``WORKBENCH_CACHE_DIR`` environment variable moves the root), keyed by the SHA-256 of both
serialized models, the feed's shapes and dtypes, the onnxruntime version and the CPU (model name and
feature flags, :func:`~workbench.core.io.cpu.cpu_identity`), so
the same pair on the same machine is measured once, with the load average and the spread of its
runs. Thread CPU time leaves preemption out (ppocrv4_rec at a load average of 12 on 2 cores: no run
of 20-45 ms went uninterrupted, the fastest-run ratio was 0.70 by the wall clock, 0.64 in CPU time),
but a loaded machine still slows the fastest runs in CPU time too: ppocr_mobile_v2_cls's fastest-run
ratio was 1.39-1.43 in either clock at a load average of 0.9, 1.32-1.51 at 1.5-11 (x86_64
AVX512-VNNI, 2 cores). So a measurement taken when the load average per core was above
:data:`MAX_LOAD_PER_CORE` is not reliable (:attr:`LatencyComparison.reliable`): it is used for the
job at hand but never written to the cache, and a cached entry taken under such load is measured
again. The spread (median / 5th-percentile run) is recorded and shown, not used: it was about 1.5 on this
machine quiet or loaded. Setting
the ``WORKBENCH_REMEASURE_LATENCY`` environment variable (to anything but ``""`` or ``"0"``; the CLI's
``--remeasure-latency`` sets it) measures every pair again and replaces its cache entry.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from workbench.core import cache_dirs
from workbench.core.errors import WorkbenchError
from workbench.core.io import digest
from workbench.core.io.cpu import cpu_identity
from workbench.core.io.ort_session import QUIET_LOG, proto_session, session_sources, sources_digest
from workbench.core.runtime.run_times import cpu_figures, wall_figures

log = logging.getLogger(__name__)

#: Bumped when the way latency is measured changes (old cache entries are then ignored).
#: 3: ratios of thread CPU time, entries with load average and spread.
#: 4: a low percentile of the plausible readings, not the fastest reading.
LATENCY_VERSION = 4
#: A measurement taken at a 1-minute load average above this many runnable tasks per core is not reliable
#: (the measuring process itself counts for up to 1).
MAX_LOAD_PER_CORE = 1.0
#: Set (to anything but "" or "0"), every pair is measured again and its cache entry replaced.
REMEASURE_ENV = "WORKBENCH_REMEASURE_LATENCY"


class LatencyNotMeasured(WorkbenchError):
    """The clocks read no time for a model's runs, twice: no ratio can be given."""


@dataclass(frozen=True)
class LatencyComparison:
    """Latency of a float model and its quantized model on the same feed.

    Attributes
    ----------
    float_s, quant_s : float
        Wall-clock seconds of one ``InferenceSession.run`` (1 thread), the 5th percentile of ``runs`` runs
        (:func:`workbench.core.runtime.run_times.low`; the second fastest of under 40): on a loaded machine
        other processes only ever add time, so a low run is the steadiest estimate of a model's own cost
        (on this machine the median of two sessions of the same model differed by up to 2x, the fastest
        runs by under 10 %); not the single fastest, which one broken reading can set.
    float_median_s, quant_median_s : float
        Median wall-clock seconds of the same runs (shown, not used for the ratio).
    runs : int
        Timed runs of each model.
    cost_s : float
        Seconds the measurement took (session creation included); 0.0 when read from the cache.
    cached : bool
        True when the figures came from the on-disk cache.
    float_cpu_s, quant_cpu_s : float
        CPU seconds of this thread over the same runs, the 5th percentile of the plausible readings
        (:func:`workbench.core.runtime.run_times.cpu_figures`) (``time.thread_time_ns``; with one
        intra-op thread onnxruntime runs the graph on the calling thread): time taken from the
        model by other processes is left out, so under load this ratio moves less than the wall
        clock's (minilm_l6_v2 here: 0.57-0.62 against 0.20-0.57 by the wall clock). The ratio and
        the decisions use these when both are recorded; 0.0 when not recorded or not believable (the wall
        clock's figures are used then).
    float_cpu_median_s, quant_cpu_median_s : float
        Median thread CPU seconds of the same runs (their ratio to the 5th percentile is :attr:`spread`,
        shown); 0.0 when not recorded.
    load : float
        The 1-minute load average (runnable tasks) when the measurement began or ended, whichever is
        higher; 0.0 when not recorded.
    cores : int
        CPUs this process may run on when it was measured (0: not recorded).
    """

    float_s: float
    quant_s: float
    runs: int
    float_median_s: float = 0.0
    quant_median_s: float = 0.0
    cost_s: float = 0.0
    cached: bool = False
    float_cpu_s: float = 0.0
    quant_cpu_s: float = 0.0
    float_cpu_median_s: float = 0.0
    quant_cpu_median_s: float = 0.0
    load: float = 0.0
    cores: int = 0

    @property
    def cpu_recorded(self) -> bool:
        """True when both models' thread CPU times are positive finite figures (they decide then)."""
        return _positive(self.float_cpu_s) and _positive(self.quant_cpu_s)

    @property
    def timed_float_s(self) -> float:
        """Seconds of a float run the decisions compare: thread CPU time, or the wall clock when CPU time
        was not recorded for both models."""
        return self.float_cpu_s if self.cpu_recorded else self.float_s

    @property
    def timed_quant_s(self) -> float:
        """Seconds of a quantized run the decisions compare (as :attr:`timed_float_s`)."""
        return self.quant_cpu_s if self.cpu_recorded else self.quant_s

    @property
    def measured(self) -> bool:
        """True when both timings the decisions compare are positive finite seconds (a zero or NaN is a
        broken clock reading, never a ratio of 0.00 or infinity)."""
        return _positive(self.timed_float_s) and _positive(self.timed_quant_s)

    @property
    def ratio(self) -> float:
        """quantized / float latency in thread CPU time (wall clock when CPU time was not recorded); below
        1.0: the quantized model is faster; NaN when not :attr:`measured`."""
        return self.timed_quant_s / self.timed_float_s if self.measured else float("nan")

    @property
    def wall_ratio(self) -> float:
        """quantized / float wall-clock latency (shown, not used for decisions); NaN when either is not a
        positive figure."""
        return self.quant_s / self.float_s if _positive(self.float_s) and _positive(self.quant_s) else float("nan")

    @property
    def cpu_ratio(self) -> float:
        """quantized / float thread CPU time (NaN when not recorded)."""
        return self.quant_cpu_s / self.float_cpu_s if self.cpu_recorded else float("nan")

    @property
    def spread(self) -> float:
        """The larger of the two models' median / 5th-percentile thread CPU time (1.0 when not recorded)."""
        pairs = ((self.float_cpu_median_s, self.float_cpu_s), (self.quant_cpu_median_s, self.quant_cpu_s))
        return max([1.0] + [m / f for m, f in pairs if m > 0 and f > 0])

    @property
    def load_per_core(self) -> float:
        """:attr:`load` / :attr:`cores` (0.0 when not recorded)."""
        return self.load / self.cores if self.cores > 0 else 0.0

    @property
    def reliable(self) -> bool:
        """False when measured at a load average per core above :data:`MAX_LOAD_PER_CORE`: such a figure
        is not cached (see the module docstring)."""
        return self.load_per_core <= MAX_LOAD_PER_CORE

    def unreliable_because(self) -> str:
        """Why the measurement is not reliable, in a few words ("" when it is)."""
        return "" if self.reliable else f"load average {self.load:.1f} on {self.cores} cores"


def _positive(x: float) -> bool:
    return isinstance(x, (int, float)) and np.isfinite(x) and x > 0


def remeasure_requested() -> bool:
    """True when :data:`REMEASURE_ENV` asks every pair to be measured again (not read from the cache)."""
    return os.environ.get(REMEASURE_ENV, "") not in ("", "0")


@contextlib.contextmanager
def remeasuring_latency() -> Iterator[None]:
    """Within the block :func:`remeasure_requested` is True (:data:`REMEASURE_ENV` set, so processes
    started in it measure again too); the variable is restored after it."""
    before = os.environ.get(REMEASURE_ENV)
    os.environ[REMEASURE_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(REMEASURE_ENV, None)
        else:
            os.environ[REMEASURE_ENV] = before


def usable_cores() -> int:
    """CPUs this process may run on (``os.sched_getaffinity`` where it exists, else ``os.cpu_count``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def default_cache_dir() -> Path:
    """``$WORKBENCH_CACHE_DIR/latency`` when set, else ``<platformdirs user cache>/workbench/latency``."""
    return cache_dirs.cache_dir("latency")


#: A model to time: serialized, or in memory (its large weights then reach onnxruntime as buffers,
#: :mod:`workbench.core.io.ort_session`, and are never serialised into one more copy).
Model = bytes | onnx.ModelProto


class _Timed:
    """One model of a comparison: its digest (for the cache key) and how to open a session of it;
    an in-memory model is split into its lean graph and weight buffers once, for both."""

    def __init__(self, model: Model) -> None:
        self.model = model
        if isinstance(model, bytes):
            self.split = None
            self.digest = digest.sha256(model).digest()
        else:
            self.split = session_sources(model)
            self.digest = sources_digest(*self.split)  # no large weight: the SHA-256 of the model's bytes

    def session(self, config: dict[str, str] | None = None) -> ort.InferenceSession:
        return single_thread_session(self.model, config, split=self.split)


def single_thread_session(model: Model, config: dict[str, str] | None = None,
                          split=None) -> ort.InferenceSession:
    """A CPU session of a model (serialized or in memory): 1 intra-op and 1 inter-op thread, default
    optimizations, plus the session ``config`` entries (e.g. ``{"session.disable_quant_qdq": "1"}``).
    ``split``: :func:`~workbench.core.io.ort_session.session_sources` of an in-memory model."""
    so = ort.SessionOptions()
    for k, v in (config or {}).items():
        so.add_session_config_entry(k, v)
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = QUIET_LOG
    if isinstance(model, onnx.ModelProto):
        return proto_session(model, so, split=split)
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def _time_runs(sess: ort.InferenceSession, feed: dict[str, np.ndarray], n: int,
               cpu: list[float] | None = None) -> list[float]:
    """Wall seconds of ``n`` runs; the thread CPU seconds of each are appended to ``cpu`` when given."""
    out = []
    for _ in range(n):
        c, t = time.thread_time_ns(), time.perf_counter_ns()
        sess.run(None, feed)
        out.append((time.perf_counter_ns() - t) * 1e-9)
        if cpu is not None:
            cpu.append((time.thread_time_ns() - c) * 1e-9)
    return out


def measure(float_model: Model | _Timed, quant_model: Model | _Timed, feed: dict[str, np.ndarray], *,
            budget_s: float = 2.0, min_runs: int = 7, max_runs: int = 301,
            float_config: dict[str, str] | None = None) -> LatencyComparison:
    """Measure both models (serialized or in memory, :data:`Model`) on ``feed`` (no cache; see :func:`compare`).

    The models run alternately, one run each at a time (float, quantized, float, ...), so that
    load from other processes falls on both alike. The number of timed runs per model is what
    fits ``budget_s`` seconds of running (estimated from warm runs of each), clamped to
    [``min_runs``, ``max_runs``]. ``float_config``: session config entries of the float model's session.
    The load average is read before and after (the higher one is recorded). Each model's figures are
    :func:`~workbench.core.runtime.run_times.wall_figures` and
    :func:`~workbench.core.runtime.run_times.cpu_figures` of its runs (CPU figures of both models or of
    neither); when a timing is zero the runs are timed once more.

    Raises
    ------
    LatencyNotMeasured
        The clocks read no time for a model's runs, twice.
    onnxruntime's exceptions when a model cannot be loaded or run on ``feed``.
    """
    t0, load = time.perf_counter(), _load_average()
    f, q = (m if isinstance(m, _Timed) else _Timed(m) for m in (float_model, quant_model))
    sessions = [f.session(float_config), q.session()]
    warm = []
    for s in sessions:
        s.run(None, feed)  # the first run allocates; not timed
        warm.append(min(_time_runs(s, feed, 2)))
    runs = int(np.clip(budget_s / max(sum(warm), 1e-6), min_runs, max_runs))
    for _ in range(2):  # a second time only when the clocks read zero
        figures = _alternate(sessions, feed, runs)
        if figures["float_s"] > 0 and figures["quant_s"] > 0:
            break
    else:
        # no hint: the check that catches it is skipped and says so ("latency not measured: ..."), in the app too
        raise LatencyNotMeasured(f"the clocks read no time for the runs of a model ({runs} runs, twice)")
    return LatencyComparison(runs=runs, cost_s=time.perf_counter() - t0, load=max(load, _load_average()),
                             cores=usable_cores(), **figures)


def _alternate(sessions: list, feed: dict[str, np.ndarray], runs: int) -> dict[str, float]:
    """``runs`` alternating runs of the two sessions: the :class:`LatencyComparison` fields ``float_s``,
    ``quant_s``, ``float_median_s``, ``quant_median_s`` and the four ``*_cpu_*`` ones (seconds); the CPU
    figures are 0.0 for both models when either model's readings are not believable."""
    times: list[list[float]] = [[], []]
    cpu: list[list[float]] = [[], []]
    for _ in range(runs):
        for i, s in enumerate(sessions):
            times[i].extend(_time_runs(s, feed, 1, cpu[i]))
    (fw, fwm), (qw, qwm) = (wall_figures(t) for t in times)
    (fc, fcm), (qc, qcm) = (cpu_figures(t, c) for t, c in zip(times, cpu, strict=True))
    if not (fc > 0 and qc > 0):
        fc = fcm = qc = qcm = 0.0
    return {"float_s": fw, "quant_s": qw, "float_median_s": fwm, "quant_median_s": qwm, "float_cpu_s": fc,
            "quant_cpu_s": qc, "float_cpu_median_s": fcm, "quant_cpu_median_s": qcm}


def _load_average() -> float:
    """The 1-minute load average (0.0 where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows
        return 0.0


def cache_key(float_model: Model | _Timed, quant_model: Model | _Timed, feed: dict[str, np.ndarray],
              float_config: dict[str, str] | None = None) -> str:
    """SHA-256 hex of both models, the feed's names / shapes / dtypes, onnxruntime and the CPU. A model
    counts by its bytes' SHA-256; an in-memory one with large weights by
    :func:`~workbench.core.io.ort_session.sources_digest`."""
    h = digest.sha256()  # a few hundred bytes
    if float_config:
        h.update(json.dumps(sorted(float_config.items())).encode())
    for part in (float_model, quant_model):
        h.update((part if isinstance(part, _Timed) else _Timed(part)).digest)
    h.update(json.dumps([[k, list(v.shape), str(v.dtype)] for k, v in sorted(feed.items())]).encode())
    h.update(f"{LATENCY_VERSION}|{ort.__version__}|{cpu_identity()}|{os.cpu_count()}".encode())
    return h.hexdigest()


#: Figures of a cache entry that hand-written entries may lack.
_OPTIONAL = ("float_cpu_s", "quant_cpu_s", "float_cpu_median_s", "quant_cpu_median_s", "load")


def _read(path: Path) -> LatencyComparison | None:
    """The cached measurement at ``path``; None when there is none, it is unreadable, not reliable or has a
    zero timing (:attr:`LatencyComparison.measured`)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        hit = LatencyComparison(float(data["float_s"]), float(data["quant_s"]), int(data["runs"]),
                                float(data["float_median_s"]), float(data["quant_median_s"]), cached=True,
                                **{k: float(data.get(k, 0.0)) for k in _OPTIONAL},
                                cores=int(data.get("cores", 0)))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return hit if hit.reliable and hit.measured else None


def _write(path: Path, result: LatencyComparison) -> None:
    """Cache ``result`` at ``path`` when it is reliable and measured (atomically; a failure is logged, not
    raised)."""
    if not result.measured:
        log.info("latency not cached (a zero timing): %s", path)
        return
    if not result.reliable:
        log.info("latency not cached (%s): %s", result.unreliable_because(), path)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({k: v for k, v in asdict(result).items() if k != "cached"}, f)
        os.replace(tmp, path)
    except OSError as exc:  # a read-only cache only means measuring again next time
        log.info("latency cache not written (%s): %s", path, exc)


def compare(float_model: Model, quant_model: Model, feed: dict[str, np.ndarray], *,
            cache_dir: Path | None = None, use_cache: bool = True, budget_s: float = 2.0,
            float_config: dict[str, str] | None = None) -> LatencyComparison:
    """:func:`measure`, read from / written to the on-disk cache (``cache_dir`` or :func:`default_cache_dir`).
    Models are serialized bytes or ModelProtos (:data:`Model`). A cached entry is not read when
    :func:`remeasure_requested`, nor when its figures are not reliable; a measurement is written only
    when reliable (:attr:`LatencyComparison.reliable`)."""
    float_model, quant_model = _Timed(float_model), _Timed(quant_model)
    path = (cache_dir or default_cache_dir()) / f"{cache_key(float_model, quant_model, feed, float_config)}.json"
    if use_cache and not remeasure_requested():
        hit = _read(path)
        if hit is not None:
            return hit
    result = measure(float_model, quant_model, feed, budget_s=budget_s, float_config=float_config)
    if use_cache:
        _write(path, result)
    return result
