"""Opening the Evaluate and Autotune docks beside Errors never widens the window: the panels'
minimum widths fit beside each other at 1400 px, and a window too narrow for both tabs them."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

LONG = "p2o.Add.259_output_0_with_a_very_long_tensor_name: 38400 values in [-1.853, 3.823]; " * 3


def show_autotune(qtbot, window, width: int, height: int) -> None:
    window.resize(width, height)
    qtbot.waitUntil(lambda: window.width() == width)
    window.errors.hist_title.setText(LONG)  # a long histogram caption, as after clicking a bar
    window.evaluation.show_autotune()
    qtbot.wait(50)  # the split and the dock's row are laid out from the event loop


def test_autotune_beside_errors_keeps_the_window_width(qtbot, window):
    show_autotune(qtbot, window, 1400, 900)
    assert window.width() == 1400  # was 1591: Errors' 885 px + Autotune's 700 px minimum
    errors, autotune = window.docks["Errors"], window.docks["Autotune"]
    assert errors.minimumSizeHint().width() + autotune.minimumSizeHint().width() < 1000
    assert autotune.isVisible() and window.tabifiedDockWidgets(autotune) == [window.docks["Evaluate"]]
    assert errors.geometry().right() < autotune.geometry().left()  # side by side


def test_docks_too_wide_to_share_a_row_are_tabbed(qtbot, window):
    window.errors.setMinimumWidth(700)  # with Evaluate's 477 px more than a 1000 px window holds
    show_autotune(qtbot, window, 1000, 700)
    assert window.width() == 1000
    assert window.docks["Evaluate"] in window.tabifiedDockWidgets(window.docks["Errors"])
