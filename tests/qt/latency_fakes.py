"""Jobs run in this process with the latency measurements replaced (no timing in the tests).

``slow_quantized(monkeypatch)``: the app's background jobs run in a thread of the test process
(:class:`InProcessJob` instead of a child process, so the replacements apply), the latency check measures
every quantized model 1.5x its float model (1.0 ms vs 1.5 ms: slower by a margin the latency fallback acts
on, so it keeps every island float) and each unit probe of the latency placement measures the quantized
unit faster (it keeps none float), as on a loaded machine where quantization does not pay.
"""

from __future__ import annotations

from workbench.core.jobs import JOBS
from workbench.core.pipeline import latency_check, latency_placement
from workbench.core.runtime import unit_latency
from workbench.core.runtime.latency import LatencyComparison
from workbench.qt import runs
from workbench.qt.workers import ThreadJob

FLOAT_S = 1.0e-3


class InProcessJob(ThreadJob):
    """``ProcessJob``'s interface, the job run in a thread of this process."""

    def __init__(self, name: str, payload: dict, *, title: str, grace: float = 5.0, writes=None, parent=None):
        super().__init__(lambda progress, cancel: JOBS[name](payload, progress, cancel), title=title, parent=parent)
        self.name, self.payload, self.grace, self.writes = name, payload, grace, writes
        self.written_when_killed = False  # a thread is never killed


def slow_quantized(monkeypatch, ratio: float = 1.5, float_s: float = FLOAT_S) -> None:
    """Quantized models measure ``ratio`` x float (a float run of ``float_s`` seconds: under 0.5 ms and 50 us
    slower, a microsecond model); unit probes measure quantized faster (see the module)."""
    monkeypatch.setattr(runs, "ProcessJob", InProcessJob)
    monkeypatch.setattr(latency_check, "compare",
                        lambda f, q, feed, **k: LatencyComparison(float_s=float_s, quant_s=float_s * ratio, runs=5))
    monkeypatch.setattr(unit_latency, "compare",
                        lambda f, q, feed, **k: LatencyComparison(float_s=FLOAT_S, quant_s=FLOAT_S / 2, runs=5))


def quantized_faster(monkeypatch) -> None:
    """Quantized models measure half their float model's latency and every unit probe pays: the latency check
    keeps nothing float, so a test's calibration quantizes what the recipe says on a loaded machine too."""
    slow_quantized(monkeypatch, ratio=0.5)


def _fixed_whole(f, q, feed, **k):
    return LatencyComparison(float_s=FLOAT_S, quant_s=FLOAT_S / 2, runs=5)


def _fixed_probe(f, q, feed, **k):
    return LatencyComparison(float_s=FLOAT_S, quant_s=FLOAT_S * 2, runs=5)


def apply_fixed_latency() -> None:
    """Fixed measurements for a process of its own (``cli_quantize(..., fixed_latency=True)``): every quantized
    model measures half its float model's latency, every unit probe of the latency placement its quantized unit
    twice the float one (the placement keeps each probed unit float, as attention's MatMuls on a quiet machine
    here: its int8 share is off, which would keep none of digits_cnn's 4 Conv/Gemm units float), so the CLI and
    the app decide alike on a loaded machine."""
    latency_check.compare = _fixed_whole
    unit_latency.compare = _fixed_probe
    latency_placement.MIN_INT8_SHARE = 0.0


def fixed_latency(monkeypatch) -> None:
    """:func:`apply_fixed_latency` in this process, and the app's jobs run in it (see the module)."""
    monkeypatch.setattr(runs, "ProcessJob", InProcessJob)
    monkeypatch.setattr(latency_check, "compare", _fixed_whole)
    monkeypatch.setattr(unit_latency, "compare", _fixed_probe)
    monkeypatch.setattr(latency_placement, "MIN_INT8_SHARE", 0.0)
