"""A collapsed group box holding nodes kept float has the dashed outline those nodes have.

After a calibration of nudenet_320n (recipe choice: preset + 9 units kept float) the op colouring's legend read
"dashed dark blue outline: kept float (16 nodes)", but model.0 and model.1, collapsed boxes of nodes kept
float, had no outline: nothing on the screen showed where those 16 nodes were until their boxes were opened.
"""

from __future__ import annotations

from graph_models import blocks_model
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter


def _outline_pixels(canvas, g: int, colour: QColor) -> int:
    """Pixels of ``colour`` in the 6-px band around collapsed group ``g``'s box, the scene drawn at scale 1."""
    d = canvas._state.data
    k = d.group_ids.index(g)
    box = QRectF(d.gx0[k], d.gy0[k], d.gx1[k] - d.gx0[k], d.gy1[k] - d.gy0[k])
    source = box.adjusted(-8, -8, 8, 8)
    image = QImage(int(source.width()), int(source.height()), QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    canvas.scene().render(painter, QRectF(image.rect()), source)
    painter.end()
    hits = 0
    for x in range(image.width()):
        for y in range(image.height()):
            inside = 8 <= x < image.width() - 8 and 8 <= y < image.height() - 8
            c = image.pixelColor(x, y)
            if not inside and abs(c.red() - colour.red()) + abs(c.green() - colour.green()) + abs(
                    c.blue() - colour.blue()) < 60:
                hits += 1
    return hits


def test_collapsed_boxes_of_float_nodes_have_the_dashed_outline(qtbot, make_canvas):
    canvas = make_canvas(900, 700)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(blocks_model(3, 3), depth=0)
    d = canvas._state.data
    group = {d.hierarchy.titles[g]: g for g in d.group_ids}
    assert set(group) == {"blk0", "blk1", "blk2"} and all(g in d.placement.collapsed for g in group.values())
    canvas.set_float_nodes(["/blk0/Relu_0", "/blk0/Relu_1", "/blk0/Relu_2", "/blk2/Relu_1"])
    mark = canvas._state.float_mark
    assert canvas._groups_item.float_boxes() == {group["blk0"], group["blk2"]}
    assert _outline_pixels(canvas, group["blk0"], mark) > 100  # was 0: no outline on a box
    assert _outline_pixels(canvas, group["blk2"], mark) > 100
    assert _outline_pixels(canvas, group["blk1"], mark) == 0
    canvas.set_float_nodes([])
    assert canvas._groups_item.float_boxes() == set()
    assert _outline_pixels(canvas, group["blk0"], mark) == 0
