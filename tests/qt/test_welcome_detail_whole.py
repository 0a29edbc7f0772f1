"""The Start buttons' detail line (the muted second line under each title, "A saved .wbproj: recipe, data and
results") is readable in full: in a 1000 px window Open Project...'s read "A saved .wbproj: recipe, data a", cut off
by its shortcut beside it. The line wraps inside its button now, which grows to hold it, at 1000 px and at the
window's minimum size."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt


def _whole(label) -> bool:
    """Every line of ``label``'s text fits its width, and all its lines its height."""
    needed = label.fontMetrics().boundingRect(QRect(0, 0, label.width(), 10_000), Qt.TextFlag.TextWordWrap,
                                               label.text())
    return needed.width() <= label.width() and needed.height() <= label.height()


@pytest.mark.parametrize("size", [(1000, 700), "minimum"])
def test_each_start_button_shows_its_whole_detail_line(qtbot, window, size):
    width, height = (window.minimumSizeHint().width(), window.minimumSizeHint().height()) if size == "minimum" \
        else size
    window.resize(width, height)
    qtbot.waitUntil(lambda: window.width() <= max(width, window.minimumSizeHint().width()))
    qtbot.wait(50)  # laid out
    buttons = window.welcome.buttons
    assert [b.note.text() for b in buttons.values()] == [
        "An ONNX model (.onnx)", "A saved .wbproj: recipe, data and results", "digits_cnn.onnx, a small CNN, with its data"]
    for button in buttons.values():
        note = button.note
        assert _whole(note), (note.text(), note.size())
        inside = note.geometry()
        assert inside.bottom() < button.height() and inside.right() < button.width()
        assert not note.geometry().intersects(button.keys.geometry())  # the shortcut beside it, not over it
        assert _whole(button.title)
