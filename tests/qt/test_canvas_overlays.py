"""The legend (top-left) and the minimap (bottom-right) are drawn over the canvas: a node the view
centres on, and a fitted graph, stay clear of them; a click on the legend's title collapses it to
that line, and the minimap's close box shrinks it to a button (offscreen). Seen: after F7 the
sensitivity legend hid the most sensitive node, f.0's Conv, of digits_cnn."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE_MODEL

pytest.importorskip("PySide6")

import onnx  # noqa: E402
from graph_models import grid_model  # noqa: E402
from PySide6.QtCore import QPoint, QRect, QRectF, Qt  # noqa: E402

from workbench.qt.canvas import minimap  # noqa: E402


def open_in(qtbot, view, proto) -> None:
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(proto)


def drawn(view, name: str) -> QRect:
    """Where node ``name`` is drawn in the viewport, pixels."""
    return view.mapFromScene(view.node_scene_rect(name)).boundingRect()


def minimap_rect(view) -> QRect:
    mm = view.minimap()
    return QRect() if mm.isHidden() else mm.geometry().translated(-view.viewport().pos())


def sensitivity_colours(view) -> None:
    """The canvas as Colour by Sensitivity leaves it: ranked values, the sweep's figure as the title."""
    names = view.node_names()
    view.set_node_values(errors={n: 40.0 + 5 * i for i, n in enumerate(names)},
                         error_label="Sensitivity: Only quantized (dB)", error_scale=(47.4, 54.7, False))
    view.set_color_mode("error")


def test_a_centred_node_is_not_under_the_legend(qtbot, make_canvas):
    view = make_canvas(380, 340, groups=False)
    open_in(qtbot, view, onnx.load(EXAMPLE_MODEL))
    sensitivity_colours(view)
    legend = view.legend_rect()
    assert legend.height() > 100  # the sensitivity legend: six rows and a two-line note
    view.resetTransform()  # the user zoomed to 100 %: no longer a fitted view
    for name in view.node_names():
        view.select_nodes([name], center=True)
        rect = drawn(view, name)
        assert view.viewport().rect().contains(rect), (name, rect)
        assert not rect.intersects(legend), (name, rect, legend)  # was under it at the view's centre
        assert not rect.intersects(minimap_rect(view)), (name, rect, minimap_rect(view))


def test_fit_keeps_the_graph_clear_of_the_minimap(qtbot, make_canvas):
    view = make_canvas(900, 700, groups=False)
    open_in(qtbot, view, grid_model(8, 14))
    view.fit()
    mini = minimap_rect(view)
    assert not mini.isEmpty()
    covered = [n for n in view.node_names() if drawn(view, n).intersects(mini)]
    assert covered == []  # six nodes of the bottom-right chains were under it
    assert not any(drawn(view, n).intersects(view.legend_rect()) for n in view.node_names())
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.contains(QRectF(view.scene_bounds()))


def test_a_click_on_the_legend_title_collapses_it(qtbot, make_canvas):
    view = make_canvas(700, 600, groups=False)
    open_in(qtbot, view, onnx.load(EXAMPLE_MODEL))
    legend = view.legend_overlay
    full = legend.height()
    text = legend.text()
    qtbot.mouseClick(legend.title, Qt.MouseButton.LeftButton)
    assert legend.collapsed and legend.label.isHidden()
    assert legend.height() < full / 2  # the title line alone
    assert legend.text() == text  # the same colour key, folded
    qtbot.mouseClick(legend.title, Qt.MouseButton.LeftButton)
    assert not legend.collapsed and legend.height() == full


def test_the_minimap_close_box_shrinks_it_to_a_button(qtbot, make_canvas):
    view = make_canvas(900, 700, groups=False)
    open_in(qtbot, view, grid_model(8, 14))
    view.fit()
    mm = view.minimap()
    size = mm.size()
    qtbot.mouseClick(mm, Qt.MouseButton.LeftButton, pos=mm.close_rect().center())
    assert mm.collapsed and (mm.width(), mm.height()) == (minimap.BUTTON, minimap.BUTTON)
    corner = view.viewport().geometry().bottomRight()
    assert mm.geometry().bottomRight() == corner - QPoint(8, 8)  # still in its corner
    qtbot.mouseClick(mm, Qt.MouseButton.LeftButton, pos=QPoint(minimap.BUTTON // 2, minimap.BUTTON // 2))
    assert not mm.collapsed and mm.size() == size
