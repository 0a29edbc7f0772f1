"""A window showing the diff tab, shrunk from 1920x1080 to 1024x700, gives the panes room: the right column of docks
keeps its share of the window's width (its docks' minimum width at least) and the Errors row its share of the height.

Qt took all of the lost width and height from the graph: the right column sized at the first launch (461 px, 0.24 of
1920) stayed 461 px, the Errors row showing its bars stayed 368 px (its one-line floor was the bars' whole height,
664 px), and the diff panes were 123 and 183 px wide, about 70 px high. Offscreen, ppocrv4_rec (diff_app)."""

from __future__ import annotations

import pytest
from diff_app import calibrated_diff, ppocr_qdq, settle
from latency_fakes import fixed_latency
from PySide6.QtCore import Qt

from workbench.qt import docks
from workbench.qt.app_window import MainWindow


@pytest.fixture
def large_window(qtbot, save_prompts):
    """A main window first shown at 1920x1080 (its first-launch docks sized for that size)."""
    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(1920, 1080)
    win.show()
    settle()
    yield win
    save_prompts.answer = "discard"
    win.close()


def _column(win) -> int:
    """Width of the right column of docks, px."""
    return max(
        d.width()
        for d in win.docks.values()
        if d.isVisible()
        and not d.isFloating()
        and win.dockWidgetArea(d) == Qt.DockWidgetArea.RightDockWidgetArea
    )


def test_docks_give_way_when_the_window_shrinks(
    qtbot, large_window, open_file, tmp_path, monkeypatch, corpus
):
    fixed_latency(monkeypatch)
    win = large_window
    tab = calibrated_diff(qtbot, win, open_file, ppocr_qdq(tmp_path))
    column, errors = _column(win), win.docks["Errors"].height()
    assert column == round(docks.SIDE_WIDTH * 1920)  # 461
    win.resize(1024, 700)
    settle()
    assert (win.width(), win.height()) == (1024, 700)
    least = max(
        max(d.minimumWidth(), d.minimumSizeHint().width())
        for d in win.docks.values()
        if d.isVisible() and win.dockWidgetArea(d) == Qt.DockWidgetArea.RightDockWidgetArea
    )
    assert _column(win) == max(round(column / 1920 * 1024), least), (_column(win), least)  # 292 px, was 461
    assert win.docks["Errors"].height() <= round(errors / 1080 * 700) + 4  # 239 px, was 368
    for canvas in (
        tab.float_canvas,
        tab.canvas,
    ):  # each pane about a third of the tab (123 and 183 px before)
        assert canvas.width() >= 0.3 * tab.width() and canvas.viewport().width() >= 200, canvas.width()
        assert canvas.viewport().height() >= 150, canvas.viewport().height()  # 70 px before
    for title, dock in win.docks.items():  # every panel shown still fits
        if dock.isVisible() and not dock.visibleRegion().isEmpty():
            assert dock.width() >= dock.minimumSizeHint().width(), title
            assert dock.height() >= dock.minimumSizeHint().height(), title
