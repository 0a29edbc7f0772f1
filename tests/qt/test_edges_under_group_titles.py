"""An edge entering an open group never crosses the group's title (pytest-qt, offscreen).

Found by a new-user trial: on the detector case (13_*) the edge from box_head's Mul into score_head's Concat cut
through the title "score_head – c…  (3 nodes)", and on minilm_l6_v2 the edges into encoder's layers ran along
encoder's title bar. An entering edge now runs down a lane beside the frame past the title bar and turns in
below it (``group_layout.ENTRY_H``)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF  # noqa: E402
from PySide6.QtGui import QPainterPath  # noqa: E402

from workbench.core.graph.group_layout import LANE_OFF, TITLE_H  # noqa: E402
from workbench.qt.canvas.edge_colors import edge_ends  # noqa: E402
from workbench.qt.canvas.scene_data import edge_curve  # noqa: E402

B = "score_head_and_concat"


def _model():
    """Groups box_head (a chain of 3 from x), score_head_and_concat (a chain of 3 from y whose last node also reads
    box_head's output: an edge into its third row, as the detector's Concat; its title fills its title bar) and c
    (a chain of 3 from box_head's output: an edge into its first row)."""
    def node(op, ins, name):
        return helper.make_node(op, ins, [name], name=name)

    a, b, c = "/box_head/", f"/{B}/", "/c/"
    nodes = [node("Relu", ["x"], a + "a0"), node("Sigmoid", [a + "a0"], a + "a1"), node("Relu", [a + "a1"], a + "a2"),
             node("Relu", ["y"], b + "b0"), node("Sigmoid", [b + "b0"], b + "b1"), node("Sum", [b + "b1", a + "a2"], b + "b2"),
             node("Relu", [a + "a2"], c + "c0"), node("Sigmoid", [c + "c0"], c + "c1"), node("Relu", [c + "c1"], c + "c2")]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("x", "y")]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in (b + "b2", c + "c2")]
    graph = helper.make_graph(nodes, "titles", ins, outs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _crosses(path: QPainterPath, rect: QRectF) -> bool:
    """True when a segment of the flattened ``path`` enters ``rect`` (Liang-Barsky clipping)."""
    for poly in path.toSubpathPolygons():
        pts = np.array([(p.x(), p.y()) for p in poly])
        for (ax, ay), (bx, by) in zip(pts[:-1], pts[1:], strict=True):
            t0, t1 = 0.0, 1.0
            dx, dy = bx - ax, by - ay
            for p, q in ((-dx, ax - rect.left()), (dx, rect.right() - ax),
                         (-dy, ay - rect.top()), (dy, rect.bottom() - ay)):
                if p == 0:
                    if q < 0:
                        break
                    continue
                r = q / p
                if p < 0:
                    t0 = max(t0, r)
                else:
                    t1 = min(t1, r)
            else:
                if t0 < t1:
                    return True
    return False


def test_edges_entering_a_group_pass_below_its_title(qtbot, make_canvas):
    view = make_canvas(1200, 900, groups=True)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(_model(), depth=1)
    assert view.shown_groups() == {"box_head": False, B: False, "c": False}
    d = view._state.data
    h = d.hierarchy
    a2 = d.index["/box_head/a2"]
    entering = {(a2, d.index[f"/{B}/b2"]): B, (a2, d.index["/c/c0"]): "c"}
    for e, (a, b) in enumerate(d.structure.edges):
        path = QPainterPath()
        edge_curve(path, *edge_ends(d, e), d.routes.get(e), False)  # the curve the canvas draws
        for g in d.group_ids:
            text, rect = view._groups_item.frame_title_text(g)
            assert text.startswith("\u25be  ") and rect.width() > 60, (text, rect)
            assert not _crosses(path, rect), (d.names[a], d.names[b], h.paths[g], rect)
    for (a, b), group in entering.items():  # down beside the frame past its title bar, then in under the title
        frame = view.group_scene_rect(group)
        x, top, bottom = d.routes[d.structure.edges.index((a, b))][0]
        assert x in (frame.left() - LANE_OFF, frame.right() + LANE_OFF)
        assert (top, bottom) == (frame.top(), frame.top() + TITLE_H)
