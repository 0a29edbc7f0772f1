"""A first launch (empty settings) shows the canvas and the Inspector in front, not the Search Hits
dock; a search that finds nodes selects them and adds the hit list as a tab beside the Inspector,
which stays in front (it shows the selected hits: Enter in the search box put the list in its place
right when the user wanted to edit them), and a later launch does not bring an empty hit list back
in front of the Inspector."""

from __future__ import annotations

from bundled_example import EXAMPLE_MODEL
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from workbench.qt import settings
from workbench.qt.app_window import MainWindow


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
    assert _in_front(win, "Inspector") and win.welcome.isVisible()  # no model yet: the welcome page
    assert not _focus_in(win.docks["Search Hits"])
    open_file(win, EXAMPLE_MODEL)
    assert not win.docks["Search Hits"].isVisible() and _in_front(win, "Inspector") and win.canvas.isVisible()

    win.search.setText("Conv")
    qtbot.keyClick(win.search, Qt.Key.Key_Return)
    # the hits are selected and the Inspector, in front, shows them; the list is a tab beside it
    assert _in_front(win, "Inspector") and len(win.search_hits.names()) == 3
    assert win.inspector.nodes == win.search_hits.names() == ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv"]
    assert win.docks["Search Hits"] in win.tabifiedDockWidgets(win.docks["Inspector"])
    assert not _in_front(win, "Search Hits")
    win.docks["Search Hits"].raise_()  # the user chose the list: a new search leaves it in front
    win.search.setText("Relu")
    qtbot.keyClick(win.search, Qt.Key.Key_Return)
    assert _in_front(win, "Search Hits") and len(win.search_hits.names()) == 3
    win.close()

    again = _launch(qtbot)  # the saved layout still has the hits dock, but no hits
    assert any(settings.window_state())
    assert again.search_hits.names() == []
    assert not again.docks["Search Hits"].isVisible() and _in_front(again, "Inspector")
    assert not _focus_in(again.docks["Search Hits"])
    again.close()
