"""GraphCanvas on the example CNN and on synthetic graphs (pytest-qt, offscreen)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from bundled_example import EXAMPLE_MODEL
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint, Qt  # noqa: E402

from workbench.core.graph.layout import layout_graph  # noqa: E402
from workbench.qt.canvas import colors  # noqa: E402
from workbench.qt.canvas import worker as canvas_worker  # noqa: E402

CONVS = ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv"]
RELUS = ["/f/f.2/Relu", "/f/f.5/Relu", "/f/f.8/Relu"]


@pytest.fixture
def canvas(make_canvas):
    return make_canvas(900, 700)


def open_model(qtbot, view, proto, **kwargs):
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(proto, **kwargs)


def chain_model(n: int) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu" if i % 2 else "Conv", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}"],
                              name=f"n{i}") for i in range(n)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(f"t{n - 1}", TensorProto.FLOAT, None)])
    return helper.make_model(graph)


def center_of(view, name) -> QPoint:
    return view.mapFromScene(view.node_scene_rect(name).center())


def test_layout_runs_in_a_child_process(qtbot, canvas, monkeypatch):
    def not_here(*args, **kwargs):
        raise AssertionError("the layout must not run in the GUI process")

    for name in ("prepare", "plan_group_layout", "graph_structure"):
        monkeypatch.setattr(canvas_worker, name, not_here)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(onnx.load(EXAMPLE_MODEL))
        assert canvas.node_names() == []  # set_model returned before the layout was done
    assert len(canvas.node_names()) == 10


def test_search_and_op_type_selection(qtbot, canvas):
    open_model(qtbot, canvas, onnx.load(EXAMPLE_MODEL))
    assert canvas.node_names()[0] == "/f/f.0/Conv" and len(canvas.node_names()) == 10
    with qtbot.waitSignal(canvas.selectionChangedNames) as blocker:
        found = canvas.search("Conv")
    assert found == CONVS and blocker.args == [CONVS] and canvas.selected_nodes() == CONVS
    assert canvas.search("conv") == CONVS  # case-insensitive
    assert canvas.search("*RELU") == RELUS  # glob on names / op types
    assert canvas.search("/f/f.[03]/conv") == CONVS[:2]
    assert canvas.search("?emm") == ["/head/head.2/Gemm"]
    with qtbot.waitSignal(canvas.selectionChangedNames) as blocker:
        assert canvas.select_op_type("Relu") == RELUS
    assert blocker.args == [RELUS]
    assert canvas.search("nothing-like-this") == [] and canvas.selected_nodes() == []
    # programmatic selection: same selection twice emits once
    with qtbot.waitSignal(canvas.selectionChangedNames) as blocker:
        canvas.select_nodes(["/f/f.6/MaxPool", "unknown"], center=True)
    assert blocker.args == [["/f/f.6/MaxPool"]]
    with qtbot.assertNotEmitted(canvas.selectionChangedNames):
        canvas.select_nodes(["/f/f.6/MaxPool"])


def test_color_modes(qtbot, canvas):
    open_model(qtbot, canvas, onnx.load(EXAMPLE_MODEL))
    conv, relu = CONVS[0], RELUS[0]
    assert canvas.node_color(conv) == colors.op_color("Conv") != colors.op_color("Relu") == canvas.node_color(relu)
    assert canvas.node_color(CONVS[1]) == canvas.node_color(conv)
    canvas.set_node_values(dtypes={conv: "int8", relu: "float"})
    canvas.set_color_mode("dtype")
    assert canvas.color_mode() == "dtype"
    assert canvas.node_color(conv) == colors.dtype_color("int8")
    assert canvas.node_color(relu) == colors.dtype_color("float") != colors.dtype_color("int8")
    assert canvas.node_color(CONVS[1]) == colors.NO_VALUE
    assert {label for label, _ in canvas.legend()} == {"int8", "float", "not assigned"}
    canvas.set_color_mode("op")
    assert canvas.node_color(conv) == colors.op_color("Conv")
    with pytest.raises(ValueError, match="color mode"):
        canvas.set_color_mode("rainbow")


def test_low_sqnr_is_red_high_is_green_on_screen(qtbot, canvas):
    open_model(qtbot, canvas, onnx.load(EXAMPLE_MODEL))
    canvas.set_color_mode("error")
    low, high = CONVS[0], RELUS[0]
    canvas.set_node_values(errors={low: 3.0, high: 48.0})
    c_low, c_high = canvas.node_color(low), canvas.node_color(high)
    assert c_low != c_high
    assert c_low.red() > 180 and c_low.green() < 80  # red end of the map
    assert c_high.green() > 120 and c_high.red() < 60  # green end
    assert canvas.node_color(CONVS[1]) == colors.NO_VALUE  # no measurement
    assert colors.error_color(20.0) != c_low and colors.error_color(20.0) != c_high
    # the painted pixels carry the colours (sampled inside the box, left of the text)
    image = canvas.viewport().grab().toImage()
    for name, expected in ((low, c_low), (high, c_high)):
        rect = canvas.node_scene_rect(name)
        p = canvas.mapFromScene(rect.left() + 6, rect.center().y())
        pixel = image.pixelColor(p.x(), p.y())
        assert abs(pixel.red() - expected.red()) < 12 and abs(pixel.green() - expected.green()) < 12, (name, pixel)


def test_mouse_selection(qtbot, canvas):
    open_model(qtbot, canvas, onnx.load(EXAMPLE_MODEL))
    vp = canvas.viewport()
    qtbot.mouseClick(vp, Qt.MouseButton.LeftButton, pos=center_of(canvas, CONVS[0]))
    assert canvas.selected_nodes() == [CONVS[0]]
    qtbot.mouseClick(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, center_of(canvas, RELUS[0]))
    assert canvas.selected_nodes() == [CONVS[0], RELUS[0]]
    qtbot.mouseClick(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ControlModifier, center_of(canvas, CONVS[0]))
    assert canvas.selected_nodes() == [RELUS[0]]
    qtbot.mouseClick(vp, Qt.MouseButton.LeftButton, pos=QPoint(3, 3))  # empty space clears
    assert canvas.selected_nodes() == []
    with qtbot.waitSignal(canvas.nodeActivated) as blocker:
        qtbot.mouseDClick(vp, Qt.MouseButton.LeftButton, pos=center_of(canvas, "/head/head.2/Gemm"))
    assert blocker.args == ["/head/head.2/Gemm"]


def test_rubber_band_over_whole_scene_selects_all(qtbot, canvas):
    open_model(qtbot, canvas, onnx.load(EXAMPLE_MODEL))
    vp = canvas.viewport()
    with qtbot.waitSignal(canvas.selectionChangedNames) as blocker:
        qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=QPoint(2, 2))
        qtbot.mouseMove(vp, QPoint(vp.width() // 2, vp.height() // 2))
        qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=QPoint(vp.width() - 3, vp.height() - 3))
    assert canvas.selected_nodes() == canvas.node_names() == blocker.args[0]
    assert len(blocker.args[0]) == 10
    # a band around the first two nodes only
    top = canvas.mapFromScene(canvas.node_scene_rect(CONVS[0]).topLeft()) - QPoint(5, 5)
    bottom = canvas.mapFromScene(canvas.node_scene_rect(RELUS[0]).bottomRight()) + QPoint(5, 5)
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=QPoint(2, top.y()))
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=QPoint(vp.width() - 3, bottom.y()))
    assert canvas.selected_nodes() == [CONVS[0], RELUS[0]]


def test_level_of_detail_and_lazy_items(qtbot, canvas):
    proto = chain_model(3000)
    open_model(qtbot, canvas, proto)
    canvas.fit()  # Fit graph (it opens at a readable zoom, its start in view)
    assert len(canvas.node_names()) == 3000
    assert canvas.overview_visible() and canvas.detailed_item_count() == 0  # zoomed out: one overview item
    canvas.select_nodes(["n1500"], center=True)
    assert not canvas.overview_visible()
    assert 0 < canvas.detailed_item_count() < 100  # items only around the visible area
    canvas.fit()
    assert canvas.overview_visible()
    # the zoomed-in view had scroll bars: the fit hides them, and the viewport grows once Qt lays it out
    qtbot.waitUntil(lambda: not canvas.verticalScrollBar().isVisible()
                    and not canvas.horizontalScrollBar().isVisible(), timeout=300_000)
    vp = canvas.viewport()
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=QPoint(1, 1))
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=QPoint(vp.width() - 2, vp.height() - 2))
    assert len(canvas.selected_nodes()) == 3000
    assert not canvas.viewport().grab().isNull()


def test_given_positions_are_used_without_layout(qtbot, canvas, tmp_path):
    proto = onnx.load(EXAMPLE_MODEL)
    positions = layout_graph(proto, cache_dir=tmp_path)
    positions[CONVS[0]] = (-500.0, -300.0)
    del positions[RELUS[2]]  # a node without a position still gets a place
    open_model(qtbot, canvas, proto, positions=positions)
    assert canvas.node_scene_rect(CONVS[0]).center().toTuple() == pytest.approx((-500.0, -300.0))
    assert canvas.node_scene_rect(RELUS[2]).center().y() > max(p[1] for p in positions.values())
    layout_cache = tmp_path / "layout"  # the canvas's layout cache: no layout ran, none was written
    assert not layout_cache.exists() or not any(layout_cache.iterdir())


def test_second_model_replaces_a_pending_layout(qtbot, canvas):
    ready = []
    canvas.layoutReady.connect(lambda: ready.append(canvas.node_names()))
    canvas.set_model(chain_model(4000))
    canvas.set_model(onnx.load(EXAMPLE_MODEL))
    qtbot.waitUntil(lambda: len(ready) >= 1, timeout=300_000)
    qtbot.wait(300)
    canvas.shutdown()
    assert len(ready) == 1 and len(ready[0]) == 10  # the first job's result was dropped


def test_keyboard_select_all_and_clear(qtbot, canvas):
    open_model(qtbot, canvas, onnx.load(EXAMPLE_MODEL))
    canvas.setFocus()
    qtbot.keyClick(canvas, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert canvas.selected_nodes() == canvas.node_names()
    qtbot.keyClick(canvas, Qt.Key.Key_Escape)
    assert canvas.selected_nodes() == []
    scale = canvas.transform().m11()
    qtbot.keyClick(canvas, Qt.Key.Key_Minus)
    assert canvas.transform().m11() == pytest.approx(scale * 0.8)


def test_collapse_qdq_and_badges(qtbot, canvas):
    inits = [numpy_helper.from_array(np.ones((2, 1, 1, 1), np.int8), "w_q"),
             numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.uint8), "zp")]
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "s"], ["w"], name="w_dq"),
             helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("QuantizeLinear", ["c", "s", "zp"], ["c_q"], name="q"),
             helper.make_node("DequantizeLinear", ["c_q", "s", "zp"], ["c_dq"], name="dq"),
             helper.make_node("Relu", ["c_dq"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    proto = helper.make_model(graph)
    open_model(qtbot, canvas, proto)
    assert canvas.node_names() == ["w_dq", "conv", "q", "dq", "relu"]
    open_model(qtbot, canvas, proto, collapse_qdq=True)
    assert canvas.node_names() == ["conv", "relu"]
    canvas.set_badges({"conv": "u8", "relu": "!", "gone": "x"})
    a, b = canvas.node_scene_rect("conv"), canvas.node_scene_rect("relu")
    probe = canvas.mapFromScene(a.center().x(), a.bottom() + (b.top() - a.bottom()) * 0.25)

    def probe_color():
        return canvas.viewport().grab().toImage().pixelColor(probe.x(), probe.y())

    assert probe_color().blue() < 200 or probe_color().red() > 80  # grey edge, not the accent
    canvas.select_nodes(["conv"])  # its edges are drawn in the selection colour
    hl = probe_color()
    assert abs(hl.red() - colors.SELECTION.red()) < 40 and abs(hl.blue() - colors.SELECTION.blue()) < 40, hl
    assert canvas.search("q") == []  # collapsed nodes are not selectable


@pytest.mark.slow
def test_minilm_opens(qtbot, canvas, corpus):
    proto = onnx.load(str(corpus / "minilm_l6_v2" / "model.onnx"), load_external_data=False)
    open_model(qtbot, canvas, proto)
    assert len(canvas.node_names()) == len(proto.graph.node)
    matmuls = [n.name for n in proto.graph.node if n.op_type == "MatMul"]
    assert canvas.select_op_type("MatMul") == matmuls and len(matmuls) == 48


def test_if_node_marked_and_activated(qtbot, canvas, cases):
    proto = onnx.load(str(cases / "20_if_subgraph_matmul.onnx"))
    open_model(qtbot, canvas, proto)
    if_nodes = [n.name for n in proto.graph.node if n.op_type == "If"]
    assert if_nodes and set(if_nodes) <= set(canvas.node_names())
    assert "body graph" in canvas.tooltip_text(if_nodes[0])
    with qtbot.waitSignal(canvas.nodeActivated) as blocker:
        qtbot.mouseDClick(canvas.viewport(), Qt.MouseButton.LeftButton, pos=center_of(canvas, if_nodes[0]))
    assert blocker.args == [if_nodes[0]]


def test_empty_graph_and_tooltip_values(qtbot, canvas):
    graph = helper.make_graph([], "empty", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])])
    open_model(qtbot, canvas, helper.make_model(graph))
    assert canvas.node_names() == [] and canvas.search("*") == []
    canvas.fit()
    assert not canvas.viewport().grab().isNull()
    open_model(qtbot, canvas, onnx.load(EXAMPLE_MODEL))
    canvas.set_node_values(dtypes={CONVS[0]: "int8"}, errors={CONVS[0]: 12.34})
    text = canvas.tooltip_text(CONVS[0])
    assert "<b>Conv</b>" in text and "int8" in text and "12.3 dB" in text
    canvas.set_node_values(errors={})  # {} clears, None keeps
    assert "dB" not in canvas.tooltip_text(CONVS[0]) and "int8" in canvas.tooltip_text(CONVS[0])
