"""Shared fixtures: paths to ../shared (corpus, cases) that skip cleanly where absent."""

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


@pytest.fixture
def corpus():
    """Folder of the real-model corpus; skips the test where it is absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture
def cases():
    """Folder of the failure cases; skips the test where it is absent."""
    if not CASES.is_dir():
        pytest.skip(f"cases not found at {CASES}")
    return CASES
