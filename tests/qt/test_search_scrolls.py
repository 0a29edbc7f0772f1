"""Enter in the search box brings what it selects into view: a single hit is centred (its groups
opened), several hits scroll the first into view when it is out of it (offscreen)."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

pytest.importorskip("PySide6")


def chain_model(n: int) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu" if i % 2 else "Conv", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}"],
                              name=f"n{i}") for i in range(n)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(f"t{n - 1}", TensorProto.FLOAT, None)])
    return helper.make_model(graph)


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
    canvas.fit()  # the whole graph in view: nothing moves
    view = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    canvas.search("n1?")
    assert canvas.mapToScene(canvas.viewport().rect()).boundingRect() == view


def test_search_in_the_window_shows_a_node_of_a_collapsed_group(qtbot, window, open_file, corpus):
    open_file(window, corpus / "nudenet_320n" / "model.onnx", timeout=540_000)
    canvas = window.canvas
    name = canvas.node_names()[-3]
    assert not canvas.node_shown(name)
    window.search.setText(name)
    window.run_search()
    assert canvas.node_shown(name) and in_view(canvas, name)
