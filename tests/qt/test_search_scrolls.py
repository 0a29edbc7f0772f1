"""Enter in the search box brings what it selects into view: a single hit is centred (its groups
opened), several hits scroll the first into view when it is out of it (offscreen)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from test_canvas import chain_model  # noqa: E402


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
