"""A run of the embedded-Netron tests alone ends with exit status 0: the last test's window (its Netron tab's
QWebEnginePage) is deleted before the QApplication, which releases every web profile when it goes. All passed,
then "Release of profile requested but WebEnginePage still not deleted" and a segfault (exit 139) before
``widgets_deleted_before_exit`` (tests/qt/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import PySide6.QtWebEngineWidgets  # noqa: F401 - the app extra installs it; the nested run embeds the page

HERE = Path(__file__).resolve().parent


def test_embedded_netron_tests_run_alone_exit_with_status_0():
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # Chromium refuses to start as root with its sandbox
        env["QTWEBENGINE_CHROMIUM_FLAGS"] = (env.get("QTWEBENGINE_CHROMIUM_FLAGS", "") + " --no-sandbox").strip()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(HERE / "test_netron_embedded.py")],
                         cwd=HERE.parents[1], env=env, capture_output=True, text=True, timeout=540)
    out = run.stdout + run.stderr
    assert "1 passed" in run.stdout, out[-3000:]
    assert "Release of profile requested" not in out, out[-3000:]
    assert run.returncode == 0, out[-3000:]
