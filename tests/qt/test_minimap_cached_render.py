"""The minimap keeps its thumbnail in a cached pixmap: the scene is rendered into it again only when the picture
changed (a new scene, new fills) or the thumbnail's size or colours did, not on every refresh (each viewport
resize, a scroll bar shown or hidden, rendered the whole scene). The viewport rectangle is drawn over the cached
pixmap."""

from __future__ import annotations

import onnx
from bundled_example import EXAMPLE_MODEL
from PySide6.QtWidgets import QGraphicsScene


def _counting_renders(monkeypatch) -> list[int]:
    """Counts QGraphicsScene.render calls (the minimap is the only caller here)."""
    calls: list[int] = []
    original = QGraphicsScene.render

    def render(scene, *args):
        calls.append(1)
        return original(scene, *args)

    monkeypatch.setattr(QGraphicsScene, "render", render)
    return calls


def _opened(qtbot, make_canvas):
    canvas = make_canvas(900, 700)
    with qtbot.waitSignal(canvas.layoutReady, timeout=120_000):
        canvas.set_model(onnx.load(EXAMPLE_MODEL))
    return canvas


def test_a_resize_keeping_the_thumbnail_size_renders_nothing(qtbot, make_canvas, monkeypatch):
    canvas = _opened(qtbot, make_canvas)
    minimap = canvas.minimap()
    assert minimap.isVisible()
    size = minimap.size()
    renders = _counting_renders(monkeypatch)
    for width, height in ((1000, 750), (950, 720), (1100, 800)):  # the thumbnail's side stays 180 px
        canvas.resize(width, height)
        qtbot.waitUntil(lambda w=width: canvas.width() == w)
    assert minimap.size() == size
    assert renders == []
    minimap.refresh(canvas.scene_bounds().adjusted(-30, -30, 30, 30))  # as the view calls it: still none
    assert renders == []


def test_new_fills_and_a_new_size_render_the_scene_again(qtbot, make_canvas, monkeypatch):
    canvas = _opened(qtbot, make_canvas)
    minimap = canvas.minimap()
    before = minimap.grab().toImage()
    renders = _counting_renders(monkeypatch)
    names = canvas.node_names()
    canvas.set_node_values(errors={n: 5.0 + i for i, n in enumerate(names)})
    canvas.set_color_mode("error")
    assert len(renders) >= 1  # the picture changed: drawn again
    assert minimap.grab().toImage() != before
    count = len(renders)
    canvas.resize(500, 400)  # the thumbnail shrinks to 30 % of the viewport's shorter side: drawn again
    qtbot.waitUntil(lambda: canvas.width() == 500)
    assert minimap.height() < 180 + 2
    assert len(renders) > count
    count = len(renders)
    minimap.refresh(canvas.scene_bounds().adjusted(-30, -30, 30, 30))
    assert len(renders) == count
