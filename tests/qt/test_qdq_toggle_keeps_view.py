"""View > Show Q/DQ as Nodes (Ctrl+Shift+Q) keeps looking where the view looked: the selected node
stays where it was drawn, at a readable zoom, with the open groups still open (it left the view on
an empty area with two cut-off DequantizeLinear nodes). Offscreen."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from workbench.qt.canvas.readable import readable_scale  # noqa: E402


def _drawn(canvas, name):
    return canvas.mapFromScene(canvas.node_scene_rect(name)).boundingRect()


@pytest.mark.parametrize("selected", [True, False])
def test_qdq_toggle_keeps_the_node_and_the_groups(qtbot, window, open_file, example_qdq_file, selected):
    win, canvas = window, window.canvas
    open_file(win, example_qdq_file)
    names = [n for n in canvas.node_names() if n.endswith("Conv") and canvas.node_shown(n)]
    name = names[-1]
    if selected:
        canvas.select_nodes([name], center=True)
    else:  # nothing selected: the node at the view's centre is kept
        canvas.centerOn(canvas.node_scene_rect(name).center())
    before, opened = _drawn(canvas, name), canvas.expanded_groups()
    assert opened and canvas.viewport().rect().contains(before)
    for nodes in (True, False):
        with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
            win.act_show_qdq.setChecked(nodes)
            win.toggle_qdq_nodes()
        qdq = sum(op in ("QuantizeLinear", "DequantizeLinear") for op in canvas._state.data.structure.op_types)
        assert (qdq > 0) == nodes
        after = _drawn(canvas, name)
        assert canvas.viewport().rect().contains(after)  # in view, where it was
        # where it was drawn; across within half a scroll bar (7 px): a graph narrower than the view has no
        # horizontal scrolling, and the vertical bar coming or going moves it by half its width
        assert abs(after.center().x() - before.center().x()) <= 8 and abs(after.center().y() - before.center().y()) <= 2
        assert canvas.transform().m11() >= min(1.0, readable_scale(canvas._state.data)) - 1e-9
        assert set(opened) <= set(canvas.expanded_groups())  # the scope groups stay open
        assert canvas.selected_nodes() == ([name] if selected else [])
