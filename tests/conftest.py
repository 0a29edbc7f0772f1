"""Shared fixtures: paths to ../shared (corpus, cases).

Where those folders are absent the tests that need them skip, unless ``WORKBENCH_REQUIRE_CORPUS=1``
(set by ``.ci/run``): then every skip is a failure, except those whose reason is in
:data:`ALLOWED_SKIPS` (conditions a CI machine cannot meet).
"""

from __future__ import annotations

import os
from pathlib import Path

import onnx
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QTWEBENGINE_CHROMIUM_FLAGS", "--no-sandbox")

from shared_paths import CASES, CORPUS  # noqa: E402

REQUIRE = os.environ.get("WORKBENCH_REQUIRE_CORPUS", "") not in ("", "0")
#: Skip reasons that stay skips under WORKBENCH_REQUIRE_CORPUS (the machine, not the checkout).
ALLOWED_SKIPS = ("not enough free disk space",)


def _missing(what: str, path: Path):
    if REQUIRE:
        pytest.fail(
            f"{what} not found at {path} and WORKBENCH_REQUIRE_CORPUS=1: provide ../shared "
            "(or WORKBENCH_SHARED) instead of skipping",
            pytrace=False,
        )
    pytest.skip(f"{what} not found at {path}")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own on-disk cache root (latency measurements), never the user's, and reads it
    (a user's WORKBENCH_REMEASURE_LATENCY is not the tests')."""
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("WORKBENCH_REMEASURE_LATENCY", raising=False)


@pytest.fixture(scope="session")
def corpus():
    """Folder of the real-model corpus; skips the test where it is absent (fails when required)."""
    if not CORPUS.is_dir():
        _missing("corpus", CORPUS)
    return CORPUS


@pytest.fixture(scope="session")
def cases():
    """Folder of the failure cases; skips the test where it is absent (fails when required)."""
    if not CASES.is_dir():
        _missing("cases", CASES)
    return CASES


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under WORKBENCH_REQUIRE_CORPUS=1, a skip (a missing model, a missing dev dependency) fails."""
    outcome = yield
    report = outcome.get_result()
    if not REQUIRE or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
    if any(allowed in reason for allowed in ALLOWED_SKIPS):
        return
    report.outcome = "failed"
    report.longrepr = f"skipped under WORKBENCH_REQUIRE_CORPUS=1: {reason}"


@pytest.fixture
def usage_error(capsys):
    """``usage_error(argv)``: the one-line usage error ``workbench-cli argv`` prints on stderr (stripped), after
    checking that it exits with status 2 and prints no traceback."""
    from workbench.cli import main

    def run(argv: list[str]) -> str:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        return err.strip()

    return run


class FakeClock:
    """Stands in for the ``time`` module of :mod:`workbench.core.runtime.latency`: ``wall_ns`` / ``cpu_ns`` are
    what the wall clock and the thread CPU clock read; ``load`` is the load average the measurement reads,
    ``sessions`` counts the sessions opened (two per measurement) and ``script(model)`` gives, for a model's
    bytes or proto, ``run(k)`` = (wall ns, thread CPU ns) that run ``k`` of its session takes."""

    def __init__(self) -> None:
        self.wall_ns = self.cpu_ns = self.sessions = 0
        self.load = 0.0
        self.script = None

    def perf_counter(self) -> float:
        return self.wall_ns * 1e-9

    def perf_counter_ns(self) -> int:
        return self.wall_ns

    def thread_time_ns(self) -> int:
        return self.cpu_ns

    def quantized_at(self, ratio: float, float_s: float = 1e-3) -> None:
        """Script every run of a model holding a DequantizeLinear to take ``ratio`` x ``float_s`` and every run of
        any other model (a float model, or one written with every unit float) ``float_s``, by both clocks."""
        float_ns, quant_ns = round(float_s * 1e9), round(float_s * ratio * 1e9)

        def runs(model):
            ns = quant_ns if _has_dq(model) else float_ns
            return lambda k: (ns, ns)

        self.script = runs


def _has_dq(model) -> bool:
    """True when ``model`` (bytes or a ModelProto) holds a DequantizeLinear node."""
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load_from_string(model)
    return any(n.op_type == "DequantizeLinear" for n in proto.graph.node)


class _ScriptedSession:
    """Run ``k`` of the session (0: the untimed first run, 1-2: warm runs, 3 on: the timed runs) advances the
    clocks by ``run(k)``."""

    def __init__(self, clock: FakeClock, run) -> None:
        self.clock, self.script, self.k = clock, run, 0

    def run(self, outputs, feed):
        wall, cpu = self.script(self.k)
        self.k += 1
        self.clock.wall_ns += wall
        self.clock.cpu_ns += cpu
        return []


@pytest.fixture
def fake_latency(monkeypatch):
    """A :class:`FakeClock` that :mod:`workbench.core.runtime.latency` times with, its sessions scripted by the
    clock's ``script`` (set it before measuring), on 2 cores: every figure a test reads is exact."""
    from workbench.core.runtime import latency

    clock = FakeClock()

    def session(model, config=None, split=None):
        clock.sessions += 1
        return _ScriptedSession(clock, clock.script(model))

    monkeypatch.setattr(latency, "time", clock)
    monkeypatch.setattr(latency, "single_thread_session", session)
    monkeypatch.setattr(latency, "_load_average", lambda: clock.load)
    monkeypatch.setattr(latency, "usable_cores", lambda: 2)
    return clock


@pytest.fixture
def digits_cnn_written_float(corpus, tmp_path, capsys, fake_latency):
    """(float model, the file ``workbench-cli quantize`` writes of it with every unit left float): digits_cnn with
    its quantized model scripted at 1.25x a 20 us float run, which leaves every unit float at once ("quantization
    does not pay at this size"; an Intel Xeon measures it so quiet). What quantize printed is read away."""
    from workbench.cli import main  # noqa: PLC0415 - only tests that ask for this fixture run the CLI

    model = corpus / "digits_cnn" / "model_opset17.onnx"
    fake_latency.quantized_at(1.25, float_s=2e-5)
    out = tmp_path / "model.int8.onnx"
    assert (
        main(
            [
                "quantize",
                str(model),
                "--data",
                str(model.parent / "calib.npz"),
                "--samples",
                "8",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert "(0 of 5 node units quantized" in capsys.readouterr().out
    return model, out
