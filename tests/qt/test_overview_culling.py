"""The overview draws the node rectangles meeting the exposed area, not all of them (offscreen).

It filled one path per colour holding every node on every paint: a view of a few dozen nodes of a 20,000-node
graph cost 20-40 ms of CPU per paint (fillPath of 20,000 rectangles). Now each paint culls the rectangles to the
exposed rectangle with numpy and draws them with one ``drawRects`` per colour.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6")

from graph_models import TALL_ROWS as ROWS  # noqa: E402
from graph_models import TALL_STEP as STEP  # noqa: E402
from PySide6.QtCore import QPointF  # noqa: E402
from PySide6.QtGui import QColor, QTransform  # noqa: E402

from workbench.qt.canvas.overlays import overlay_rects  # noqa: E402


def _meeting_view(view) -> list[str]:
    """Brute force: the nodes whose rectangle meets the scene area the viewport shows."""
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    return [n for n in view.node_names() if view.node_scene_rect(n).intersects(shown)]


def _clear(view, name: str) -> bool:
    """Node ``name``'s centre is drawn in the viewport, under neither the legend nor the minimap."""
    vp = view.viewport().rect().toRectF()
    at = view.viewportTransform().map(view.node_scene_rect(name).center())
    return vp.contains(at) and not any(r.contains(at) for r in overlay_rects(view, vp))


def _pixel(image, view, point: QPointF) -> QColor:
    at = view.viewportTransform().map(point).toPoint()
    return QColor(image.pixel(at.x() * image.width() // view.viewport().width(),
                              at.y() * image.height() // view.viewport().height()))


@pytest.mark.parametrize("scale", [0.05, 0.2])
def test_a_small_view_of_a_big_graph_draws_its_nodes_only(tall, scale):
    view = tall
    view.setTransform(QTransform.fromScale(scale, scale))
    view.centerOn(QPointF(0.0, 1000 * STEP + STEP / 2))
    in_view = _meeting_view(view)
    image = view.viewport().grab().toImage()
    overview = view._overview
    assert view.overview_visible()
    assert overview.drawn == len(in_view)  # all were drawn before: 2,001
    assert 5 <= len(in_view) <= 30  # of 2,001
    clear = [n for n in in_view if _clear(view, n)]
    assert len(clear) >= 4
    for name in clear:  # each drawn with its fill
        centre = view.node_scene_rect(name).center()
        assert _pixel(image, view, centre) == view.node_color(name), name


def test_the_whole_graph_and_the_selection(tall):
    view = tall
    view.fit()
    view.viewport().grab()
    assert view._overview.drawn == ROWS + 1
    view.setTransform(QTransform.fromScale(0.2, 0.2))
    view.centerOn(QPointF(0.0, 1000 * STEP + STEP / 2))
    in_view = [n for n in _meeting_view(view) if _clear(view, n)]
    picked = in_view[len(in_view) // 2]
    view.select_nodes([picked, "c0r5"])  # one in view, one far from it
    image = view.viewport().grab().toImage()
    centre = view.node_scene_rect(picked).center()
    fill, drawn = view.node_color(picked), _pixel(image, view, centre)
    assert drawn != fill  # the selection's translucent fill over it
    blend = np.array([drawn.red(), drawn.green(), drawn.blue()])
    assert np.abs(blend - np.array([fill.red(), fill.green(), fill.blue()])).max() > 20
    other = in_view[len(in_view) // 2 - 1]
    assert _pixel(image, view, view.node_scene_rect(other).center()) == view.node_color(other)
