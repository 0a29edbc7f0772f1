"""README screenshots of the Evaluate panel and the autotune curve (real window, run under Xvfb).

    QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1600x1000x24" python scripts/screenshot_evaluation.py \\
        evaluate docs/evaluate_minilm.png [CORPUS_MODELS_DIR]
    ... scripts/screenshot_evaluation.py autotune docs/autotune_digits_transformer.png [CORPUS_MODELS_DIR]

``evaluate``: all-MiniLM-L6-v2, calibrated on 8 samples (F5, so the SQNR bars show), then Run >
Evaluate with the paraphrase-retrieval metric file (examples/metrics/minilm_retrieval.py, "Allow
code" ticked). ``autotune``: digits_transformer, calibrated on 16 samples, then Run > Autotune with
cosine on 64 eval samples and a max drop of 0.0005; the point that meets the target with the
fewest units promoted is applied. CORPUS_MODELS_DIR defaults to ../shared/corpus/models. Settings and
autosaves go to a temporary folder; the window closes (nothing to save) once the picture is written.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

from workbench.qt import autosave
from workbench.qt.app_window import MainWindow

ROOT = Path(__file__).resolve().parents[1]


def main(scene: str, out: str, corpus: str | None = None) -> int:
    models = Path(corpus) if corpus else ROOT.parent / "shared" / "corpus" / "models"
    settings_dir = tempfile.mkdtemp(prefix="workbench-screenshot-")  # the default layout, not the user's
    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(fmt, QSettings.Scope.UserScope, settings_dir)
    # autosaves there too: one in the user's folder is offered back (a modal prompt) when the model opens again
    autosave.autosave_dir = lambda: Path(settings_dir) / "autosave"
    app = QApplication.instance() or QApplication(["workbench"])
    app.setApplicationName("Workbench")
    win = MainWindow()
    win.resize(1500, 900)
    win.show()
    steps = {"evaluate": _evaluate_scene, "autotune": _autotune_scene}[scene](win, models)
    done = {"grabbed": False}

    def grab():
        if done["grabbed"]:
            return
        done["grabbed"] = True
        app.processEvents()
        win.grab().save(out)
        print(f"wrote {out}")
        win.doc.mark_saved()  # calibration and evaluation results count as unsaved: the close would ask to save
        win.close()
        app.quit()

    def after_run(kind: str) -> None:
        follow = steps.get(kind)
        if follow is not None:
            QTimer.singleShot(300, lambda: follow() or QTimer.singleShot(1200, grab))

    win.modelOpened.connect(lambda *_: QTimer.singleShot(300, steps["open"]))
    win.runs.finished.connect(after_run)
    win.open_path(steps["path"])
    # the fallback: a job still running is stopped first, so the close on quit asks nothing (Stop and Close)
    QTimer.singleShot(300_000, lambda: (win.runs.shutdown(), win.doc.mark_saved(), app.quit()))
    app.exec()
    return 0 if Path(out).exists() else 1


def _evaluate_scene(win: MainWindow, models: Path) -> dict:
    def opened():
        win.calibration.samples.setValue(8)
        win.start_calibration()

    def calibrated():
        win.color_by_sqnr()
        settings = win.evaluate_panel.settings
        settings.set_metric(str(ROOT / "examples" / "metrics" / "minilm_retrieval.py"))
        settings.allow_code.setChecked(True)
        win.evaluation.start_evaluate()
        return True  # wait for the evaluation

    return {"path": models / "minilm_l6_v2" / "model.onnx", "open": opened, "calibrate": calibrated,
            "evaluate": lambda: None}


def _autotune_scene(win: MainWindow, models: Path) -> dict:
    def opened():
        win.calibration.samples.setValue(16)
        win.start_calibration()

    def calibrated():
        win.color_by_sqnr()
        settings, panel = win.evaluate_panel.settings, win.autotune_panel
        settings.set_metric("cosine")
        settings.samples.setValue(64)
        panel.target.setValue(0.0005)
        win.evaluation.start_autotune()
        return True

    def tuned():
        panel = win.autotune_panel
        promoted = len(panel.final["promoted"])
        index = next(i for i, e in enumerate(panel.points) if e["point"]["promoted"] == promoted)
        win.evaluation.apply_point(index)

    return {"path": models / "digits_transformer" / "model_opset17.onnx", "open": opened,
            "calibrate": calibrated, "autotune": tuned}


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("evaluate", "autotune"):
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:4]))
