"""Starting the app without a display prints one line and exits with status 2 (Qt printed its
multi-line xcb message and aborted, exit 134)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from workbench.qt.main import NO_DISPLAY


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the X11 / Wayland check is Linux's")
def test_no_display_is_one_line_and_status_2(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    missing = tmp_path / "nothing.onnx"
    run = subprocess.run([sys.executable, "-c", "import sys; from workbench.qt.main import main; "
                          f"sys.exit(main([{str(missing)!r}]))"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr == NO_DISPLAY + "\n" and run.stdout == ""
    assert NO_DISPLAY.startswith("error: no display: ") and "QT_QPA_PLATFORM=offscreen" in NO_DISPLAY
