"""Small pictures draw each node's op type readable inside its box, and the frame titles' node test is indexed.

``render digits_cnn --max-side 416`` drew its op types in the scene-sized font at 4 px (the view at 40 %), and a
quantized digits_cnn there (26 %, the legend taller) drew blank boxes. Every shown node's op type is now drawn
at screen size inside its box: 10 px, down to 8 px for a long one, cut at the end where even that is too wide,
none where the box is lower than the label. The open frames' titles are kept off the node boxes by a grid
index (:class:`group_labels.NodeIndex`), which must answer as the brute-force test over every node did.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from PySide6.QtCore import Qt
from test_render_node_label_sizes import _op_text_px

from workbench.qt.canvas import group_labels
from workbench.qt.canvas.group_labels import FITTED_MIN_PX, LABEL_PX, NodeIndex, place_labels
from workbench.qt.render import render_to_file

DIGITS_OPS = {"Conv": 3, "Relu": 3, "MaxPool": 1, "AveragePool": 1, "Flatten": 1, "Gemm": 1}


def test_a_small_picture_draws_every_op_type_readable_once(qtbot, corpus, tmp_path):
    out = tmp_path / "small.svg"
    render_to_file(str(corpus / "digits_cnn" / "model_opset17.onnx"), str(out), max_side=416)
    svg = out.read_text(encoding="utf-8")
    sizes = _op_text_px(svg, set(DIGITS_OPS))
    assert {op: len(px) for op, px in sizes.items()} == DIGITS_OPS  # each node's op type drawn once
    every = {px for each in sizes.values() for px in each}
    assert min(every) >= FITTED_MIN_PX and max(every) <= LABEL_PX, sizes  # before: 4.05 px each
    assert sizes["Conv"] == [float(LABEL_PX)] * 3


def _fit(box, title):
    return place_labels(np.array([box], dtype=float), [title], np.array([True]), 1.0, title_bar=30.0,
                        elide=Qt.TextElideMode.ElideMiddle, fitted=np.array([True]))


def test_an_op_type_inside_its_box_shrinks_then_is_cut_then_left_out(qtbot):
    whole = _fit([0, 0, 60, 16], "Conv")
    assert [(lab.text, lab.px) for lab in whole] == [("Conv", LABEL_PX)]
    rect = whole[0].rect
    assert 0 <= rect.left() and rect.right() <= 60 and 0 <= rect.top() and rect.bottom() <= 16  # inside
    assert abs(rect.center().x() - 30) < 1 and abs(rect.center().y() - 8) < 1  # centred
    cut = _fit([0, 0, 44, 16], "Unsqueeze")  # too wide at 8 px too: cut at the end
    assert len(cut) == 1 and cut[0].px == FITTED_MIN_PX and cut[0].text.endswith("\u2026")
    assert "Unsqueeze".startswith(cut[0].text[:-1]) and len(cut[0].text) >= 4
    assert _fit([0, 0, 60, 6], "Conv") == []  # lower than the smallest label
    assert _fit([0, 0, 16, 16], "Unsqueeze") == []  # fewer than 3 characters would fit


def _brute(rects: np.ndarray, r, scale: float) -> bool:
    b = rects * scale
    left, top, right, bottom = r
    return bool(((b[:, 0] < right) & (left < b[:, 2]) & (b[:, 1] < bottom) & (top < b[:, 3])).any())


def _random_nodes(rng, n: int) -> np.ndarray:
    x, y = rng.uniform(-3000, 3000, n), rng.uniform(-3000, 3000, n)
    w, h = rng.uniform(5, 150, n), rng.uniform(5, 54, n)
    return np.stack([x, y, x + w, y + h], axis=1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_node_index_answers_as_the_brute_force_test(seed):
    rng = np.random.default_rng(seed)
    nodes = _random_nodes(rng, 400)
    index = NodeIndex(nodes)
    hits = 0
    for scale in (0.02, 0.1, 0.31, 1.0):
        for _ in range(400):
            x, y = rng.uniform(-3200, 3200, 2) * scale
            r = (x, y, x + rng.uniform(1, 160), y + rng.uniform(1, 14))
            expected = _brute(nodes, r, scale)
            assert index.covers(r, scale) == expected, (scale, r)
            hits += expected
    # edges that touch do not overlap, as in the brute-force test
    x0, y0, x1, y1 = nodes[0]
    assert not index.covers((x1, y0, x1 + 10, y1), 1.0) or _brute(nodes, (x1, y0, x1 + 10, y1), 1.0)
    assert 200 < hits < 1400  # both answers seen often
    assert not NodeIndex(np.zeros((0, 4))).covers((0, 0, 10, 10))


class _BruteIndex:
    def __init__(self, rects):
        self.rects = np.asarray(rects, dtype=float).reshape(-1, 4)

    def covers(self, r, scale=1.0):
        return _brute(self.rects, r, scale)


def test_frame_titles_placed_with_the_index_as_with_the_brute_force_test(monkeypatch):
    """A random layout of open frames (titles left of or above them: their bars too low) among nodes: the
    labels placed with the index are those the brute-force test placed, at several zooms."""
    rng = np.random.default_rng(7)
    nodes = _random_nodes(rng, 300)
    x, y = rng.uniform(-3000, 3000, 80), rng.uniform(-3000, 3000, 80)
    frames = np.stack([x, y, x + rng.uniform(200, 900, 80), y + rng.uniform(200, 900, 80)], axis=1)
    titles = [f"model.{k}/block" for k in range(80)]
    collapsed = np.zeros(80, dtype=bool)
    for scale in (0.05, 0.15, 0.3):
        kwargs = dict(title_bar=30.0, elide=Qt.TextElideMode.ElideMiddle)
        fast = place_labels(frames, titles, collapsed, scale, nodes=NodeIndex(nodes), **kwargs)
        with monkeypatch.context() as m:
            m.setattr(group_labels, "NodeIndex", _BruteIndex)
            slow = place_labels(frames, titles, collapsed, scale, nodes=_BruteIndex(nodes), **kwargs)
        assert [(lab.k, lab.rect.getRect(), lab.text) for lab in fast] == \
            [(lab.k, lab.rect.getRect(), lab.text) for lab in slow]
        free = place_labels(frames, titles, collapsed, scale, **kwargs)  # no node to keep off
        assert 5 < len(fast) < len(free)  # some placed, some left out for a node (13 of 38, 57 of 75, 77 of 78)
        for lab in fast:  # and none over a node
            r = lab.rect
            assert not _brute(nodes, (r.left() * scale, r.top() * scale, r.right() * scale, r.bottom() * scale), scale)


def test_the_digits_svg_has_no_op_type_under_its_label(qtbot, corpus, tmp_path):
    """The node item leaves out its own (4 px) op type where the screen-size label draws it: one text per node."""
    out = tmp_path / "small.svg"
    render_to_file(str(corpus / "digits_cnn" / "model_opset17.onnx"), str(out), max_side=416)
    words = re.findall(r">([^<]*)</text>", out.read_text(encoding="utf-8"))
    assert words.count("Conv") == 3 and words.count("Relu") == 3  # before: 6 each (label and 4 px text)
