"""Enter in the search box brings what it selects into view: a single hit is centred (its groups
opened), several hits bring the first into view, readable and clear of the legend, and F3 steps on to
the second (offscreen). Seen: on ddddocr after Expand All (a whole-graph view) Enter selected 18
hits and nothing moved; only F3 showed one."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from test_canvas import chain_model  # noqa: E402

from workbench.qt.canvas.readable import readable_scale  # noqa: E402


def in_view(canvas, name: str) -> bool:
    return canvas.mapToScene(canvas.viewport().rect()).boundingRect().contains(canvas.node_scene_rect(name))


@pytest.fixture
def canvas(qtbot, make_canvas):
    view = make_canvas(900, 700, groups=False)  # a flat picture: every node drawn
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(chain_model(300))
    return view


def test_a_single_hit_out_of_view_is_centred(canvas):
    assert not in_view(canvas, "n290")  # opened readable at the top of a 300-node chain
    assert canvas.search("n290") == ["n290"]
    assert in_view(canvas, "n290")
    assert canvas.transform().m11() >= 0.6  # its label readable


def test_several_hits_scroll_the_first_into_view(canvas):
    scale = canvas.transform().m11()
    assert canvas.search("n28?") == [f"n28{i}" for i in range(10)]
    assert in_view(canvas, "n280") and canvas.transform().m11() == scale
    view = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    canvas.search("n28?")  # the first hit readable in view already: nothing moves
    assert canvas.mapToScene(canvas.viewport().rect()).boundingRect() == view
    canvas.fit()  # the whole 300-node chain: labels far too small to read
    assert canvas.transform().m11() < 0.2
    assert canvas.search("n1?") == [f"n1{i}" for i in range(10)]
    assert in_view(canvas, "n10") and canvas.transform().m11() >= min(1.0, readable_scale(canvas._state.data))
    drawn = canvas.mapFromScene(canvas.node_scene_rect("n10")).boundingRect()
    assert not drawn.intersects(canvas.legend_rect())
    assert canvas.next_hit() == ("n11", 2, 10)  # F3: the next one


def test_enter_in_the_window_brings_the_first_hit_into_view(qtbot, window, open_file, tmp_path):
    path = tmp_path / "chain.onnx"
    nodes = [helper.make_node("Relu", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}"], name=f"n{i}") for i in range(300)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("t299", TensorProto.FLOAT, [1, 8])])
    onnx.save(helper.make_model(graph), path)
    open_file(window, path)
    canvas = window.canvas
    canvas.fit()
    window.search.setText("n27?")
    qtbot.keyClick(window.search, Qt.Key.Key_Return)
    assert canvas.selected_nodes() == sorted(f"n27{i}" for i in range(10))
    assert in_view(canvas, "n270") and canvas.transform().m11() >= min(1.0, readable_scale(canvas._state.data))
    window.step_search(1)  # F3
    assert canvas.selected_nodes() == ["n271"] and in_view(canvas, "n271")


def test_search_in_the_window_shows_a_node_of_a_collapsed_group(qtbot, window, open_file, corpus):
    open_file(window, corpus / "nudenet_320n" / "model.onnx", timeout=540_000)
    canvas = window.canvas
    name = canvas.node_names()[-3]
    assert not canvas.node_shown(name)
    window.search.setText(name)
    window.run_search()
    assert canvas.node_shown(name) and in_view(canvas, name)
