"""The minimap draws the selection: its cached thumbnail (8fe62b2) is drawn again when the selection changes, as
the main canvas is (selected nodes get a translucent SELECTION fill over theirs), and a thumbnail drawn while zoomed
in shows the whole graph, not only the node items that exist near the view. Before, selecting a node left the
thumbnail as it was, and a thumbnail drawn zoomed in (new fills, or now a selection) showed only the nodes near the
view: the canvas hides its overview item past ``DETAIL_SCALE``, and node items exist only where the view has been.

Pixels are read from ``Minimap.grab()`` at each node's centre (``Minimap._to_map``) and compared with the colours
composed as the painters draw them: the node's fill, the selection's fill (alpha 170) over it, and the viewport
rectangle's tint (alpha 40) where the minimap outlines what the view shows."""

from __future__ import annotations

from graph_models import grid_model
from PySide6.QtGui import QColor
from test_minimap_cached_render import _counting_renders
from test_minimap_cached_render import _opened as opened

from workbench.qt.canvas.colors import SELECTION
from workbench.qt.canvas.items import DETAIL_SCALE


def _over(top: QColor, alpha: int, under: QColor) -> tuple[int, int, int]:
    """``top`` drawn with ``alpha`` (0-255) over the opaque ``under``: (r, g, b)."""
    a = alpha / 255
    return tuple(round(t * a + u * (1 - a)) for t, u in zip(top.getRgb()[:3], under.getRgb()[:3], strict=True))


def _expected(minimap, point, rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """``rgb`` as the minimap shows it at ``point``: under the viewport rectangle's tint where it lies inside it."""
    if minimap.viewport_rect().adjusted(2, 2, -2, -2).contains(point):
        return _over(SELECTION, 40, QColor(*rgb))
    return rgb


def _pixel(minimap, point) -> tuple[int, int, int]:
    return QColor(minimap.grab().toImage().pixel(int(point.x()), int(point.y()))).getRgb()[:3]


def _close(got, want, tolerance: int = 3) -> bool:
    return all(abs(g - w) <= tolerance for g, w in zip(got, want, strict=True))


def _opened(qtbot, make_canvas):
    canvas = opened(qtbot, make_canvas)
    assert canvas.minimap().isVisible()
    return canvas


def _centre(canvas, name: str):
    return canvas.minimap()._to_map(canvas.node_scene_rect(name).center())


def _fill(canvas, name: str) -> tuple[int, int, int]:
    return canvas.node_color(name).getRgb()[:3]


def _selected(canvas, name: str) -> tuple[int, int, int]:
    return _over(SELECTION, 170, canvas.node_color(name))


def test_selecting_a_node_draws_it_selected_in_the_minimap(qtbot, make_canvas, monkeypatch):
    canvas = _opened(qtbot, make_canvas)
    minimap = canvas.minimap()
    name, other = canvas.node_names()[3], canvas.node_names()[6]
    at, other_at = _centre(canvas, name), _centre(canvas, other)
    assert _close(_pixel(minimap, at), _expected(minimap, at, _fill(canvas, name)))
    renders = _counting_renders(monkeypatch)
    canvas.select_nodes([name])
    assert len(renders) == 1  # one render of the scene for the change
    assert _close(_pixel(minimap, at), _expected(minimap, at, _selected(canvas, name)))
    assert _close(_pixel(minimap, other_at), _expected(minimap, other_at, _fill(canvas, other)))
    minimap.refresh(canvas.scene_bounds().adjusted(-30, -30, 30, 30))  # as the view calls it: nothing changed
    canvas.select_nodes([name])  # the same selection: no change
    assert len(renders) == 1
    canvas.select_nodes([])
    assert len(renders) == 2
    assert _close(_pixel(minimap, at), _expected(minimap, at, _fill(canvas, name)))


def test_a_thumbnail_drawn_zoomed_in_shows_every_node(qtbot, make_canvas):
    """A 10 x 24 grid of Relu chains opens at the readable zoom, node items made for the top rows only."""
    canvas = make_canvas(900, 700, groups=False)
    with qtbot.waitSignal(canvas.layoutReady, timeout=120_000):
        canvas.set_model(grid_model(10, 24))
    minimap = canvas.minimap()
    assert canvas.transform().m11() >= DETAIL_SCALE
    assert not canvas.overview_visible()
    names = canvas.node_names()
    assert 0 < canvas.detailed_item_count() < len(names) - 50  # node items only near the view
    far = "c9r23"
    canvas.select_nodes([far])
    for name in names:
        at = _centre(canvas, name)
        want = _selected(canvas, name) if name == far else _fill(canvas, name)
        assert _close(_pixel(minimap, at), _expected(minimap, at, want)), name
    canvas.set_node_values(errors={n: float(i % 40) for i, n in enumerate(names)})
    canvas.set_color_mode("error")  # new fills, drawn while zoomed in
    canvas.select_nodes([])
    for name in names:
        at = _centre(canvas, name)
        assert _close(_pixel(minimap, at), _expected(minimap, at, _fill(canvas, name))), name
    assert not canvas.overview_visible()  # the canvas itself still draws its node items
