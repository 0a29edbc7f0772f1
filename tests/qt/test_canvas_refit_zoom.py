"""Expand All, Collapse All and Open to Depth keep the selection in view at the readable zoom, and the zoom actions
zoom toward the selection (nudenet_320n, whose expanded picture is many times the collapsed one; offscreen)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF  # noqa: E402

from workbench.core.api import open_model  # noqa: E402
from workbench.qt.canvas.readable import readable_scale  # noqa: E402


def shown_part(view, scene_rect: QRectF) -> float:
    """Fraction of ``scene_rect`` (its area, in viewport pixels) that the viewport shows."""
    drawn = view.mapFromScene(scene_rect).boundingRect()
    visible = drawn.intersected(view.viewport().rect())
    return visible.width() * visible.height() / max(drawn.width() * drawn.height(), 1)


def all_shown(view, scene_rect: QRectF) -> bool:
    """The viewport shows ``scene_rect`` but for the rounding of its edges to whole pixels."""
    return shown_part(view, scene_rect) >= 0.99


@pytest.mark.slow
def test_expand_collapse_all_fit_and_zoom_keeps_the_selection(qtbot, make_canvas, corpus):
    canvas = make_canvas(1200, 800)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(open_model(corpus / "nudenet_320n" / "model.onnx").proto)
    canvas.expand_all()  # every node drawn, at the readable zoom (a whole-graph fit could not be read)
    assert canvas.transform().m11() >= min(1.0, readable_scale(canvas._state.data))
    assert canvas.sceneRect().contains(canvas.scene_bounds())  # the rest a scroll away
    names = canvas.node_names()
    canvas.select_nodes([names[40]])
    before = canvas.transform().m11()
    for _ in range(4):
        canvas.zoom_in()
    assert canvas.transform().m11() == pytest.approx(before * 1.25 ** 4)
    assert all_shown(canvas, canvas.node_scene_rect(names[40]))  # zoomed toward it
    canvas.select_nodes([names[-5]], center=True)  # a node deep in model.22, shown at 100 %
    canvas.collapse_all()
    assert len(canvas.shown_groups()) == 17
    assert canvas.transform().m11() >= min(1.0, readable_scale(canvas._state.data))  # not a whole-graph fit
    assert all_shown(canvas, canvas.selection_scene_rect())  # model.22's box, where the node was
    canvas.expand_to_depth(1)
    assert canvas.transform().m11() >= min(1.0, readable_scale(canvas._state.data))
    assert all_shown(canvas, canvas.selection_scene_rect())
