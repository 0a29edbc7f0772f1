"""The Calibration panel's Path field draws a path too long for it from a whole letter: in a 1024 x 700 window
the bundled example's calibration file read "n_calib.npz" with a sliver of the "n" before it at the left edge
(a QLineEdit scrolled to the text's end starts at a pixel). It now reads "…calib.npz" (292 px column) while not edited,
and the whole path while it has the keyboard focus (offscreen)."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE

pytest.importorskip("PySide6")

from workbench.qt.path_field import PathField  # noqa: E402

ELLIPSIS = "\u2026"


def test_a_long_path_is_drawn_from_a_whole_letter(qtbot, window, open_file):
    window.resize(1024, 700)
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    field = window.calibration.path
    whole = str(EXAMPLE / "digits_cnn_calib.npz")
    assert isinstance(field, PathField) and field.text() == whole and field.toolTip() == whole
    metrics = field.fontMetrics()
    room = field.text_room()
    assert metrics.horizontalAdvance(whole) > room.width()  # it cannot show the whole path
    shown = field.shown_text()
    assert shown.startswith(ELLIPSIS) and whole.endswith(shown[1:]) and len(shown) > 8, shown
    assert shown[1:].endswith("calib.npz")  # the right column keeps its share of the narrower window: 292 px
    assert metrics.horizontalAdvance(shown) <= room.width()
    # what Qt drew before: the text's end at the room's right edge, its start cut at the left edge
    plain_start = room.right() + 1 - metrics.horizontalAdvance(whole)
    assert plain_start < room.left()
    field.setFocus()
    qtbot.waitUntil(field.hasFocus, timeout=5_000)
    assert field.shown_text() == whole  # editing: the whole path
