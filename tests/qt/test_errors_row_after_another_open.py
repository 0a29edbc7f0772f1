"""Opening another model after a calibration gives the Errors row back the height a fresh open has (one line:
the new model has no results yet), unless the user set the row's height by hand. It kept the result's height
(324 of 900 px), and the graph had about 40 % of the window."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE_MODEL

pytest.importorskip("PySide6")

from latency_fakes import quantized_faster  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from workbench.qt import docks as dock_layout  # noqa: E402


@pytest.fixture(autouse=True)
def _latency_never_keeps_units_float(monkeypatch):
    quantized_faster(monkeypatch)  # the result's height, not a "nothing is quantized" note's


def _calibrate(qtbot, win) -> None:
    with qtbot.waitSignal(win.runs.finished, timeout=540_000):
        win.start_calibration()
    assert win.doc.errors, win.status_label.text()
    grown = int(dock_layout.SIDE_BY_SIDE_HEIGHT * win.height())
    qtbot.waitUntil(lambda: win.docks["Errors"].height() == grown, timeout=10_000)


def test_another_model_opened_after_a_result_gets_the_fresh_open_layout(qtbot, window, open_file, corpus):
    errors = window.docks["Errors"]
    open_file(window, EXAMPLE_MODEL)
    fresh_errors, fresh_canvas = errors.height(), window.canvas.height()
    assert fresh_errors <= 100
    _calibrate(qtbot, window)
    open_file(window, corpus / "digits_mlp" / "model_opset17.onnx")
    assert not window.doc.errors
    qtbot.waitUntil(lambda: errors.height() == fresh_errors, timeout=10_000)
    assert window.canvas.height() == fresh_canvas
    assert errors.isVisible() and "calibrate" in window.errors.summary.text()
    # and its first result grows the row again, as the first result of the session did
    _calibrate(qtbot, window)


def test_a_height_set_by_hand_is_kept_when_another_model_opens(qtbot, window, open_file, corpus):
    errors = window.docks["Errors"]
    open_file(window, EXAMPLE_MODEL)
    _calibrate(qtbot, window)
    window.resizeDocks([errors], [250], Qt.Orientation.Vertical)  # the user drags the row's edge
    qtbot.waitUntil(lambda: errors.height() == 250, timeout=10_000)
    open_file(window, corpus / "digits_mlp" / "model_opset17.onnx")
    qtbot.wait(50)
    assert errors.height() == 250
