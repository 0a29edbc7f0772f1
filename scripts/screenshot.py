"""Screenshot of the real main window for the README (run under Xvfb; see scripts/screenshot.sh).

Opens a model (default: the bundled example), calibrates and analyses it in the background,
selects the worst node unit (its histogram with the clip range shows), colours the canvas by SQNR and saves a PNG.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication


def main(out: str, model: str | None = None) -> int:
    from workbench.qt.app_window import MainWindow
    from workbench.qt.main import example_model

    app = QApplication.instance() or QApplication(["workbench"])
    app.setApplicationName("Workbench")
    win = MainWindow()
    win.resize(1500, 900)
    win.show()
    state = {"step": 0}

    def after_open(*_):
        win.start_calibration()

    def after_run(kind):
        if kind != "calibrate":
            return
        win.color_by_sqnr()
        worst = win.doc.errors[0].node if win.doc.errors else None
        if worst:
            win.runs.histogramReady.connect(lambda *_: QTimer.singleShot(800, grab))
            win.focus_node(worst)  # single selection: the inspector and the histogram show it
        else:
            QTimer.singleShot(1500, grab)

    def grab():
        if state["step"]:
            return
        state["step"] = 1
        app.processEvents()
        win.grab().save(out)
        print(f"wrote {out}")
        app.quit()

    win.modelOpened.connect(after_open)
    win.runs.finished.connect(after_run)
    win.open_path(model or str(example_model()))
    QTimer.singleShot(120_000, app.quit)
    app.exec()
    return 0 if Path(out).exists() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshot.png",
                  sys.argv[2] if len(sys.argv) > 2 else None))
