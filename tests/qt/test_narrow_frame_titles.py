"""A group frame narrower than its title line gives the name the room: the count goes before the name is cut. A
frame one node wide (240 units, 224 px of title line at 100 %) kept "(3 nodes)" and cut
``attention_output_dense_projection_0`` to "atte…on_0", which neither reads nor tells the three frames apart at a
glance; it now reads "attention…jection_0", elided with "…" in the middle (a scope path), and the group's tooltip
(hovering the title) gives the whole path and the count. A frame is as wide as its collapsed box at least, which is as
wide as its title needs up to ``MAX_BOX_W`` (600): the names here are longer than that box holds (a frame 600 wide)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from onnx import TensorProto, helper  # noqa: E402
from PySide6.QtGui import QFontMetricsF  # noqa: E402

from workbench.core.graph.group_layout import MAX_BOX_W  # noqa: E402
from workbench.qt.canvas.groups_item import _Fonts  # noqa: E402

NAME = "encoder_layer_eleven_self_attention_output_dense_projection_with_bias_{}"


def _scoped_chain():
    """Three scopes ``/encoder/{NAME}`` of three Relu nodes each, one after another: each opens as a frame one node
    wide, widened to its collapsed box's width (``MAX_BOX_W``)."""
    nodes, prev = [], "x"
    for b in range(3):
        for i in range(3):
            out = f"t{b}_{i}"
            nodes.append(helper.make_node("Relu", [prev], [out], name=f"/encoder/{NAME.format(b)}/Relu_{i}"))
            prev = out
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 8])])
    return helper.make_model(graph)


def test_a_narrow_frame_shows_its_name_elided_and_the_tooltip_the_whole(qtbot, make_canvas):
    canvas = make_canvas(700, 500)
    with qtbot.waitSignal(canvas.layoutReady, timeout=120_000):
        canvas.set_model(_scoped_chain())
    canvas.expand_all()
    d, groups = canvas._state.data, canvas._groups_item
    h = d.hierarchy
    _Fonts.ensure()
    metrics = QFontMetricsF(_Fonts.frame)
    frames = {h.titles[g]: (k, g) for k, g in enumerate(d.group_ids) if h.titles[g].startswith("encoder_layer")}
    assert sorted(frames) == [NAME.format(b) for b in range(3)]
    for title, (k, g) in frames.items():
        assert float(d.gx1[k] - d.gx0[k]) == MAX_BOX_W  # as wide as its collapsed box, which is capped
        width = float(d.gx1[k] - d.gx0[k]) - 16  # the title line's room in the frame
        assert metrics.horizontalAdvance(f"\u25be  {title}") > width  # the name alone does not fit: the case
        text, rect = groups.frame_title_text(g)
        assert metrics.horizontalAdvance(text) <= width and rect.width() <= width
        assert text.startswith("\u25be  ") and "nodes" not in text  # was "▾  atte…on_0  (3 nodes)"
        head, tail = text[3:].split("\u2026")
        assert title.startswith(head) and title.endswith(tail)
        assert len(head) + len(tail) >= 15  # 8 before: "atte" + "on_0"
        assert tail.endswith(title[-2:])  # the three frames told apart by their ends
        tip = canvas._group_tooltip(g)
        assert f"encoder/{title}" in tip and "3 nodes" in tip  # the whole path and the count
