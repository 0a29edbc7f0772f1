"""CI sets WORKBENCH_REQUIRE_CORPUS=1: a corpus/cases test then fails where ../shared is missing
instead of passing by skipping."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(tmp_path, require: bool):
    env = dict(os.environ, WORKBENCH_SHARED=str(tmp_path / "no-shared"), PYTHONPATH=str(ROOT))
    env.pop("WORKBENCH_REQUIRE_CORPUS", None)
    if require:
        env["WORKBENCH_REQUIRE_CORPUS"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_quant_reader.py", "tests/test_cases_prep.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True)


def test_missing_shared_fails_when_required(tmp_path):
    proc = _run(tmp_path, require=True)
    assert proc.returncode != 0
    assert "WORKBENCH_REQUIRE_CORPUS=1" in proc.stdout and " skipped" not in proc.stdout.splitlines()[-1]


def test_missing_shared_skips_when_not_required(tmp_path):
    proc = _run(tmp_path, require=False)
    assert proc.returncode == 0 and "skipped" in proc.stdout.splitlines()[-1]
