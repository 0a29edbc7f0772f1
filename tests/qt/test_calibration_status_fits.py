"""Beside the Inspector, the Calibration panel's status box shows a result's text: the dock grows to show
it whole as far as the Inspector stays more than twice its height, and what still does not fit scrolls in
whole lines. It showed about 2.5 lines of a result (the third cut across) in a 1400 x 900 window."""

from __future__ import annotations

from bundled_example import EXAMPLE_MODEL

from workbench.qt.status_fit import status_room

SENTENCE = ("Done: 147 node units analysed. Recipe choice: preset (output SQNR on 6 held-out rows, dB: preset 30.3, "
            "mse 28.3, compute+mse 28.0). ")


def _lines(panel) -> tuple[float, float]:
    """(lines the status text needs, lines its box shows), in the label's line spacing."""
    need, shown = status_room(panel)
    line = panel.status.fontMetrics().lineSpacing()
    return need / line, shown / line


def test_a_result_shows_whole_beside_the_inspector(qtbot, window, open_file):
    win = window
    open_file(win, EXAMPLE_MODEL)
    calibration, inspector, panel = win.docks["Calibration"], win.docks["Inspector"], win.calibration
    assert inspector.height() > 2 * calibration.height()
    column = calibration.height() + inspector.height()

    panel.set_running(False, SENTENCE + "The Recipe panel shows it; Ctrl+Z restores the preset.")
    need, shown = _lines(panel)
    assert need >= 4 > shown  # four or five lines at the column's width; the box showed 2.5
    qtbot.waitUntil(lambda: _lines(panel)[1] >= _lines(panel)[0], timeout=5_000)  # whole: was 2.5 lines
    assert inspector.height() > 2 * calibration.height()
    assert calibration.height() + inspector.height() == column

    panel.set_running(False, SENTENCE * 8)  # longer than a third of the column can show: it scrolls
    qtbot.waitUntil(lambda: inspector.height() <= 2 * calibration.height() + 3, timeout=5_000)  # at the limit
    qtbot.wait(50)
    assert inspector.height() > 2 * calibration.height()
    need, shown = _lines(panel)
    assert need > shown >= 5 and shown == int(shown)  # whole lines, none cut across at the bottom edge
    scroll = panel.status.parentWidget().parentWidget()
    assert scroll.verticalScrollBar().maximum() > 0

    panel.set_running(True, "")  # a short text next leaves the height the result gave it
    qtbot.wait(50)
    assert inspector.height() <= 2 * calibration.height() + 3
