"""A first launch (empty settings) shows the canvas and the Inspector in front, not the Search Hits
dock; the hits come forward only when a search finds nodes, and a later launch does not bring an
empty hit list back in front of the Inspector."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

import workbench
from workbench.qt import settings
from workbench.qt.app_window import MainWindow

EXAMPLE = Path(workbench.__file__).resolve().parent / "resources" / "example" / "digits_cnn.onnx"


def _in_front(win, title: str) -> bool:
    """The dock is shown and not behind another tab of its group."""
    dock = win.docks[title]
    return dock.isVisible() and not dock.visibleRegion().isEmpty()


def _focus_in(widget) -> bool:
    focus = QApplication.focusWidget()
    return focus is not None and (focus is widget or widget.isAncestorOf(focus))


def _launch(qtbot) -> MainWindow:
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    win.activateWindow()
    return win


def test_first_launch_shows_canvas_and_inspector_not_search_hits(qtbot, open_file):
    assert settings.window_state() == (None, None)  # empty settings: a first launch
    win = _launch(qtbot)
    assert not win.docks["Search Hits"].isVisible()
    assert _in_front(win, "Inspector") and win.canvas.isVisible()
    assert not _focus_in(win.docks["Search Hits"])
    open_file(win, EXAMPLE)
    assert not win.docks["Search Hits"].isVisible() and _in_front(win, "Inspector")

    win.search.setText("Conv")
    qtbot.keyClick(win.search, Qt.Key.Key_Return)
    assert _in_front(win, "Search Hits") and len(win.search_hits.names()) == 3
    assert not _in_front(win, "Inspector")  # a tab beside it
    win.close()

    again = _launch(qtbot)  # the saved layout still has the hits dock, but no hits
    assert any(settings.window_state())
    assert again.search_hits.names() == []
    assert not again.docks["Search Hits"].isVisible() and _in_front(again, "Inspector")
    assert not _focus_in(again.docks["Search Hits"])
    again.close()
