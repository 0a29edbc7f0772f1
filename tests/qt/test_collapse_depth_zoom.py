"""Collapse All (Ctrl+[) and Open to Depth keep looking where the view looked, as Expand All does:
the selected node (else the one nearest the view's centre) stays where it was drawn, at no less than
the readable zoom (``readable.readable_scale``), instead of a whole-graph fit that is unreadable on a
long model. Offscreen."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from graph_models import blocks_model  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.qt.canvas.readable import readable_scale  # noqa: E402


def readable(view) -> float:
    return min(1.0, readable_scale(view._state.data))


def drawn_centre(view, name: str):
    """Viewport pixel where node ``name`` is drawn (its group box's centre when it is hidden in one)."""
    rect = view._drawn_rect(view._state.data.index[name])
    return view.mapFromScene(rect.center())


def open_blocks(qtbot, make_canvas, depth: int):
    view = make_canvas(900, 700)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(blocks_model(60, 4), depth=depth)
    return view


def test_collapse_all_keeps_the_selection_in_place_readable(qtbot, make_canvas):
    view = open_blocks(qtbot, make_canvas, depth=1)
    assert not any(view.shown_groups().values())  # 60 open groups
    # Qt shows the scroll bars from a queued call: on a loaded machine it had run before layoutReady,
    # and the collapsed graph, narrower than the view, was then centred 6 px off (448 for 442)
    qtbot.waitUntil(view.verticalScrollBar().isVisible)
    name = "/blk30/Relu_2"
    view.select_nodes([name], center=True)
    before = drawn_centre(view, name)
    view.collapse_all()
    assert all(view.shown_groups().values())  # 60 boxes
    assert view.transform().m11() >= readable(view)  # was a whole-graph fit of 60 boxes
    assert (drawn_centre(view, name) - before).manhattanLength() <= 2  # its box where the node was
    assert view.viewport().rect().contains(drawn_centre(view, name))
    QApplication.processEvents()  # Qt's queued calls (the scroll bars) move nothing afterwards
    assert (drawn_centre(view, name) - before).manhattanLength() <= 2


def test_open_to_depth_keeps_the_node_nearest_the_centre_readable(qtbot, make_canvas):
    view = open_blocks(qtbot, make_canvas, depth=0)
    view.resetTransform()
    view.centerOn(view.group_scene_rect("blk20").center())
    view.expand_to_depth(1)
    assert not any(view.shown_groups().values())
    assert view.transform().m11() >= readable(view)  # was a whole-graph fit of 240 nodes
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    members = view.group_members("blk20")
    assert any(shown.intersects(view.node_scene_rect(n)) for n in members)  # still looking at blk20
    assert view.sceneRect().contains(view.scene_bounds())  # the rest is a scroll away
