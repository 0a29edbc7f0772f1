"""`QT_QPA_PLATFORM=offscreen workbench` (the headless check NO_DISPLAY suggests) prints no
"This plugin does not support propagateSizeHints()" line; other Qt messages still print."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from workbench.qt.qt_notices import print_unless_quiet, quiet_offscreen_notices

NOTICE = "This plugin does not support propagateSizeHints()"

# main() with a window that changes its size limits once shown (as MainWindow does) and no event loop
SCRIPT = textwrap.dedent("""
    import sys
    from PySide6.QtWidgets import QApplication, QWidget

    class Window(QWidget):
        def open_path(self, path):
            self.setMinimumSize(300, 200)
            QApplication.processEvents()

    if __name__ == "__main__":
        import workbench.qt.app_window as app_window
        import workbench.qt.qt_notices as qt_notices
        app_window.MainWindow = Window
        QApplication.exec = lambda *_: 0
        if sys.argv[1] == "unfiltered":
            qt_notices.quiet_offscreen_notices = lambda *_: False
        from workbench.qt.main import main
        sys.exit(main([]))
""")


def _run_main(tmp_path, mode: str) -> subprocess.CompletedProcess:
    script = tmp_path / "run_main.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, str(script), mode], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def test_main_offscreen_prints_no_size_hints_notice(tmp_path):
    unfiltered = _run_main(tmp_path, "unfiltered")
    assert NOTICE in unfiltered.stderr  # the harness does make Qt print it
    run = _run_main(tmp_path, "filtered")
    assert run.returncode == 0, run.stderr
    assert NOTICE not in run.stderr


def test_other_messages_still_print(capsys):
    print_unless_quiet(None, None, NOTICE)
    print_unless_quiet(None, None, "QFont::setPointSize: Point size <= 0 (0), must be greater than 0")
    assert capsys.readouterr().err == "QFont::setPointSize: Point size <= 0 (0), must be greater than 0\n"


def test_installed_only_offscreen():
    assert quiet_offscreen_notices({"QT_QPA_PLATFORM": "xcb"}) is False
    assert quiet_offscreen_notices({}) is False
