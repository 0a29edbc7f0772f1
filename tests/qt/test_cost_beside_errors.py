"""View > Cost in a 1024 x 700 window leaves the Errors dock beside it readable: the Cost table's room was taken
from the Errors dock down to its minimum width, 77 px, its title "Err…" and its hint one word a line. A dock
beside a table dock now keeps table_room.SIDE_WIDTH (240 px) at least (offscreen)."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.qt.table_room import SIDE_WIDTH  # noqa: E402


def test_view_cost_leaves_the_errors_dock_readable(qtbot, window, open_file):
    window.resize(1024, 700)
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    errors, cost = window.docks["Errors"], window.docks["Cost"]
    cost.toggleViewAction().trigger()
    qtbot.waitUntil(lambda: cost.widget().table.rowCount() > 0, timeout=60_000)
    qtbot.wait(300)  # the table's room is made on a later turn of the event loop
    QApplication.processEvents()
    assert (window.width(), window.height()) == (1024, 700)
    assert cost.isVisible() and errors.isVisible()
    assert window.tabifiedDockWidgets(cost) == []  # side by side
    assert errors.width() >= SIDE_WIDTH, errors.width()  # was 77 px
    assert cost.width() > errors.width()  # the table still gets the most of the row
