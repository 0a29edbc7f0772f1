"""Op types stay readable on a graph of more than 300 shown nodes zoomed out (offscreen).

Above 300 shown nodes the op type labels were left at scene size: 4-7 px from 0.3 to 0.55 (a 1,000-node or a
20,000-node graph with its groups open) and none in the overview below 0.3. Now every node in and around the
view gets its op type at screen size inside its box, as a smaller graph does, and none where the box is lower
than the smallest font.
"""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QFontMetricsF, QTransform  # noqa: E402

from workbench.qt.canvas.group_labels import FITTED_MIN_PX, label_font  # noqa: E402
from workbench.qt.canvas.scene_data import NODE_H  # noqa: E402


@pytest.fixture
def view(open_blocks):
    """A 900 x 700 canvas of 20 open scopes of 20 Relu nodes: 400 shown nodes."""
    view = open_blocks(20, 20)
    assert len(view.node_names()) == 400 and not any(view.shown_groups().values())
    return view


def _at(view, scale: float):
    view.setTransform(QTransform.fromScale(scale, scale))
    view.centerOn(view.node_scene_rect("/blk10/Relu_10").center())
    view.viewport().grab()
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    in_view = {i for i, n in enumerate(view.node_names()) if shown.contains(view.node_scene_rect(n))}
    labels = view._groups_item.screen_labels(view.transform().m11())
    return in_view, {lab.node: lab for lab in labels if lab.node >= 0}


@pytest.mark.parametrize("scale", [0.25, 0.4, 0.5])
def test_every_node_in_view_gets_its_op_type_at_screen_size(view, scale):
    in_view, nodes = _at(view, scale)
    assert len(in_view) >= 8
    assert in_view <= set(nodes)  # none before: 400 nodes were over the limit of 300
    for i in in_view:
        label = nodes[i]
        assert label.text == "Relu" and label.px >= FITTED_MIN_PX
        assert view.node_scene_rect(view.node_names()[i]).contains(label.rect)  # inside its box
        assert label.rect.height() * scale == pytest.approx(QFontMetricsF(label_font(label.px)).height())
    # the node items leave out their scene-sized op type under those labels
    assert in_view <= view._groups_item.labelled_nodes(view.transform().m11())


def test_no_op_type_where_the_box_is_lower_than_the_smallest_font(view):
    scale = 0.12
    assert NODE_H * scale < QFontMetricsF(label_font(FITTED_MIN_PX)).height()
    in_view, nodes = _at(view, scale)
    assert in_view and not nodes
    assert view.screen_title_rects()  # the frames' titles still are
