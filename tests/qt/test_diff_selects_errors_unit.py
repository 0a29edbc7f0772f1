"""Selecting a node in the diff tab selects its node unit in the Errors dock, as selecting it on the model's graph
does: its bar outlined and scrolled into view. The dock did not follow the diff tab at all (its selection stayed
None whatever the panes or the list selected). Offscreen, ppocrv4_rec calibrated on 4 rows and compared with our QDQ
export of it (diff_app)."""

from __future__ import annotations

from diff_app import calibrated_diff, outlined, ppocr_qdq, settle
from latency_fakes import fixed_latency
from PySide6.QtCore import QPoint, Qt

from workbench.qt.diff_errors import selected_unit
from workbench.qt.diff_rows import FLOAT_COL


def _click_row(qtbot, tab, name: str) -> None:
    group = tab.groups["matched"]
    item = next(group.child(i) for i in range(group.childCount()) if group.child(i).text(FLOAT_COL) == name)
    tab.tree.scrollToItem(item)
    rect = tab.tree.visualItemRect(item)
    qtbot.mouseClick(
        tab.tree.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.left() + 10, rect.center().y())
    )
    settle()


def test_the_errors_dock_follows_the_diff_tabs_selection(
    qtbot, window, open_file, tmp_path, monkeypatch, corpus
):
    fixed_latency(monkeypatch)
    win = window
    tab = calibrated_diff(qtbot, win, open_file, ppocr_qdq(tmp_path))
    errors, units = win.errors, win.doc.plan.units
    shown = [r.node for r in errors.rows]
    assert len(shown) == 133 and errors.selected is None
    # a row of the list: the last unit's bar, far down the list of bars
    last = shown[-1]
    _click_row(qtbot, tab, last)
    assert tab.float_canvas.selected_nodes() == [last]
    assert outlined(errors) == last
    # a node of the quantized pane: its float partner's unit
    conv = next(n for n in shown if units[n].op_type == "Conv" and n != last)
    tab.canvas.select_nodes([conv], center=True)
    settle()
    assert conv in tab.float_canvas.selected_nodes()
    assert outlined(errors) == conv
    # an activation folded into a unit (ppocrv4_rec's hard-swish Clip after its Add): that unit
    unit, member = next((n, m) for n in shown for m in units[n].nodes if m != units[n].node)
    assert member not in shown
    tab.float_canvas.select_nodes([member], center=True)
    settle()
    assert outlined(errors) == unit, (unit, member)
    # nothing selected: no bar outlined
    tab.float_canvas.select_nodes([])
    settle()
    assert errors.selected is None


def test_one_unit_or_none():
    class Unit:
        def __init__(self, node, nodes):
            self.node, self.nodes = node, nodes

    units = {"add": Unit("add", ["add", "clip"]), "conv": Unit("conv", ["conv"]), "mm": Unit("mm", ["mm"])}
    shown = {"add", "conv"}
    assert selected_unit(["clip"], units, shown) == "add"
    assert (
        selected_unit(["conv", "bn_folded"], units, shown) == "conv"
    )  # a folded BatchNormalization: no unit
    assert selected_unit(["add", "conv"], units, shown) is None  # two units
    assert selected_unit(["mm"], units, shown) is None  # a unit without a bar
    assert selected_unit([], units, shown) is None
    assert selected_unit(["conv"], {}, shown) == "conv"  # no plan: the bars name their units
