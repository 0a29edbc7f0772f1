"""Expand All (Ctrl+]) keeps looking where the view looked: the selected node stays in view at a
zoom whose labels can be read, instead of a whole-graph fit of every node (ddddocr: hairlines).
Offscreen."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from graph_models import blocks_model  # noqa: E402

from workbench.qt.canvas.readable import readable_scale  # noqa: E402


def test_expand_all_keeps_the_selection_readable(qtbot, make_canvas):
    view = make_canvas(900, 700)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(blocks_model(12, 12), depth=0)
    assert all(view.shown_groups().values())  # twelve collapsed boxes
    name = "/blk6/Relu_3"
    view.select_nodes([name])
    view.expand_all()
    assert not any(view.shown_groups().values())  # every group open: 144 nodes
    readable = min(1.0, readable_scale(view._state.data))
    assert view.transform().m11() >= readable  # was a whole-graph fit at 0.13
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.contains(view.node_scene_rect(name))
    drawn = view.mapFromScene(view.node_scene_rect(name)).boundingRect()
    assert not drawn.intersects(view.legend_rect())
    assert view.sceneRect().contains(view.scene_bounds())  # the rest is a scroll away


def test_expand_all_without_a_selection_keeps_the_zoom(qtbot, make_canvas):
    view = make_canvas(900, 700)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(blocks_model(12, 12), depth=0)
    view.zoom_in()
    scale = view.transform().m11()
    view.expand_all()
    assert view.transform().m11() == pytest.approx(max(scale, min(1.0, readable_scale(view._state.data))))
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert any(shown.intersects(view.node_scene_rect(n)) for n in view.node_names())
