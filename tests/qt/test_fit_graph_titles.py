"""Zoomed out to the whole graph ("Fit graph"), the group boxes keep a readable title: drawn at a
screen size of its own where the scene-sized title would be a few pixels. ppocrv4_rec showed blank
boxes there (titles under 3.5 px were not drawn) and nudenet_320n titles about 5 px high. Read off the
picture the canvas paints: the dark text across each collapsed box's row is at least 7 px high (a
10 px font's capitals) and the title's text is what the label says."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF  # noqa: E402
from PySide6.QtGui import QFontMetricsF, QImage  # noqa: E402

from workbench.qt.canvas.group_labels import LABEL_PX, LABEL_W, label_font  # noqa: E402

TEXT_HIGH = 7  # px: the capitals of a LABEL_PX (10 px) font; the 5 px titles were 3-4 high


def _pixels(canvas) -> np.ndarray:
    """The viewport as drawn now: (h, w) luminance, 0-255."""
    image = canvas.viewport().grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    w, h = image.width(), image.height()
    rgb = np.frombuffer(image.constBits(), dtype=np.uint8).reshape(h, image.bytesPerLine())[:, :3 * w]
    rgb = rgb.reshape(h, w, 3).astype(float)
    return rgb @ np.array([0.299, 0.587, 0.114])


def _text_heights(canvas) -> list[int]:
    """Per collapsed box wholly in view: the height (px) of the dark pixels (text, not the grey edges or
    box outlines) in its rows, and in the rows of a screen-size title centred on it where the box is lower
    than that title (a 9 px box under a 12 px line of text), from its left edge to LABEL_W px past it."""
    lum = _pixels(canvas)
    d = canvas._state.data
    view = canvas.viewport().rect()
    line = QFontMetricsF(label_font()).height()
    out = []
    for k, g in enumerate(d.group_ids):
        if g not in d.placement.collapsed:
            continue
        box = canvas.mapFromScene(QRectF(d.gx0[k], d.gy0[k], d.gx1[k] - d.gx0[k], d.gy1[k] - d.gy0[k])).boundingRect()
        if not view.contains(box):
            continue
        centre = (box.top() + box.bottom()) / 2
        top = max(0, min(box.top() + 1, int(centre - line / 2)))
        bottom = min(view.height(), max(box.bottom(), int(np.ceil(centre + line / 2))))
        rows = lum[top:bottom, box.left() + 1:min(box.left() + int(LABEL_W), view.width())]
        dark = np.flatnonzero((rows < 80).any(axis=1))
        out.append(int(dark[-1] - dark[0] + 1) if len(dark) else 0)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("model", ["ppocrv4_rec", "nudenet_320n"])
def test_fit_graph_keeps_the_box_titles_readable(qtbot, window, open_file, corpus, model):
    open_file(window, corpus / model / "model.onnx", timeout=540_000)
    canvas = window.canvas
    window.act_fit.trigger()
    qtbot.wait(20)
    assert canvas.transform().m11() * 20 < LABEL_PX  # the scene-sized titles would be under 10 px here
    heights = _text_heights(canvas)
    assert len(heights) >= 15, heights  # the boxes in view (ppocrv4_rec 60, nudenet_320n 17)
    # every box titled, but where two titles would overlap one is left out (zooming in shows it)
    readable = sum(h >= TEXT_HIGH for h in heights)
    assert readable >= 0.9 * len(heights), heights
    labels = [lab for lab in canvas._groups_item.screen_labels(canvas.transform().m11()) if lab.node < 0]
    titles = canvas._state.data.hierarchy.titles
    assert {lab.text for lab in labels} & {titles[canvas._state.data.group_ids[lab.k]] for lab in labels}


@pytest.mark.slow
def test_fit_graph_labels_the_nodes_outside_every_group(qtbot, window, open_file, corpus):
    """nudenet_320n at "Fit graph": its 6 nodes outside every group (Resize, Concat between the model.N
    boxes) were blank boxes among titled ones; each shows its op type at the titles' screen size now."""
    open_file(window, corpus / "nudenet_320n" / "model.onnx", timeout=540_000)
    canvas = window.canvas
    window.act_fit.trigger()
    qtbot.wait(20)
    d = canvas._state.data
    singles = [i for i in range(len(d)) if d.hierarchy.node_group[i] < 0 and d.shown(i)]
    assert sorted(d.structure.op_types[i] for i in singles) == ["Concat"] * 4 + ["Resize"] * 2
    labels = {lab.node: lab.text for lab in canvas._groups_item.screen_labels(canvas.transform().m11())
              if lab.node >= 0}
    assert labels == {i: d.structure.op_types[i] for i in singles}
    # drawn: dark text at least TEXT_HIGH px high across each node's row (the op type drawn in the node's
    # scene-sized font is 2-3 px at this zoom)
    lum = _pixels(canvas)
    view = canvas.viewport().rect()
    heights = []
    for i in singles:
        box = canvas.mapFromScene(d.rect(i)).boundingRect()
        assert view.contains(box)
        rows = lum[box.top() - 2:box.bottom() + 3, box.left() + 1:min(box.left() + int(LABEL_W), view.width())]
        dark = np.flatnonzero((rows < 80).any(axis=1))
        heights.append(int(dark[-1] - dark[0] + 1) if len(dark) else 0)
    assert min(heights) >= TEXT_HIGH, heights


def test_the_minimap_thumbnail_has_no_titles(qtbot, window, open_file, corpus):
    """The screen-size titles are the view's: the minimap's thumbnail (the scene rendered without a view)
    stays a picture of the boxes, not a pile of text."""
    open_file(window, corpus / "ppocrv4_rec" / "model.onnx", timeout=540_000)
    canvas = window.canvas
    window.act_fit.trigger()
    pixmap = canvas.minimap()._pixmap.toImage().convertToFormat(QImage.Format.Format_RGB888)
    w, h = pixmap.width(), pixmap.height()
    rgb = np.frombuffer(pixmap.constBits(), dtype=np.uint8).reshape(h, pixmap.bytesPerLine())[:, :3 * w]
    lum = rgb.reshape(h, w, 3).astype(float) @ np.array([0.299, 0.587, 0.114])
    assert (lum < 60).sum() < 20  # no black title text (edges are grey)
