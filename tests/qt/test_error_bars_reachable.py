"""Every bar of the Errors chart is reachable, and the selected one stays in view (offscreen).

A new user on nudenet_320n / ppocrv4_rec (51 to 147 units) saw 2-4 bars once a bar was selected (the histogram
beside them, the colour legend wrapped to four lines under them) and no scroll bar: the others could not be
reached but by a wheel turn that zoomed instead. Now a scroll bar sits beside the bars whenever some are out of
view, the wheel scrolls, Up / Down / Page Up / Page Down / Home / End move the selected bar, and the selected bar
is scrolled into view when it changes or the plot is resized.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402

from workbench.qt.error_view import ErrorView  # noqa: E402

UNITS = 51


def _rows(n: int = UNITS) -> list:
    return [SimpleNamespace(node=f"/model.{i}/conv/Conv", op_type="Conv", sqnr_db=5.0 + 0.5 * i, tensor=f"t{i}")
            for i in range(n)]


def _hist() -> dict:
    values = np.random.default_rng(0).normal(size=4000)
    counts, edges = np.histogram(values, bins=64)
    return {"tensor": "t0", "unit": "/model.0/conv/Conv", "counts": counts.tolist(), "edges": edges.tolist(),
            "rmin": float(values.min()), "rmax": float(values.max()), "values": 4000}


@pytest.fixture
def view(qtbot):
    v = ErrorView()
    qtbot.addWidget(v)
    v.resize(1050, 330)  # the Errors dock of a 1600x1000 screen
    v.show()
    qtbot.waitExposed(v)
    v.set_rows(_rows())
    v.set_histogram(_hist(), None)  # a bar selected: the histogram beside the bars
    qtbot.wait(50)
    return v


def _in_view(v) -> set[int]:
    lo, hi = v.bars_plot.getPlotItem().vb.viewRange()[1]
    return {i for i in range(len(v.rows)) if lo <= i <= hi}


def test_scroll_bar_reaches_every_bar(view):
    shown = view.rows_shown()
    assert 5 <= shown < UNITS  # the bars kept their height beside the histogram (it was 2-4 rows)
    assert view.bars_scroll.isVisible()
    assert (view.bars_scroll.minimum(), view.bars_scroll.maximum(), view.bars_scroll.pageStep()) == (0, UNITS - shown,
                                                                                                       shown)
    reached = set()
    for value in range(view.bars_scroll.maximum() + 1):
        view.bars_scroll.setValue(value)
        assert view.top_row == value
        assert _in_view(view) == set(view.rows_in_view()) and len(view.rows_in_view()) == shown
        reached |= _in_view(view)
    assert reached == set(range(UNITS))


def test_wheel_scrolls_rows_and_never_zooms(view):
    box = view.bars_plot.getPlotItem().vb
    span = np.diff(box.viewRange()[1])[0]
    view._on_wheel(-120)  # what the view box's wheel event calls: one step down
    assert view.top_row == 3 and np.diff(box.viewRange()[1])[0] == span
    view._on_wheel(120)
    assert view.top_row == 0


def test_keys_move_the_selection_through_every_bar(view, qtbot):
    clicked = []
    view.nodeClicked.connect(clicked.append)
    view.bars_plot.setFocus()
    qtbot.keyClick(view.bars_plot, Qt.Key.Key_Down)  # nothing selected: the first bar in view
    assert clicked == [view.rows[0].node] and view.selected_row() == 0
    for i in range(1, UNITS):
        qtbot.keyClick(view.bars_plot, Qt.Key.Key_Down)
        assert view.selected_row() == i and clicked[-1] == view.rows[i].node
        assert i in _in_view(view), (i, view.top_row)  # scrolled along
    assert view.bars_scroll.value() == UNITS - view.rows_shown()
    qtbot.keyClick(view.bars_plot, Qt.Key.Key_Down)  # the last bar stays selected
    assert view.selected_row() == UNITS - 1
    qtbot.keyClick(view.bars_plot, Qt.Key.Key_Home)
    assert view.selected_row() == 0 and view.top_row == 0
    qtbot.keyClick(view.bars_plot, Qt.Key.Key_PageDown)
    assert view.selected_row() == view.rows_shown() and view.selected_row() in _in_view(view)
    qtbot.keyClick(view.bars_plot, Qt.Key.Key_End)
    assert view.selected_row() == UNITS - 1 and UNITS - 1 in _in_view(view)
    qtbot.keyClick(view.bars_plot, Qt.Key.Key_Up)
    assert view.selected_row() == UNITS - 2
    assert len(clicked) == UNITS + 5


def test_selected_bar_is_outlined_and_kept_in_view(view, qtbot):
    node = view.rows[40].node
    view.show_selected(node)  # the canvas selected it
    assert 40 in _in_view(view)
    pens = view._bars.opts["pens"]
    assert pens[40].widthF() == 3 and all(p.widthF() < 1 for i, p in enumerate(pens) if i != 40)
    view.resize(1050, 260)  # the dock made lower: fewer rows, the selected one still shown
    qtbot.waitUntil(lambda: view.rows_shown() < 9, timeout=5000)
    assert 40 in _in_view(view)
    view.clear_histogram()  # the histogram hidden, the bars wider
    qtbot.wait(50)
    assert 40 in _in_view(view)
    view.set_rows(_rows())  # new figures: still the selected unit in view
    assert view.selected_row() == 40 and 40 in _in_view(view)
    view.show_selected(None)
    assert all(p.widthF() < 1 for p in view._bars.opts["pens"])


def test_no_scroll_bar_when_every_bar_fits(qtbot):
    v = ErrorView()
    qtbot.addWidget(v)
    v.resize(1050, 600)
    v.show()
    qtbot.waitExposed(v)
    v.set_rows(_rows(6))
    assert v.rows_shown() == 6 and not v.bars_scroll.isVisible() and _in_view(v) == set(range(6))
