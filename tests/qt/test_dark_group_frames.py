"""Open group frames follow the theme: in the dark theme the canvas turned #1e1e20 but the frames kept their
light tints (#eef3fb ...), a bright white box round the bundled example's eight nodes with the edges drawn
across it; now they take dark tints of the same hues, their titles light text (pytest-qt, offscreen)."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE_MODEL

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint  # noqa: E402

from workbench.core.api import open_model  # noqa: E402
from workbench.qt.theme import DARK, LIGHT  # noqa: E402


def _frame_pixels(view):
    """(fill inside the frame beside its nodes, lightest pixel of its title bar), from the drawn viewport."""
    image = view.viewport().grab().toImage()
    rect = view.group_scene_rect("f")
    inside = view.mapFromScene(rect.left() + 6, rect.center().y())
    fill = image.pixelColor(inside)
    top_left = view.mapFromScene(rect.topLeft())
    title_right = view.mapFromScene(rect.right() - 8, rect.top() + 28)
    lightest = max((image.pixelColor(QPoint(x, y)).lightness(), x, y)
                   for x in range(top_left.x() + 20, title_right.x()) for y in range(top_left.y() + 4, title_right.y()))
    return fill, lightest[0]


def test_group_frame_follows_the_dark_theme(qtbot, make_canvas):
    view = make_canvas(900, 900)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(open_model(EXAMPLE_MODEL).proto)
    assert view.shown_groups() == {"f": False}  # the frame of the eight nodes, open
    fill, _ = _frame_pixels(view)
    assert fill.lightness() > 230  # light theme: the light tint

    view.set_theme_colors(DARK.canvas_background, DARK.canvas_edge)
    qtbot.wait(50)
    fill, title = _frame_pixels(view)
    # a tint a little lighter than the dark canvas, and the frame's title in light text on it
    assert 30 < fill.lightness() < 70, fill.name()
    assert title > 190

    view.set_theme_colors(LIGHT.canvas_background, LIGHT.canvas_edge)  # and back
    qtbot.wait(50)
    assert _frame_pixels(view)[0].lightness() > 230
