"""Screenshots of the real main window for the README (run under Xvfb; see scripts/screenshot.sh).

Opens a model (default: the bundled example), calibrates and analyses it in the background,
selects the worst node unit (its histogram with the clip range shows), colours the canvas by SQNR
and saves a PNG; a file quantized elsewhere (nothing to calibrate) is saved as it opens, coloured by
dtype. ``--theme light|dark`` picks the theme; ``--problems`` first makes the README
tutorial's edit (the first Conv's activation to int16, a producer / consumer spec conflict) and
shows the Problems dock in front. Settings and autosaves go to a temporary folder, not the user's.

    bash scripts/screenshot.sh docs/screenshot.png
    bash scripts/screenshot.sh docs/screenshot-dark.png --theme dark
    bash scripts/screenshot.sh docs/problems.png --problems
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

WIDTH, HEIGHT = 1400, 860
TIMEOUT_S = 120


def _isolate(folder: str) -> None:
    """QSettings (window layout, recent files, theme) and autosaves in ``folder``."""
    from workbench.qt import autosave

    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(fmt, QSettings.Scope.UserScope, folder)
    autosave.autosave_dir = lambda: Path(folder) / "autosave"


def _int16_edit(win) -> None:
    """The README tutorial's step 2: every Conv selected, activation dtype int16 in the inspector."""
    win.search.setText("Conv")
    win.run_search()
    win.inspector.roles["activation"].dtype.setCurrentText("int16")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="docs/screenshot.png")
    parser.add_argument("model", nargs="?", help="model or project (default: the bundled example)")
    parser.add_argument("--theme", choices=("light", "dark"), default="light")
    parser.add_argument("--problems", action="store_true", help="the tutorial's int16 edit, Problems dock in front")
    args = parser.parse_args(argv)
    app = QApplication.instance() or QApplication(["workbench"])
    app.setApplicationName("Workbench")
    _isolate(tempfile.mkdtemp(prefix="workbench-screenshot-"))

    from workbench.qt.app_window import MainWindow
    from workbench.qt.main import example_model
    from workbench.qt.theme import apply_theme

    apply_theme(app, args.theme)
    win = MainWindow()
    win.resize(WIDTH, HEIGHT)
    win.show()
    state = {"done": False}

    def quantized_file() -> bool:
        return win.doc.quant_summary is not None

    def after_open(*_):
        if not args.problems and not quantized_file():
            win.start_calibration()

    def after_layout():
        if quantized_file():
            QTimer.singleShot(800, grab)
        elif args.problems and not win.runs.busy and not win.doc.errors:
            _int16_edit(win)  # needs the laid-out canvas: the search selects on it
            win.start_calibration()

    def after_run(kind):
        if kind != "calibrate":
            return
        win.color_by_sqnr()
        if args.problems:
            win.show_problems()
        worst = win.doc.errors[0].node if win.doc.errors else None
        if worst and not args.problems:
            win.runs.histogramReady.connect(lambda *_: QTimer.singleShot(800, grab))
            win.focus_node(worst)  # single selection: the inspector and the histogram show it
        else:
            QTimer.singleShot(1500, grab)

    def grab():
        if state["done"]:
            return
        state["done"] = True
        app.processEvents()
        win.grab().save(args.out)
        print(f"wrote {args.out}")
        win.doc.mark_saved()  # neither edits nor calibration results to save: no prompt on close
        win.close()
        app.quit()

    def give_up():
        print(f"no picture after {TIMEOUT_S} s: the model did not open, lay out or calibrate", file=sys.stderr)
        win.runs.shutdown()  # a job still running: stopped here, so the close on quit does not ask (Stop and Close)
        win.doc.mark_saved()
        app.quit()

    win.modelOpened.connect(after_open)
    win.canvas.layoutReady.connect(after_layout)
    win.runs.finished.connect(after_run)
    win.open_path(args.model or str(example_model()))
    QTimer.singleShot(TIMEOUT_S * 1000, give_up)
    app.exec()
    return 0 if Path(args.out).exists() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
