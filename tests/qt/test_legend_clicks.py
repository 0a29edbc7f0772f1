"""The legend's title alone catches clicks (it collapses / opens the legend): a click on the legend's
body reaches the canvas under it and selects the node there, as before the title became clickable
(fdfd6b1 swallowed it). A collapsed legend is its title on one line, however long the title
(it wrapped onto three lines once the frame shrank). Offscreen."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from graph_models import grid_model  # noqa: E402
from PySide6.QtCore import QPoint, QPointF, Qt  # noqa: E402


def open_grid(qtbot, make_canvas):
    view = make_canvas(900, 700, groups=False)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(grid_model(6, 10))
    view.resetTransform()  # 100 %: node boxes larger than a legend row
    return view


def click_at(qtbot, view, point: QPoint, button=Qt.MouseButton.LeftButton) -> None:
    """Click viewport pixel ``point`` on the widget Qt delivers it to (the topmost one there)."""
    at = view.viewport().mapTo(view, point)
    target = view.childAt(at) or view
    qtbot.mouseClick(target, button, pos=target.mapFrom(view, at))


def test_a_click_on_the_legend_body_selects_the_node_under_it(qtbot, make_canvas):
    view = open_grid(qtbot, make_canvas)
    legend = view.legend_overlay
    body = legend.label.geometry().translated(legend.pos() - view.viewport().pos())
    spot = QPointF(body.center())
    view._show_at(view.node_scene_rect("c2r4").center(), spot)  # the node drawn under the legend's rows
    assert view.childAt(view.viewport().mapTo(view, spot.toPoint())) is not view.viewport()  # covered
    click_at(qtbot, view, spot.toPoint())
    assert view.selected_nodes() == ["c2r4"]  # the legend swallowed the click: nothing selected
    assert not legend.collapsed


def test_a_click_on_the_legend_title_still_collapses_it_only(qtbot, make_canvas):
    view = open_grid(qtbot, make_canvas)
    legend = view.legend_overlay
    title = legend.title.geometry().translated(legend.pos() - view.viewport().pos())
    view._show_at(view.node_scene_rect("c2r4").center(), QPointF(title.center()))
    click_at(qtbot, view, title.center())
    assert legend.collapsed
    assert view.selected_nodes() == []  # the title's click is the legend's, not the node's


def test_a_collapsed_legend_is_one_line_even_with_a_long_title(qtbot, make_canvas):
    view = open_grid(qtbot, make_canvas)
    names = view.node_names()
    title = "Sensitivity: only quantized, per-channel weights, activations per tensor (dB)"
    view.set_node_values(errors={n: 40.0 + i for i, n in enumerate(names)}, error_label=title,
                         error_scale=(40.0, 60.0, False))
    view.set_color_mode("error")
    legend = view.legend_overlay
    legend.set_collapsed(True)
    margins = legend.layout().contentsMargins()
    line = legend.title.fontMetrics().height()
    frame = 2 * legend.frameWidth()
    assert legend.height() == line + margins.top() + margins.bottom() + frame  # was three lines
    assert title in legend.title.toolTip()  # the whole title, when the line elides it
    legend.set_collapsed(False)
    assert legend.height() > 3 * line  # open: the rows again


def test_a_double_click_on_the_title_is_two_clicks_not_a_node_activation(qtbot, make_canvas):
    view = open_grid(qtbot, make_canvas)
    legend = view.legend_overlay
    title = legend.title.geometry().translated(legend.pos() - view.viewport().pos())
    view._show_at(view.node_scene_rect("c2r4").center(), QPointF(title.center()))
    activated = []
    view.nodeActivated.connect(activated.append)
    qtbot.mouseDClick(legend.title, Qt.MouseButton.LeftButton)
    assert activated == []  # the body's double-click went on to the canvas: c2r4 opened
    assert not legend.collapsed  # collapsed by the first click, opened by the second


def test_a_double_click_on_the_legend_body_activates_the_node_under_it(qtbot, make_canvas):
    view = open_grid(qtbot, make_canvas)
    legend = view.legend_overlay
    body = legend.label.geometry().translated(legend.pos() - view.viewport().pos())
    view._show_at(view.node_scene_rect("c2r4").center(), QPointF(body.center()))
    activated = []
    view.nodeActivated.connect(activated.append)
    at = view.viewport().mapTo(view, body.center())
    target = view.childAt(at)
    qtbot.mouseDClick(target, Qt.MouseButton.LeftButton, pos=target.mapFrom(view, at))
    assert activated == ["c2r4"]
