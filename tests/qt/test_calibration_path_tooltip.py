"""The Calibration panel's Path field shows the end of a long path, cut at its left edge
("igits_cnn_calib.npz" of the bundled example in a 1600 px window); its tooltip holds the whole path
(pytest-qt, offscreen)."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE

pytest.importorskip("PySide6")

from PySide6.QtGui import QFontMetrics  # noqa: E402


def test_path_tooltip_is_the_whole_path(qtbot, window, open_file):
    window.resize(1600, 1000)
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    field = window.calibration.path
    whole = str(EXAMPLE / "digits_cnn_calib.npz")
    assert field.text() == whole
    assert QFontMetrics(field.font()).horizontalAdvance(whole) > field.width()  # the field cannot show it all
    assert field.toolTip() == whole
    field.setText("other.npz")  # typed or browsed: the tooltip follows
    assert field.toolTip() == "other.npz"
