"""The status bar's message is cut at a word with an ellipsis, and its tooltip holds the whole message: a new
user read "... Details: Calibration pan" and "... written a" at the bar's right edge."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel

from workbench.qt.status_line import ELLIPSIS

#: the status line a calibration with the recipe choice and the latency check left (shot of a 1600 px window)
LONG = ("Done, but nothing is quantized: the latency check kept every unit float (the Errors panel says what to "
        "do). Recipe choice: mse (Ctrl+Z undoes). The latency check kept 135 units float. Details: Calibration "
        "panel.")


def _drawn(label) -> str:
    return QLabel.text(label)  # what the label paints, whatever its own text() answers


def test_a_long_status_is_cut_at_a_word_and_whole_in_its_tooltip(qtbot, window):
    window.resize(900, 700)
    qtbot.waitUntil(lambda: window.status_label.width() < 900)
    window.set_status(LONG)
    label = window.status_label
    drawn = _drawn(label)
    assert label.fontMetrics().horizontalAdvance(drawn) <= label.contentsRect().width()
    assert drawn.endswith(f" {ELLIPSIS}") and len(drawn) < len(LONG)
    head = drawn[:-2]
    assert LONG.startswith(head) and LONG[len(head)] == " "  # the last word drawn is whole
    assert label.toolTip() == LONG and label.text() == LONG
    window.resize(1900, 700)  # room for the whole line: drawn whole again
    qtbot.waitUntil(lambda: _drawn(window.status_label) == LONG)


def test_a_short_form_keeps_the_whole_message_in_the_tooltip(qtbot, window):
    window.resize(900, 700)
    window.set_status("Done: 48 node units analysed. Details: Calibration panel.", full=LONG)
    assert _drawn(window.status_label) == "Done: 48 node units analysed. Details: Calibration panel."
    assert window.status_label.toolTip() == LONG
