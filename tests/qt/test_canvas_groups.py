"""Groups on the canvas: nudenet_320n opens collapsed to readable boxes; expanding and collapsing
a group keeps every position outside it (pytest-qt, offscreen)."""

from __future__ import annotations

import onnx
import pytest
from bundled_example import EXAMPLE_MODEL
from onnx import TensorProto, helper

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtGui import QFont, QFontMetricsF, QImage  # noqa: E402

from workbench.core.api import open_model  # noqa: E402
from workbench.qt.canvas import minimap  # noqa: E402
from workbench.qt.canvas.groups_item import frame_title  # noqa: E402


@pytest.fixture
def canvas(make_canvas):
    return make_canvas(1200, 800)


def open_model_in(qtbot, view, proto, **kwargs):
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(proto, **kwargs)


def snapshot(view) -> dict[str, tuple[float, float, float, float]]:
    """Scene rectangles of every shown node and group (groups keyed by '@path')."""
    out = {}
    for name in view.node_names():
        if view.node_shown(name):
            r = view.node_scene_rect(name)
            out[name] = (r.left(), r.top(), r.right(), r.bottom())
    for path in view.shown_groups():
        r = view.group_scene_rect(path)
        out["@" + path] = (r.left(), r.top(), r.right(), r.bottom())
    return out


@pytest.mark.slow
def test_nudenet_expand_and_collapse_keep_positions_outside(qtbot, canvas, corpus):
    proto = open_model(corpus / "nudenet_320n" / "model.onnx").proto
    open_model_in(qtbot, canvas, proto)
    shown = canvas.shown_groups()
    tops = [n for n in shown if "/" not in n]
    # at "Fit graph": every top-level scope is one box (17 of them); the 6 nodes at the top level
    assert len(shown) == 17 and all(shown.values()) and sorted(tops) == sorted(shown)
    assert sum(canvas.node_shown(n) for n in canvas.node_names()) == 6
    box = canvas.mapFromScene(canvas.group_scene_rect("model.9")).boundingRect()
    assert box.height() >= 18 and box.width() >= 50  # boxes, not a thin tower of 1-px nodes

    before = snapshot(canvas)
    g_rect = canvas.group_scene_rect("model.9")
    inside = set(canvas.group_members("model.9"))
    canvas.expand_group("model.9")
    assert canvas.shown_groups()["model.9"] is False
    after = snapshot(canvas)
    # its 4 own nodes (MaxPool x3, Concat) are drawn, its scopes cv1 and cv2 are boxes inside it
    assert len([n for n in inside if n in after]) == 4
    assert canvas.shown_groups()["model.9/cv1"] is True and canvas.shown_groups()["model.9/cv2"] is True
    grown = canvas.group_scene_rect("model.9").height() - g_rect.height()
    assert grown > 0
    moved = 0
    for key, (x0, y0, x1, y1) in before.items():
        if key == "@model.9":
            continue
        a = after[key]
        assert (a[0], a[2]) == (x0, x1), key  # x of everything outside: unchanged
        if y0 < g_rect.bottom():
            assert a == (x0, y0, x1, y1), key  # above / beside the group: unchanged
        else:  # below it: slid down by exactly what the group grew, nothing else
            assert a[1] - y0 == pytest.approx(grown) and a[3] - y1 == pytest.approx(grown), key
            moved += 1
    assert moved > 10
    canvas.collapse_group("model.9")
    assert snapshot(canvas) == before  # collapsing restores every position exactly


@pytest.mark.slow
def test_nudenet_nested_expand_depth_and_all(qtbot, canvas, corpus):
    proto = open_model(corpus / "nudenet_320n" / "model.onnx").proto
    open_model_in(qtbot, canvas, proto, depth=1)
    nested = [p for p, collapsed in canvas.shown_groups().items() if collapsed and p.startswith("model.22/")]
    assert nested
    before = snapshot(canvas)
    canvas.expand_group(nested[0])
    after = snapshot(canvas)
    inside = set(canvas.group_members(nested[0]))
    for key, rect in before.items():
        if key in inside or key == "@" + nested[0] or key == "@model.22":
            continue
        assert after[key][0] == rect[0] and after[key][1] >= rect[1], key  # same x, never up
    canvas.expand_all()
    assert all(canvas.node_shown(n) for n in canvas.node_names())
    canvas.collapse_all()
    assert len(canvas.shown_groups()) == 17
    canvas.expand_to_depth(1)
    assert canvas.expanded_groups() == [p for p in canvas.groups() if "/" not in p]


def test_double_click_and_chevron_toggle_and_box_click_selects(qtbot, canvas):
    nodes = [helper.make_node("Relu", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}"], name=f"/blk{i // 4}/Relu_{i}")
             for i in range(12)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("t11", TensorProto.FLOAT, [1, 8])])
    open_model_in(qtbot, canvas, helper.make_model(graph), depth=0)
    assert canvas.shown_groups() == {"blk0": True, "blk1": True, "blk2": True}
    vp = canvas.viewport()
    box = canvas.mapFromScene(canvas.group_scene_rect("blk1")).boundingRect()
    qtbot.mouseClick(vp, Qt.MouseButton.LeftButton, pos=box.center())
    assert canvas.selected_nodes() == [f"/blk1/Relu_{i}" for i in range(4, 8)]  # a box click selects its nodes
    qtbot.mouseDClick(vp, Qt.MouseButton.LeftButton, pos=box.center())
    assert canvas.shown_groups()["blk1"] is False  # double-click opens
    title = canvas.mapFromScene(canvas.group_scene_rect("blk1").topLeft())
    qtbot.mouseClick(vp, Qt.MouseButton.LeftButton, pos=title + QPoint(6, 6))  # the chevron collapses
    assert canvas.shown_groups()["blk1"] is True
    assert canvas.selected_nodes() == [f"/blk1/Relu_{i}" for i in range(4, 8)]  # selection kept


def test_regex_search_and_stepping_reveal_hidden_hits(qtbot, canvas):
    open_model_in(qtbot, canvas, onnx.load(EXAMPLE_MODEL), depth=0)
    assert canvas.shown_groups() == {"f": True}
    assert canvas.search(r"re:^/f/f\.[03]/conv$") == ["/f/f.0/Conv", "/f/f.3/Conv"]
    canvas.set_expanded([])
    assert canvas.search("re:relu|gemm") == ["/f/f.2/Relu", "/f/f.5/Relu", "/f/f.8/Relu", "/head/head.2/Gemm"]
    assert canvas.node_shown("/f/f.2/Relu")  # the first hit is shown: its group opened
    assert len(canvas.selected_nodes()) == 4
    assert canvas.next_hit() == ("/f/f.5/Relu", 2, 4)  # F3 goes on from the first
    assert canvas.selected_nodes() == ["/f/f.5/Relu"]
    assert canvas.next_hit(-1) == ("/f/f.2/Relu", 1, 4)
    assert canvas.next_hit(-1) == ("/head/head.2/Gemm", 4, 4)  # wraps around
    assert canvas.search_hits() == ["/f/f.2/Relu", "/f/f.5/Relu", "/f/f.8/Relu", "/head/head.2/Gemm"]
    with pytest.raises(ValueError, match="invalid regular expression"):
        canvas.search("re:(")


def test_export_picture_png_and_svg(qtbot, canvas, tmp_path):
    open_model_in(qtbot, canvas, onnx.load(EXAMPLE_MODEL))
    w, h = canvas.export_picture(tmp_path / "view.png")
    image = QImage(str(tmp_path / "view.png"))
    assert (image.width(), image.height()) == (w, h) == (canvas.viewport().width(), canvas.viewport().height())
    canvas.export_picture(tmp_path / "view.svg")
    svg = (tmp_path / "view.svg").read_text(encoding="utf-8")
    assert svg.startswith("<?xml") and "<svg" in svg and "Conv" in svg  # node text is in the SVG
    with pytest.raises(ValueError, match=".png or .svg"):
        canvas.export_picture(tmp_path / "view.jpg")
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["view.png", "view.svg"]  # no temp left


def test_minimap_outlines_the_viewport_and_moves_the_view(qtbot, canvas):
    nodes = [helper.make_node("Relu", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}"], name=f"n{i}") for i in range(300)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("t299", TensorProto.FLOAT, [1, 8])])
    open_model_in(qtbot, canvas, helper.make_model(graph), depth=99)
    canvas.fit()  # Fit graph (it opens at a readable zoom, its start in view)
    mini = canvas.minimap()
    assert mini.isVisible() and max(mini.width(), mini.height()) <= 182
    whole = mini.viewport_rect()
    assert whole.height() >= mini.height() - minimap.CLOSE - 4  # at fit the whole graph is on screen (the
    # strip above the thumbnail holds the close box)
    canvas.select_nodes(["n150"], center=True)
    rect = mini.viewport_rect()
    assert rect.height() < whole.height() / 4  # zoomed in: a small outline ...
    centre = canvas.node_scene_rect("n150").center()
    assert rect.adjusted(-2, -2, 2, 2).contains(mini._to_map(centre))  # ... around the centred node
    target = canvas.node_scene_rect("n20").center()
    p = mini._to_map(target)
    qtbot.mouseClick(mini, Qt.MouseButton.LeftButton, pos=QPoint(int(p.x()), int(p.y())))
    seen = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    assert seen.contains(target) and not seen.contains(centre)  # the click moved the view there
    canvas.resize(300, 250)  # a small canvas: a minimap would cover the graph
    qtbot.waitUntil(lambda: not mini.isVisible(), timeout=300_000)


def test_frame_title_fits_dropping_the_aggregate_then_the_count(qtbot):
    font = QFont()
    font.setPixelSize(17)
    metrics = QFontMetricsF(font)
    title = "model.22/cv3.2/very_long_scope_name/conv"
    full = frame_title(metrics, title, 12, "worst 3.5 dB", 10_000)
    assert full == f"\u25be  {title}  (12 nodes \u00b7 worst 3.5 dB)"
    short = frame_title(metrics, title, 12, "worst 3.5 dB", metrics.horizontalAdvance(f"\u25be  {title}  (12 nodes)") + 1)
    assert short == f"\u25be  {title}  (12 nodes)"  # the aggregate goes first
    bare = frame_title(metrics, title, 12, "worst 3.5 dB", metrics.horizontalAdvance(f"\u25be  {title}") + 1)
    assert bare == f"\u25be  {title}"  # then the count (the tooltip and the collapsed box give it)
    width = 220.0
    narrow = frame_title(metrics, title, 12, "worst 3.5 dB", width)
    assert metrics.horizontalAdvance(narrow) <= width
    assert narrow.startswith("\u25be  ") and "nodes" not in narrow  # the whole width for the title
    head, tail = narrow[3:].split("\u2026")  # elided in the middle
    assert title.startswith(head) and title.endswith(tail) and head and tail
