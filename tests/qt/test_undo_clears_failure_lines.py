"""Ctrl+Z of an edit whose jobs failed: the histogram's error line ("No histogram of ...: wrongnames.npz has no
array ...") stayed over an empty plot after the data that broke it was undone, and the Calibration panel kept
"Calibrate failed: ..." about data no longer chosen. The undo now draws the histogram again and the panel says
the failure was of the undone edit."""

from __future__ import annotations

import numpy as np
from bundled_example import EXAMPLE

CONV = "/f/f.3/Conv"


def test_undo_of_failing_data_clears_the_histogram_error_and_the_failed_line(qtbot, window, open_file, tmp_path,
                                                                            dialogs):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    good = {"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}
    assert win.doc.data == good
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.focus_node(CONV)
    assert "values in [" in win.errors.hist_title.text()
    wrong = tmp_path / "wrongnames.npz"
    np.savez(wrong, image=np.zeros((4, 1, 8, 8), np.float32))
    with qtbot.waitSignal(win.runs.histogramFailed, timeout=300_000):
        win.calibration.set_data_spec({"kind": "npz", "path": str(wrong)}, None)
        win._on_spec_changed()  # one undoable edit, as the panel's Browse... makes
    failed = win.errors.hist_title.text()
    assert failed.startswith("No histogram of ") and "wrongnames.npz has no array for input 'input'" in failed
    with qtbot.waitSignal(win.runs.finished, timeout=300_000):
        win.act_calibrate.trigger()
    assert win.calibration.status.text().startswith("Calibrate failed:")
    assert win.status_label.text().startswith("Calibrate failed:")
    assert "wrongnames.npz" in dialogs.texts()
    dialogs.clear()

    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.act_undo.trigger()  # the data that worked, back
    assert win.doc.data == good
    assert win.errors.hist is not None and "values in [" in win.errors.hist_title.text()
    assert "No histogram" not in win.errors.hist_title.text()
    panel = win.calibration.status.text()
    assert not panel.startswith("Calibrate failed") and "wrongnames" not in panel, panel
    assert "F5" in panel
    assert win.status_label.text().startswith("Undone: "), win.status_label.text()
