"""A node's tag pill ("w:i8 b:i32") keeps clear of the arrow head its incoming edges end in at the box's top centre.
The pill was drawn from 2 px left of the box and grows with the zoom-out badge factor (up to 1.43x): on nudenet_320n
quantized (every group open) "w:i8 b:i32" reached 13 px over the arrow head on 58 of its 59 tagged Convs. It now
moves left, past the box's end, when it would come within ``TAG_GAP`` of the head (``items.tag_rect``)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from badge_geometry import badge_sizes
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtCore import QRectF
from PySide6.QtGui import QTransform

from workbench.qt.canvas import items
from workbench.qt.canvas.scene_data import ARROW


def _qdq_conv() -> onnx.ModelProto:
    """x -> Relu -> Q/DQ (u8) -> Conv (weight DQ i8, bias DQ i32) -> Relu -> y: the Conv carries "w:i8 b:i32"."""
    inits = [
        numpy_helper.from_array(np.full((4, 3, 3, 3), 5, np.int8), "w_q"),
        numpy_helper.from_array(np.array(0.01, np.float32), "w_s"),
        numpy_helper.from_array(np.array(0, np.int8), "w_z"),
        numpy_helper.from_array(np.arange(4, dtype=np.int32), "b_q"),
        numpy_helper.from_array(np.array(0.0001, np.float32), "b_s"),
        numpy_helper.from_array(np.array(0, np.int32), "b_z"),
        numpy_helper.from_array(np.array(0.02, np.float32), "x_s"),
        numpy_helper.from_array(np.array(0, np.uint8), "x_z"),
    ]
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu_in"),
        helper.make_node("QuantizeLinear", ["r", "x_s", "x_z"], ["r_q"], name="r_q"),
        helper.make_node("DequantizeLinear", ["r_q", "x_s", "x_z"], ["r_dq"], name="r_dq"),
        helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["w"], name="w_dq"),
        helper.make_node("DequantizeLinear", ["b_q", "b_s", "b_z"], ["b"], name="b_dq"),
        helper.make_node("Conv", ["r_dq", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu_out"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _arrow_heads(data) -> list[QRectF]:
    """Scene rectangles of the arrow heads drawn (``_edge_path``: ARROW either side of the end, 1.4 ARROW high)."""
    xs, top, bottom = data.anchors
    heads = []
    for a, b in data.structure.edges:
        if not np.isnan(xs[b]) and (xs[a], bottom[a]) != (xs[b], bottom[b]):
            heads.append(QRectF(xs[b] - ARROW, top[b] - ARROW * 1.4, 2 * ARROW, ARROW * 1.4))
    return heads


def _tag_rects(data, k: float) -> list[tuple[str, QRectF]]:
    out = []
    for i, text in data.structure.node_tags.items():
        if data.shown(i):
            cx, cy = (data.x0[i] + data.x1[i]) / 2, (data.y0[i] + data.y1[i]) / 2
            out.append((data.names[i], items.tag_rect(text, k).translated(cx, cy)))
    return out


def test_the_drawn_tag_keeps_clear_of_the_conv_s_arrow_head(qtbot, make_canvas, monkeypatch):
    canvas = make_canvas(900, 700, groups=False)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(_qdq_conv(), collapse_qdq=True)
    data = canvas._state.data
    conv = data.index["conv"]
    assert data.structure.node_tags == {conv: "w:i8 b:i32"}
    heads = [
        h for h in _arrow_heads(data) if abs(h.center().x() - (data.x0[conv] + data.x1[conv]) / 2) < 1e-6
    ]
    assert heads  # the edge from relu_in ends on the Conv's top centre
    drawn = []
    real = items._pill

    def spy(painter, x, y, text, fill, right=False, k=1.0):
        if text == "w:i8 b:i32":  # in the viewport's pixels, as painted
            drawn.append(
                (k, painter.worldTransform().mapRect(QRectF(x, y, items._pill_width(text, k), 13.0 * k)))
            )
        real(painter, x, y, text, fill, right, k)

    monkeypatch.setattr(items, "_pill", spy)
    smallest = (
        items.BADGE_MIN_PX / items.op_text_px() + 1e-4
    )  # badges at their largest, just before they hide
    for scale in (1.0, 0.8, 0.7, smallest):
        drawn.clear()
        canvas.setTransform(QTransform.fromScale(scale, scale))
        canvas.centerOn(data.rect(conv).center())
        canvas.viewport().grab()
        assert len(drawn) == 1, scale
        k, pill = drawn[0]
        # was at k 1.43 (scale 0.62): the pill's right end 13 px (scene) past the head's left end
        for head in heads:
            on_screen = canvas.mapFromScene(head).boundingRect().toRectF()
            assert not pill.intersects(on_screen), (scale, k, pill.getRect(), on_screen.getRect())
        scene_pill = items.tag_rect("w:i8 b:i32", k).translated(data.rect(conv).center())
        assert canvas.mapFromScene(scene_pill).boundingRect().toRectF().adjusted(-1, -1, 1, 1).contains(pill)
    assert drawn[0][0] == pytest.approx(
        items.max_badge_factor(), abs=0.03
    )  # the largest pill was drawn and checked
    for k in badge_sizes():  # at 1.0 it starts 2 px left of the box, as before
        assert items.tag_rect("w:i8", k).left() == -items.NODE_W / 2 - 2
    wide = items.tag_rect("w:i8 b:i32", items.max_badge_factor())
    assert wide.right() == pytest.approx(-ARROW - items.TAG_GAP)
    assert canvas._items[conv].boundingRect().contains(wide)  # repainted wherever the moved pill is drawn


@pytest.mark.slow
def test_no_tag_meets_an_arrow_head_on_nudenet(qtbot, make_canvas, nudenet_qdq):
    canvas = make_canvas(1200, 800)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(onnx.load(nudenet_qdq), collapse_qdq=True)
    canvas.expand_all()
    data = canvas._state.data
    heads = _arrow_heads(data)
    assert len(heads) > 400
    for k in badge_sizes():
        tags = _tag_rects(data, k)
        assert len(tags) > 50 and {t for t in data.structure.node_tags.values()} >= {"w:i8 b:i32"}
        hits = [
            (name, tag.getRect(), head.getRect())
            for name, tag in tags
            for head in heads
            if tag.intersects(head)
        ]
        assert hits == [], (k, len(hits), hits[:3])  # was 58 of 59 at k 1.43
