"""Starting the app with DISPLAY naming a display no X server answers on (a stale DISPLAY, Xvfb not started)
prints one line and exits with status 2: Qt printed its multi-line xcb message, which blames a missing
libxcb-cursor0, and aborted with exit 134."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.qt.platform_libs import missing_xcb_libraries
from workbench.qt.x_display import no_x_server_message, x_display_answers

#: a display number no test machine runs a server on
NOWHERE = ":9173"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the X11 check is Linux's")
@pytest.mark.skipif(Path("/tmp/.X11-unix/X9173").exists(), reason="an X server runs on :9173")
def test_display_without_a_server_is_one_line_and_status_2(tmp_path):
    if missing_xcb_libraries():
        pytest.skip("Qt's xcb plugin lacks system libraries here (that check comes first)")
    assert x_display_answers(NOWHERE) is False
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["DISPLAY"] = NOWHERE
    run = subprocess.run([sys.executable, "-c", "import sys; from workbench.qt.main import main; "
                          f"sys.exit(main([{str(tmp_path / 'nothing.onnx')!r}]))"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr == no_x_server_message(NOWHERE) + "\n" and run.stdout == ""
    assert run.stderr.startswith("error: no X server answers on DISPLAY=:9173: ")
