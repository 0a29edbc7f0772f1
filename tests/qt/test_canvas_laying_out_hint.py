"""While the graph of a model just opened is laid out, the canvas says so: for those seconds it read "No model
open. Open an ONNX model..." while the status bar said "Opened digits_cnn.onnx: 10 nodes." (found by a new
user). The open hint shows only while no model is open, and again after a layout that failed."""

from __future__ import annotations

import onnx
from bundled_example import EXAMPLE_MODEL

from workbench.qt.app_window import EMPTY_HINT


def test_the_canvas_says_it_lays_out_the_model_until_the_layout_arrives(qtbot, window):
    win = window
    legend = win.canvas.legend_overlay
    assert legend.text() == EMPTY_HINT
    seen: list[tuple[str, str, bool]] = []
    win.modelOpened.connect(lambda _p: seen.append((win.status_label.text(), legend.text(), win.canvas.opening())))
    with qtbot.waitSignals([win.modelOpened, win.canvas.layoutReady], timeout=300_000):
        win.open_path(EXAMPLE_MODEL)
    assert len(onnx.load(str(EXAMPLE_MODEL)).graph.node) == 10
    assert seen == [("Opened digits_cnn.onnx: 10 nodes.", "Laying out 10 nodes...", True)]
    text = legend.text()
    assert not win.canvas.opening() and "Laying out" not in text and text != EMPTY_HINT
    assert text.splitlines()[0].startswith("op type"), text  # the colour key of the graph shown


def test_a_layout_that_fails_leaves_the_open_hint(qtbot, make_canvas, monkeypatch):
    from PySide6.QtCore import QTimer

    from workbench.qt.canvas import view

    canvas = make_canvas()
    canvas.empty_hint = EMPTY_HINT

    def fail(self, job) -> None:  # the layout process reports a failure instead of a layout
        QTimer.singleShot(0, lambda: self._on_job_failed(job.generation, "layout failed: test"))

    monkeypatch.setattr(view.GraphCanvas, "_start_job", fail)
    with qtbot.waitSignal(canvas.layoutFailed, timeout=60_000):
        canvas.set_model(onnx.load(str(EXAMPLE_MODEL)))
    assert not canvas.opening() and canvas.legend_overlay.text() == EMPTY_HINT
