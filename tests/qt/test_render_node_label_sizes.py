"""A rendered graph draws every node's op type readable, and no group title over a node.

``render minilm_l6_v2 --max-side 1800`` (depth 2 open) drew the op type of the nodes outside every group
("Unsqueeze", "Cast", "ReduceSum" around ``bert``) in the 10 px screen-size title font, the nodes inside the
open groups in their scene-sized font (3 px at that zoom); and the ``bert`` title, placed left of its
frame, covered the top-level "Cast" node beside it. Every shown node's op type is now drawn at screen size
inside its box (10 px, down to 8 px for a long one, cut at the end where even that is too wide).
"""

from __future__ import annotations

import re
from xml.dom import minidom

import numpy as np
from PySide6.QtCore import Qt

from workbench.qt.canvas.group_labels import place_labels
from workbench.qt.render import render_to_file

_MATRIX = re.compile(r"matrix\(([-0-9.e]+),")


def _op_text_px(svg: str, ops: set[str]) -> dict[str, list[float]]:
    """Each drawn ``ops`` text -> its pixel heights (font-size times its group's scale); a text cut at the end
    ("Unsque…") counts as its op type's."""
    doc = minidom.parseString(svg)
    out: dict[str, list[float]] = {}
    for text in doc.getElementsByTagName("text"):
        word = text.firstChild.data if text.firstChild is not None else ""
        cut = [op for op in ops if word.endswith("\u2026") and len(word) > 3 and op.startswith(word[:-1])]
        if word not in ops and len(cut) != 1:
            continue
        word = word if word in ops else cut[0]
        scale = 1.0
        node = text.parentNode
        while node is not None and node.nodeType == node.ELEMENT_NODE:
            found = _MATRIX.match(node.getAttribute("transform") or "")
            if found:
                scale *= float(found.group(1))
            node = node.parentNode
        out.setdefault(word, []).append(round(float(text.getAttribute("font-size")) * scale, 2))
    return out


def test_minilm_op_types_drawn_readable(qtbot, corpus, tmp_path):
    out = tmp_path / "minilm.svg"
    render_to_file(str(corpus / "minilm_l6_v2" / "model.onnx"), str(out), max_side=1800)
    sizes = _op_text_px(out.read_text(encoding="utf-8"), {"Cast", "Unsqueeze", "ReduceSum", "Shape"})
    assert set(sizes) == {"Cast", "Unsqueeze", "ReduceSum", "Shape"}, sizes
    every = {px for each in sizes.values() for px in each}
    assert every <= {8.0, 9.0, 10.0}, sizes  # before f2fbca1: {3.1, 10.0}; after it {3.1} (4 px, unreadable)
    assert sizes["Cast"] == [10.0] * 7  # the top-level one and the six in bert, each drawn once


def test_open_frame_title_not_over_a_node_beside_it(qtbot):
    """A frame whose title bar is too low for the title: the title goes left of its top-left corner unless a
    node box lies there (then above the frame)."""
    frame = np.array([[100.0, 100.0, 600.0, 600.0]])
    scale = 0.3  # title bar 9 px < the 10 px font's height
    free = place_labels(frame, ["bert"], np.array([False]), scale, title_bar=30.0,
                        elide=Qt.TextElideMode.ElideMiddle, nodes=np.zeros((0, 4)))
    assert len(free) == 1 and free[0].rect.right() <= 100.0  # left of the frame
    node = np.array([[-60.0, 90.0, 90.0, 144.0]])  # a node box left of the frame's corner
    labels = place_labels(frame, ["bert"], np.array([False]), scale, title_bar=30.0,
                          elide=Qt.TextElideMode.ElideMiddle, nodes=node)
    assert len(labels) == 1
    rect = labels[0].rect
    assert rect.bottom() <= 100.0 + 1e-6 and rect.left() >= 100.0  # above the frame
    x0, y0, x1, y1 = node[0]
    assert not (rect.left() < x1 and x0 < rect.right() and rect.top() < y1 and y0 < rect.bottom())
