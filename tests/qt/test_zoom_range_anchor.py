"""Zoom range and anchors on a graph that fits below the fixed floor (offscreen).

A 20,000-node chain fits the window at about 0.0004 while the zoom stopped at ``MIN_SCALE`` (0.002): after "Fit
graph" the first zoom-in jumped about 5x and zooming out never came back to the fitted view. The keys zoomed toward
the cursor whenever it rested over the canvas (in a corner: the graph left the view in three steps), and the wheel
used Qt's anchor under the mouse, which reads the last mouse move Qt saw (without mouse tracking: the last drag's).
Now the zoom reaches down to the fitted scale, the keys keep the view's centre (or the selection) in place and the
wheel keeps the scene point under the mouse.
"""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from graph_models import TALL_ROWS as ROWS  # noqa: E402
from PySide6.QtCore import QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QCursor, QTransform, QWheelEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.qt.canvas.view import MIN_SCALE  # noqa: E402

HALF = 0.5 + 1e-9  # scroll positions are whole pixels: the kept point is drawn within half a pixel


@pytest.fixture
def tall(tall):
    """conftest's tall chain (2,000 nodes 500 scene units apart in a 900 x 700 canvas), fitted."""
    tall.fit()
    return tall


def _scene_at(view, at: QPointF) -> QPointF:
    return view.viewportTransform().inverted()[0].map(at)


def _drawn_at(view, point: QPointF) -> QPointF:
    return view.viewportTransform().map(point)


def _graph_in_view(view) -> bool:
    drawn = view.viewportTransform().mapRect(view.scene_bounds())
    return view.viewport().rect().toRectF().adjusted(-1, -1, 1, 1).contains(drawn)


def _wheel(view, at: QPointF, notches: int) -> None:
    vp = view.viewport()
    event = QWheelEvent(at, QPointF(vp.mapToGlobal(at.toPoint())), QPoint(0, 0), QPoint(0, 120 * notches),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(vp, event)


def test_zoom_steps_from_the_fitted_scale_and_back(tall):
    view = tall
    fit = view.transform().m11()
    assert fit < MIN_SCALE / 2  # the case: the whole graph needs less than the floor
    assert view.min_zoom() == pytest.approx(fit, rel=1e-12)
    assert _graph_in_view(view)
    view.zoom_in()
    assert view.transform().m11() == pytest.approx(fit * 1.25, rel=1e-9)  # one step (was 0.002: 1.43 steps)
    view.zoom_in()
    assert view.transform().m11() == pytest.approx(fit * 1.25 ** 2, rel=1e-9)
    view.zoom_out()
    view.zoom_out()
    assert view.transform().m11() == fit  # back to the fitted view (stopped at 0.002 before)
    assert _graph_in_view(view)
    view.zoom_out()
    _wheel(view, QPointF(300, 200), -3)
    assert view.transform().m11() == fit  # never below it
    assert _graph_in_view(view)


def test_keys_zoom_around_the_view_centre_wherever_the_cursor_rests(tall):
    view = tall
    vp = view.viewport()
    QCursor.setPos(vp.mapToGlobal(QPoint(5, 5)))  # resting in the canvas's top-left corner
    centre = vp.rect().toRectF().center()
    for _ in range(4):
        kept = _scene_at(view, centre)
        view.zoom_in()
        drawn = _drawn_at(view, kept)
        assert abs(drawn.x() - centre.x()) <= HALF and abs(drawn.y() - centre.y()) <= HALF, drawn.toTuple()
    assert view.viewportTransform().mapRect(view.scene_bounds()).intersects(vp.rect().toRectF())  # left it before
    for _ in range(4):
        view.zoom_out()
    assert _graph_in_view(view)


def test_the_wheel_keeps_the_scene_point_under_the_mouse(tall):
    view = tall
    for at, notches in ((QPointF(200, 150), 2), (QPointF(700, 520), 3), (QPointF(450, 90), -1)):
        kept = _scene_at(view, at)
        before = view.transform().m11()
        _wheel(view, at, notches)
        assert view.transform().m11() == pytest.approx(before * 1.0015 ** (120 * notches), rel=1e-9)
        drawn = _drawn_at(view, kept)
        assert abs(drawn.x() - at.x()) <= HALF and abs(drawn.y() - at.y()) <= HALF, (at.toTuple(), drawn.toTuple())


def test_the_selection_stays_where_it_is_shown(tall):
    view = tall
    view.setTransform(QTransform.fromScale(0.05, 0.05))
    name = f"c0r{ROWS // 2}"
    view.centerOn(view.node_scene_rect(name).center() + QPointF(2000, 1500))  # the node up and left of the centre
    view.select_nodes([name])
    shown = _drawn_at(view, view.selection_scene_rect().center())
    view.zoom_in()
    drawn = _drawn_at(view, view.selection_scene_rect().center())
    assert view.transform().m11() == pytest.approx(0.0625, rel=1e-9)
    assert abs(drawn.x() - shown.x()) <= HALF and abs(drawn.y() - shown.y()) <= HALF
