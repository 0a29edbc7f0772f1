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


def test_a_message_of_thousands_of_words_is_cut_with_a_few_measurements():
    """The cut measured the start ending at every space from the end: a message listing 5,000 node names took
    42 s on each setText and resize. It is a binary search over the spaces now."""
    from PySide6.QtGui import QFont, QFontMetrics

    from workbench.qt.status_line import ELLIPSIS, word_elide

    class Counting(QFontMetrics):
        calls = 0

        def horizontalAdvance(self, text, *a):  # noqa: N802 - Qt's name
            Counting.calls += 1
            return super().horizontalAdvance(text, *a)

    metrics = Counting(QFont())
    text = " ".join(f"/model/layer.{i}/conv/Conv" for i in range(5000))
    shown = word_elide(text, metrics, 600)
    assert shown.endswith(f" {ELLIPSIS}") and text.startswith(shown[:-2])
    assert QFontMetrics(QFont()).horizontalAdvance(shown) <= 600
    longer = text[:text.index(" ", len(shown) - 1)] + f" {ELLIPSIS}"  # one more word does not fit
    assert QFontMetrics(QFont()).horizontalAdvance(longer) > 600
    assert Counting.calls <= 20
