"""The Problems dock's row of a plan error names the node the error is about (an axis out of range
in a node override): its Node column was empty, so a click could select nothing; the canvas badges it."""

from __future__ import annotations

from workbench.core.issues import Severity
from workbench.qt import commands

CONV = "/f/f.3/Conv"


def test_axis_error_row_names_the_node_and_selects_it(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    commands.push_edit(win.doc, commands.set_role_field(win.doc.recipe, [CONV], "weight", "axis", -8),
                       f"Set weight axis = -8 on {CONV}")
    panel = win.problems
    row = panel.row_of("axis -8 is out of range")
    assert row >= 0
    source, issue = panel.problems[row]
    assert (source, issue.severity, issue.node) == ("plan", Severity.ERROR, CONV)
    assert panel.item_of(row).text(1) == CONV
    assert f"node override of '{CONV}'" in issue.message and "in the rule" not in issue.message
    assert win.doc.issue_badges() == {CONV: "!"}
    with qtbot.waitSignal(win.canvas.selectionChangedNames, timeout=300_000):
        panel.tree.itemClicked.emit(panel.item_of(row), 2)
    assert win.canvas.selected_nodes() == [CONV]
    win.act_undo.trigger()
    assert panel.row_of("out of range") == -1 and not win.doc.issue_badges()
