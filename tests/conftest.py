"""Shared fixtures: paths to ../shared (corpus, cases).

Where those folders are absent the tests that need them skip, unless ``WORKBENCH_REQUIRE_CORPUS=1``
(set by ``.ci/run``): then every skip is a failure, except those whose reason is in
:data:`ALLOWED_SKIPS` (conditions a CI machine cannot meet).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QTWEBENGINE_CHROMIUM_FLAGS", "--no-sandbox")

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared")).resolve()
CORPUS = SHARED / "corpus" / "models"
CASES = SHARED / "cases"
EXAMPLE = ROOT / "resources" / "example"
REQUIRE = os.environ.get("WORKBENCH_REQUIRE_CORPUS", "") not in ("", "0")
#: Skip reasons that stay skips under WORKBENCH_REQUIRE_CORPUS (the machine, not the checkout).
ALLOWED_SKIPS = ("not enough free disk space",)


def _missing(what: str, path: Path):
    if REQUIRE:
        pytest.fail(f"{what} not found at {path} and WORKBENCH_REQUIRE_CORPUS=1: provide ../shared "
                    "(or WORKBENCH_SHARED) instead of skipping", pytrace=False)
    pytest.skip(f"{what} not found at {path}")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own on-disk cache root (latency measurements), never the user's, and reads it
    (a user's WORKBENCH_REMEASURE_LATENCY is not the tests')."""
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("WORKBENCH_REMEASURE_LATENCY", raising=False)


@pytest.fixture
def corpus():
    """Folder of the real-model corpus; skips the test where it is absent (fails when required)."""
    if not CORPUS.is_dir():
        _missing("corpus", CORPUS)
    return CORPUS


@pytest.fixture
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
