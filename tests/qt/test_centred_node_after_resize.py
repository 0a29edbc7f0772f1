"""A node the canvas centred on stays clear of the legend when the view then shrinks: in a 1024 x 700 window the
README's screenshot flow (calibrate, select the worst unit, its histogram opens in the Errors dock) centred
digits_cnn's /f/f.3/Conv in a 710 x 502 px graph, clear below the SQNR legend (314 x 192 px); the Errors dock
then grew, the graph shrank to 248 px high, the view kept its scroll position and the Conv, with its column of
nodes, was drawn under the legend's right edge. A resize before any zoom, pan or other selection now centres the
same nodes again, clear of the legend and the minimap (offscreen)."""

from __future__ import annotations

import onnx
import pytest
from bundled_example import EXAMPLE_MODEL

pytest.importorskip("PySide6")


CONV = "/f/f.3/Conv"


def _sqnr_coloured(qtbot, make_canvas):
    view = make_canvas(712, 518)  # the graph of a 1024 x 700 window, the Errors dock a line high
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(onnx.load(EXAMPLE_MODEL))
    names = view.node_names()
    view.set_node_values(errors={n: 30.0 + 2 * i for i, n in enumerate(names)})
    view.set_color_mode("error")
    return view


def _covered(view) -> list[str]:
    """Nodes drawn (partly) in the viewport that the legend covers."""
    legend, port = view.legend_rect(), view.viewport().rect()
    drawn = {n: view.mapFromScene(view.node_scene_rect(n)).boundingRect() for n in view.node_names()}
    return [n for n, r in drawn.items() if r.intersects(port) and r.intersects(legend)]


def test_a_centred_node_stays_clear_of_the_legend_when_the_view_shrinks(qtbot, make_canvas):
    view = _sqnr_coloured(qtbot, make_canvas)
    legend = view.legend_rect()
    assert legend.width() > 250 and legend.height() > 100  # the SQNR legend with its notes
    view.select_nodes([CONV], center=True)
    assert CONV not in _covered(view)
    view.resize(712, 264)  # the Errors dock grew: the graph 248 px high
    qtbot.wait(50)
    rect = view.mapFromScene(view.node_scene_rect(CONV)).boundingRect()
    assert view.viewport().rect().contains(rect), rect
    assert _covered(view) == [], (view.legend_rect(), rect)  # the Conv and its neighbours were under it


def test_a_view_panned_since_is_left_as_the_user_left_it(qtbot, make_canvas):
    view = _sqnr_coloured(qtbot, make_canvas)
    view.select_nodes([CONV], center=True)
    legend = view.legend_rect()
    at = view.mapFromScene(view.node_scene_rect(CONV)).boundingRect()
    h, v = view.horizontalScrollBar(), view.verticalScrollBar()  # panned: the Conv's left edge under the legend
    h.setValue(h.value() + at.left() - (legend.right() - 20))
    v.setValue(v.value() + at.top() - (legend.top() + 40))
    panned = view.mapFromScene(view.node_scene_rect(CONV)).boundingRect()
    assert panned.intersects(legend)
    view.resize(712, 264)
    qtbot.wait(50)
    assert view.mapFromScene(view.node_scene_rect(CONV)).boundingRect().left() == panned.left()  # the pan stands
