"""A lower window keeps the rows of docks under the graph at their share of its height. Qt takes all of a window's
lost height from the graph: the Errors row grown by a first result in a 1400x900 window (0.36 of it, 324 px) stayed
324 px when the window went to 1024x700, 0.46 of it, and a Compare (diff) tab opened then had its list 190 px tall
beside panes a strip high. Each row now keeps its share of the window (252 px at 700), the list gets its room back,
and every panel still gets at least its minimum height."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from workbench.qt import docks


def _settle(qtbot) -> None:
    for _ in range(10):
        QApplication.processEvents()
    qtbot.wait(50)


def _grown_errors_row(qtbot, win) -> int:
    """The Errors row as the first result of a session leaves it: docks.SIDE_BY_SIDE_HEIGHT of the window."""
    errors = win.docks["Errors"]
    win.resizeDocks([errors], [int(docks.SIDE_BY_SIDE_HEIGHT * win.height())], Qt.Orientation.Vertical)
    _settle(qtbot)
    return errors.height()


def test_a_lower_window_keeps_the_errors_rows_share(qtbot, window):
    win = window
    win.resize(1400, 900)
    _settle(qtbot)
    before = _grown_errors_row(qtbot, win)
    assert before == pytest.approx(0.36 * 900, abs=4)
    win.resize(1024, 700)
    _settle(qtbot)
    errors = win.docks["Errors"]
    assert errors.height() == pytest.approx(before * 700 / 900, abs=4)  # 252 px, not 324
    assert win.centre.height() >= 0.45 * win.height()
    for title, dock in win.docks.items():  # every panel shown still fits
        if dock.isVisible() and not dock.visibleRegion().isEmpty():
            assert dock.height() >= dock.minimumSizeHint().height(), title


def test_a_higher_window_leaves_the_rows_as_they_are(qtbot, window):
    win = window
    win.resize(1024, 700)
    _settle(qtbot)
    before = _grown_errors_row(qtbot, win)
    win.resize(1400, 900)
    _settle(qtbot)
    assert win.docks["Errors"].height() == pytest.approx(before, abs=2)  # the graph gets the new room


def test_lower_then_higher_again_ends_where_it_began(qtbot, window):
    """A maximize / restore cycle: the row made lower gets its share back, and repeated cycles do not shrink it."""
    win = window
    win.resize(1400, 900)
    _settle(qtbot)
    before = _grown_errors_row(qtbot, win)
    for _ in range(3):
        for height in (700, 820, 640, 900):
            win.resize(1400, height)
            _settle(qtbot)
    assert win.docks["Errors"].height() == pytest.approx(before, abs=3)


def test_the_compare_list_has_room_after_the_window_got_lower(qtbot, window, compare_in_app, ort_qdq_file):
    win = window
    win.resize(1400, 900)
    _settle(qtbot)
    _grown_errors_row(qtbot, win)
    win.resize(1024, 700)
    _settle(qtbot)
    tab = compare_in_app(win, EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz", ort_qdq_file, 8)
    with qtbot.waitSignal(tab.panesReady, timeout=300_000):
        pass
    _settle(qtbot)
    assert tab.tree.isVisible()
    assert tab.tree.height() >= 0.36 * win.height()  # 190 px (0.27) before; 270 or so now
    rows = tab.tree.height() // max(1, tab.tree.sizeHintForRow(0))
    assert rows >= 12  # the matched nodes and the groups under them, not a handful
