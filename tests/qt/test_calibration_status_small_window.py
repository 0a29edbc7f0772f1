"""In a 1024 x 700 window a result's status shows three lines at least (it showed one: "Done: 3 node units
analysed. The latency", the rest behind a scroll bar beside an Inspector saying only "No node selected"): the
Calibration dock grows past a third of the column for them, up to 45 % of it (seen under Xvfb)."""

from __future__ import annotations

from bundled_example import EXAMPLE_MODEL

from workbench.qt.status_fit import SMALL_SHARE, status_room

MIN_LINES = 3  # the lines the box shows at least (status_fit.MIN_LINES)

TEXT = ("Done: 3 node units analysed. The latency check kept 2 units float: their integer kernels measured slower "
        "than float (View > Problems lists them). Ctrl+Z undoes its edit; Analyze (F6) then measures the recipe "
        "as it is. Recipe choice: preset (output SQNR on 16 held-out rows, dB: preset 45.9, mse 45.7).")


def test_three_status_lines_in_a_small_window(qtbot, window, open_file):
    win = window
    win.resize(1024, 700)
    open_file(win, EXAMPLE_MODEL)
    calibration, inspector, panel = win.docks["Calibration"], win.docks["Inspector"], win.calibration
    line = panel.status.fontMetrics().lineSpacing()
    column = calibration.height() + inspector.height()
    panel.set_running(False, TEXT)
    need, shown = status_room(panel)
    assert need > MIN_LINES * line  # more than three lines at this width
    qtbot.waitUntil(lambda: status_room(panel)[1] >= MIN_LINES * line, timeout=5_000)  # one line before
    assert calibration.height() <= SMALL_SHARE * column + 1  # the Inspector keeps the most of the column
    assert calibration.height() + inspector.height() == column
    assert (win.width(), win.height()) == (1024, 700)
