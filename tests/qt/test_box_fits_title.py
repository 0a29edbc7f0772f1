"""A collapsed group's box is as wide as its title needs, up to MAX_BOX_W (offscreen).

Every box was BOX_W (240) wide, so a longer title was cut: ppocrv4_rec at its opening depth cut 34 of its 47 box
titles ("Conv.36 – Mul.2…", "Conv.21 – Globa…"). The app measures the title font (``title_metrics``) and the
layout sizes each box by it; the slot a box sits in is at least as wide, so boxes keep apart.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from PySide6.QtGui import QFontMetricsF

from workbench.core.graph.group_layout import BOX_W, GAP_X, MAX_BOX_W
from workbench.qt.canvas.groups_item import TITLE_CHROME, _Fonts, title_metrics
from workbench.qt.canvas.worker import prepare

#: a scope title wider than a 240 box leaves it and narrower than 600's room, and one wider than that
LONG = "attention_output_dense_projection"
TOO_LONG = "encoder_layer_eleven_attention_output_dense_projection_bias_add_and_norm"


def _branches_model(scopes: list[str]) -> onnx.ModelProto:
    """One chain of 3 Relu nodes per scope (``/{scope}/Relu_i``), all reading x, summed by ``/Sum``: at depth 0 one
    row of boxes side by side, then the Sum node."""
    nodes, ends = [], []
    for b, scope in enumerate(scopes):
        prev = "x"
        for i in range(3):
            out = f"b{b}_{i}"
            nodes.append(helper.make_node("Relu", [prev], [out], name=f"/{scope}/Relu_{i}"))
            prev = out
        ends.append(prev)
    nodes.append(helper.make_node("Sum", ends, ["y"], name="/Sum"))
    graph = helper.make_graph(nodes, "branches", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    return helper.make_model(graph)


def _rects(d) -> np.ndarray:
    """Shown nodes and shown groups (boxes and open frames) as (x0, y0, x1, y1) rows, scene units."""
    shown = ~np.isnan(d.x0)
    nodes = np.column_stack([d.x0[shown], d.y0[shown], d.x1[shown], d.y1[shown]])
    return np.vstack([nodes, np.column_stack([d.gx0, d.gy0, d.gx1, d.gy1]).reshape(-1, 4)])


def _overlapping(r: np.ndarray) -> int:
    """Pairs of rectangles that meet without one holding the other (a node or box in its open frame)."""
    meet = (r[:, None, 0] < r[None, :, 2]) & (r[None, :, 0] < r[:, None, 2]) & \
        (r[:, None, 1] < r[None, :, 3]) & (r[None, :, 1] < r[:, None, 3])
    holds = (r[:, None, 0] <= r[None, :, 0]) & (r[:, None, 1] <= r[None, :, 1]) & \
        (r[:, None, 2] >= r[None, :, 2]) & (r[:, None, 3] >= r[None, :, 3])
    bad = meet & ~holds & ~holds.T
    return int(np.triu(bad, 1).sum())


def _shown_titles(canvas) -> list[tuple[str, str, float]]:
    """(title, title drawn, box width) of each collapsed box."""
    d = canvas._state.data
    return [(d.hierarchy.titles[g], canvas._groups_item.box_texts(g, float(d.gx1[k] - d.gx0[k]))[0],
             float(d.gx1[k] - d.gx0[k])) for k, g in enumerate(d.group_ids) if g in d.placement.collapsed]


@pytest.mark.slow
def test_ppocrv4_rec_boxes_show_their_whole_titles_apart(qtbot, make_canvas, corpus):
    canvas = make_canvas(1200, 800)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(onnx.load(corpus / "ppocrv4_rec/model.onnx", load_external_data=False))
    shown = _shown_titles(canvas)
    assert len(shown) == 47  # the opening depth (1): 47 boxes, 34 of them titled longer than a 240 box holds
    assert [drawn for _t, drawn, _w in shown if drawn != _t] == []  # was 34 cut: "Conv.36 – Mul.2…"
    widths = {title: w for title, _d, w in shown}
    assert widths["Conv.36 \u2013 Mul.203"] > BOX_W and max(widths.values()) <= MAX_BOX_W
    metrics = QFontMetricsF(_Fonts.title)
    for title, width in widths.items():  # each as wide as its title needs, not wider; at least BOX_W
        need = math.ceil(TITLE_CHROME + sum(metrics.horizontalAdvance(ch) for ch in title))
        assert width == max(BOX_W, need), title
        assert metrics.horizontalAdvance(title) <= width - TITLE_CHROME
    for depth in (1, 0, 2):  # 2: every group open
        canvas.expand_to_depth(depth)
        assert _overlapping(_rects(canvas._state.data)) == 0, depth
        assert all(drawn == title for title, drawn, _w in _shown_titles(canvas))


def test_box_width_follows_its_title_up_to_the_cap(qtbot, make_canvas):
    canvas = make_canvas(1200, 800)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(_branches_model(["short", LONG, TOO_LONG]), depth=0)
    metrics = QFontMetricsF(_Fonts.title)
    need = math.ceil(TITLE_CHROME + sum(metrics.horizontalAdvance(ch) for ch in LONG))
    assert BOX_W < need < MAX_BOX_W < TITLE_CHROME + metrics.horizontalAdvance(TOO_LONG)
    d = canvas._state.data
    shown = sorted(zip(d.gx0.tolist(), _shown_titles(canvas), strict=True))
    assert [(title, w) for _x, (title, _d, w) in shown] == [("short", BOX_W), (LONG, need), (TOO_LONG, MAX_BOX_W)]
    assert [drawn for _x, (_t, drawn, _w) in shown][:2] == ["short", LONG]
    cut = shown[2][1][1]
    assert "\u2026" in cut and metrics.horizontalAdvance(cut) <= MAX_BOX_W - TITLE_CHROME
    # one row, left to right at least GAP_X apart, the Sum node below them all
    assert len(set(d.gy0.tolist())) == 1
    for (x_left, (_t, _d, w)), (x_right, _next) in zip(shown, shown[1:], strict=False):
        assert x_right >= x_left + w + GAP_X
    assert _overlapping(_rects(d)) == 0
    canvas.expand_all()
    assert _overlapping(_rects(canvas._state.data)) == 0
    assert not canvas._state.data.placement.collapsed


def test_short_titles_keep_the_layout(qtbot):
    """Titles that fit 240: the same plan and placement with the measured font as without (every box BOX_W)."""
    proto = _branches_model(["short", "blk", "a_b_c"])
    a, b = prepare(proto, None, depth=0), prepare(proto, None, depth=0, titles=title_metrics())
    assert b.plan.box_w == {}
    assert np.array_equal(_rects(a), _rects(b))
    assert (b.gx1 - b.gx0).tolist() == [BOX_W] * 3
