"""The Problems dock: typed issues with severity and node; a click selects and centres the node."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.core.issues import PlanIssue, Severity

CONFLICT = "another unit reading it asked for"


def test_tutorial_int16_edit_lists_the_spec_conflict_and_click_selects(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    win.search.setText("Conv")
    qtbot.keyClick(win.search, Qt.Key.Key_Return)
    assert win.inspector.nodes
    win.inspector.roles["activation"].dtype.setCurrentText("int16")  # the README tutorial's step 2
    panel = win.problems
    assert all(isinstance(issue, PlanIssue) for _source, issue in panel.problems)
    row = panel.row_of(CONFLICT)
    assert row >= 0, [i.message for _s, i in panel.problems]
    source, issue = panel.problems[row]
    assert source == "plan" and issue.severity == Severity.INFO and issue.node
    assert panel.item_of(row).text(1) == issue.node and CONFLICT in panel.item_of(row).text(2)
    assert "problem" in win.problems_link.text()

    win.problems_link.linkActivated.emit("#problems")  # the status bar link shows the dock
    assert win.docks["Problems"].isVisible()
    with qtbot.waitSignal(win.canvas.selectionChangedNames, timeout=300_000):
        panel.tree.itemClicked.emit(panel.item_of(row), 2)
    assert win.canvas.selected_nodes() == [issue.node]

    win.act_undo.trigger()  # the edit undone: the conflict goes away
    assert panel.row_of(CONFLICT) == -1


def test_problems_of_a_calibration_are_typed_and_not_repeated(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    win.calibration.samples.setValue(8)
    win.calibration.analysis_samples.setValue(2)
    with qtbot.waitSignal(win.runs.finished, timeout=540_000):
        win.start_calibration()
    assert all(isinstance(i, PlanIssue) for i in win.doc.result_issues)
    keys = [(i.node, i.message) for _s, i in win.problems.problems]
    assert len(keys) == len(set(keys))
