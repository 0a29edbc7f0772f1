"""The Calibration panel's status line wraps at the box's width, a long file name too. A project saved under a long
name and opened again said "Done (results restored from ppocrv4_rec_int8_per_channel_minmax_...wbproj): ..."
in a label as wide as that name, wider than the 256 px box at 1024 x 700: the box scrolled sideways and the line
was cut at its right edge (as an export's line did for a long file name, 376 px wide). Names and paths now wrap at their dots, underscores and slashes, and the label is the
box's width; its text (and tooltip) is the line as written, without break marks."""

from __future__ import annotations

from latency_fakes import quantized_faster
from PySide6.QtCore import QRect, Qt
from test_project_done_line import calibrate

from workbench.qt.break_marks import BREAK, breakable

NAME = "ppocrv4_rec_int8_per_channel_minmax_calibrated_on_eight_rows.wbproj"


def test_a_long_project_name_wraps_in_the_status_box(qtbot, window, open_file, corpus, tmp_path, monkeypatch):
    quantized_faster(monkeypatch)
    win = window
    win.resize(1024, 700)
    folder = corpus / "ppocrv4_rec"
    open_file(win, folder / "model.onnx")
    win.calibration.set_data_spec({"kind": "npz", "path": str(folder / "calib.npz")}, 8)
    win._on_spec_changed()
    win.calibration.set_choose_recipe(False)
    win.calibration.analysis_samples.setValue(4)
    calibrate(qtbot, win)
    units = len(win.doc.errors)
    assert units > 0
    win.save_project_to(tmp_path / NAME)
    open_file(win, tmp_path / NAME)

    label = win.calibration.status
    text = label.text()
    assert text.startswith(f"Done (results restored from {NAME}): {units} node units analysed.")
    assert BREAK not in text and label.toolTip() == text
    scroll = label.parentWidget().parentWidget()
    qtbot.waitUntil(lambda: label.width() == scroll.viewport().width())  # wider than the box before
    width = scroll.viewport().width()
    metrics = label.fontMetrics()
    assert metrics.horizontalAdvance(NAME) > width  # the name alone is wider than the box
    assert scroll.horizontalScrollBar().maximum() == 0  # nothing to scroll to sideways
    wrapped = metrics.boundingRect(QRect(0, 0, width, 1 << 20), Qt.TextFlag.TextWordWrap, breakable(text))
    assert wrapped.width() <= width  # every line fits the box
    assert label.heightForWidth(width) >= wrapped.height()  # the box scrolls down to the last line
