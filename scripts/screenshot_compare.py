"""Screenshot of the float-vs-quantized panes for the README (run under Xvfb, like screenshot.sh).

Opens the float model in the main window, picks its calibration data, compares it with a
quantized file (View > Compare; the per-edge SQNR is measured on ``--samples`` samples), selects
a folded node (or the worst matched one) so both panes centre on the pair, and saves the window.
Without ``QUANTIZED``, onnxruntime's ``quantize_static`` (QDQ, its defaults) quantizes the float
model on the same samples into a temporary file. Settings and autosaves go to a temporary folder.

    QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python \\
        scripts/screenshot_compare.py docs/compare_panes.png \\
        /work/shared/corpus/models/ppocrv4_rec/model.onnx --data /work/shared/corpus/models/ppocrv4_rec/calib.npz
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication, QDockWidget

WIDTH, HEIGHT = 1600, 960


def _isolate(folder: str) -> None:
    from workbench.qt import autosave

    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(fmt, QSettings.Scope.UserScope, folder)
    autosave.autosave_dir = lambda: Path(folder) / "autosave"


def ort_quantize(model: str, data: str, samples: int, out: Path) -> Path:
    """onnxruntime ``quantize_static`` (QDQ, default settings) of ``model`` on ``samples`` samples of ``data``."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    name = onnx.load(model, load_external_data=False).graph.input[0].name
    with np.load(data) as npz:
        x = npz[name if name in npz.files else npz.files[0]][:samples]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{name: x[i:i + 1]} for i in range(len(x))])

        def get_next(self):
            return next(self.it, None)

    quantize_static(model, str(out), Reader(), quant_format=QuantFormat.QDQ)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("model", help="the float model")
    parser.add_argument("quantized", nargs="?", help="its quantized file (default: onnxruntime quantize_static)")
    parser.add_argument("--data", required=True, help="calibration .npz (SQNR is measured on it)")
    parser.add_argument("--samples", type=int, default=4,
                        help="samples the SQNR is measured on (and onnxruntime calibrates on without QUANTIZED)")
    args = parser.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="workbench-screenshot-")
    quantized = args.quantized or str(ort_quantize(args.model, args.data, args.samples, Path(tmp) / "ort.onnx"))
    app = QApplication.instance() or QApplication(["workbench"])
    app.setApplicationName("Workbench")
    _isolate(tmp)

    from workbench.qt.app_window import MainWindow

    win = MainWindow()
    win.resize(WIDTH, HEIGHT)
    win.show()
    state = {"done": False}

    def after_open(*_):
        win.calibration.set_data_spec({"kind": "npz", "path": str(Path(args.data).resolve())}, args.samples)
        # the comparison measures on the Analysis samples (32 unless set), not the calibration samples
        win.calibration.set_analysis_samples(args.samples)
        win._on_spec_changed()
        QTimer.singleShot(200, compare)

    def compare():
        if win._open_job is not None or win.runs.busy:  # the open job is still finishing
            QTimer.singleShot(200, compare)
            return
        win.compare_with(quantized)

    def on_diff(tab):
        for dock in win.findChildren(QDockWidget):  # the diff tab alone: panes as large as the window allows
            dock.hide()
        tab.panesReady.connect(lambda: QTimer.singleShot(300, lambda: focus(tab)))

    def focus(tab):
        d = tab.diff
        print(f"SQNR measured on {d.samples} samples")
        target = next((n for n, _op in d.folded if n in d.folded_into), None)
        if target is None and d.sqnr:
            target = min(d.sqnr, key=d.sqnr.get)
            target = next((m.float_node for m in d.matches if m.quant_node == d.producers.get(target)), None)
        if target:
            tab.panes.select_pair(target, "")
        QTimer.singleShot(800, grab)

    def grab():
        if state["done"]:
            return
        state["done"] = True
        app.processEvents()
        win.grab().save(args.out)
        print(f"wrote {args.out}")
        win.doc.mark_saved()  # the data chosen counts as unsaved: without this the close asks Save / Discard
        win.close()
        app.quit()

    win.modelOpened.connect(after_open)
    win.diffReady.connect(on_diff)
    win.open_path(args.model)
    QTimer.singleShot(240_000, app.quit)
    app.exec()
    return 0 if Path(args.out).exists() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
