"""A model opens at a zoom where its labels can be read: the group titles and the op types of
the nodes in view are at least 9 px high on screen (font pixel size times the view scale), the
view starts at the graph's top, and scroll bars reach the rest. A small graph still opens whole.
Measured on the corpus models that opened as pale untitled boxes (nudenet_320n, 0.23), a hairline
(ppocrv4_rec, 0.09) and tiny boxes (minilm_l6_v2, 0.16) in a 1400x900 window (offscreen)."""

from __future__ import annotations

import numpy as np
import pytest
from bundled_example import EXAMPLE_MODEL

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF  # noqa: E402
from PySide6.QtGui import QFontInfo  # noqa: E402

from workbench.qt.canvas import groups_item, items  # noqa: E402

READABLE = 9.0  # px


def px(font) -> float:
    return float(font.pixelSize() if font.pixelSize() > 0 else QFontInfo(font).pixelSize())


def labels_in_view(canvas) -> dict[str, float]:
    """Kind of label drawn in the viewport ("node", "box", "frame") -> its height on screen, px."""
    items._Fonts.ensure()
    groups_item._Fonts.ensure()
    scale = canvas.transform().m11()
    view = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    d = canvas._state.data
    out = {}
    shown = ~np.isnan(d.x0)
    inside = shown & (d.x1 >= view.left()) & (d.x0 <= view.right()) & (d.y1 >= view.top()) & (d.y0 <= view.bottom())
    if inside.any():
        out["node"] = px(items._Fonts.op) * scale
    for k, g in enumerate(d.group_ids):
        box = QRectF(d.gx0[k], d.gy0[k], d.gx1[k] - d.gx0[k], d.gy1[k] - d.gy0[k])
        if box.intersects(view):
            kind = "box" if g in d.placement.collapsed else "frame"
            font = groups_item._Fonts.title if kind == "box" else groups_item._Fonts.frame
            out[kind] = px(font) * scale
    return out


@pytest.mark.slow
@pytest.mark.parametrize("model", ["nudenet_320n", "ppocrv4_rec", "minilm_l6_v2"])
def test_a_large_model_opens_readable_at_its_start(qtbot, window, open_file, corpus, model):
    assert (window.width(), window.height()) == (1400, 900)
    open_file(window, corpus / model / "model.onnx", timeout=540_000)
    canvas = window.canvas
    qtbot.wait(50)  # the scroll bars the view needs are laid out
    shown = labels_in_view(canvas)
    assert shown, "nothing in view"
    # was nudenet 4.6 px (boxes without titles), ppocrv4_rec 1.5 px, minilm_l6_v2 2.1 px
    assert min(shown.values()) >= READABLE, (canvas.transform().m11(), shown)
    view = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    bounds = canvas.scene_bounds()
    assert view.top() <= bounds.top() <= view.bottom()  # the graph's start is in view
    # the rest is reachable: the scroll range covers the whole graph
    reach = canvas.sceneRect()
    assert reach.contains(bounds), (reach, bounds)
    legend = canvas.legend_overlay.geometry().translated(-canvas.viewport().pos())
    top = canvas.mapFromScene(bounds.topLeft())
    assert not legend.contains(top)  # not under the legend


def test_a_small_model_still_opens_whole(qtbot, window, open_file):
    open_file(window, EXAMPLE_MODEL)
    canvas = window.canvas
    view = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    assert view.contains(canvas.scene_bounds())
    assert min(labels_in_view(canvas).values()) >= READABLE
    assert not canvas.verticalScrollBar().isVisible() and not canvas.horizontalScrollBar().isVisible()
