"""A model too large to be read whole opens on its main body: minilm_l6_v2 opened at the top-left
corner on the attention mask's Unsqueeze and Cast with the ``bert`` group cut off; it now opens on
the embeddings group (its title readable, clear of the legend and the minimap), at the readable zoom,
the graph's top in view (1400x900 window, offscreen)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF  # noqa: E402

from workbench.qt.canvas.overlays import overlay_rects  # noqa: E402
from workbench.qt.canvas.readable import readable_scale  # noqa: E402


@pytest.mark.slow
def test_minilm_opens_on_its_embeddings(qtbot, window, open_file, corpus):
    open_file(window, corpus / "minilm_l6_v2" / "model.onnx", timeout=540_000)
    canvas = window.canvas
    qtbot.wait(50)
    assert canvas.transform().m11() >= min(1.0, readable_scale(canvas._state.data))
    view = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    bounds = canvas.scene_bounds()
    assert view.top() <= bounds.top() <= view.bottom()  # the graph's start
    group = canvas.group_scene_rect("bert/embeddings")
    title = QRectF(group.left(), group.top(), min(group.width(), 200.0), 24.0)  # its title bar's start
    assert view.contains(title), (view, group)  # was 1900 scene units left of it
    drawn = QRectF(canvas.mapFromScene(title).boundingRect())
    for overlay in overlay_rects(canvas, QRectF(canvas.viewport().rect())):
        assert not drawn.intersects(overlay), (drawn, overlay)
