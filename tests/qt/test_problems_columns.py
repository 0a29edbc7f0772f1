"""The Problems dock's Message column is readable in a narrow dock: at 310 px it was squeezed to "3 × …" beside
three columns of Qt's default 100 px; the group row's tooltip holds its whole title."""

from __future__ import annotations

from types import SimpleNamespace

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoStack

from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.qt.problems_panel import ProblemsPanel

NOTES = ["Folded 35 BatchNormalization nodes into their Conv.", "Removed 3 Identity nodes.",
         "Named 223 unnamed nodes as Op@k (Conv@0, Relu@4)."]


class _Doc(QObject):
    modelChanged = Signal()
    recipeChanged = Signal()
    resultsChanged = Signal()
    dataChanged = Signal()

    def __init__(self):
        super().__init__()
        self.model = SimpleNamespace(notes=NOTES)
        self.quant_summary, self.plan_error, self.results_current = None, "", True
        self.plan = SimpleNamespace(issues=[PlanIssue("Conv@12", Severity.WARNING, "bias left in float: its scale "
                                                      "would overflow int32", IssueCode.BIAS_FLOAT)])
        self.result_issues = []
        self.undo_stack, self.latency_opened, self.latency_record = QUndoStack(self), frozenset(), {}
        self.recipe = SimpleNamespace(overrides={})


def test_the_message_column_reads_in_a_narrow_dock(qtbot):
    doc = _Doc()
    panel = ProblemsPanel(doc)
    qtbot.addWidget(panel)
    panel.resize(310, 260)
    panel.show()
    panel.refresh()
    qtbot.waitExposed(panel)
    qtbot.wait(20)
    tree = panel.tree
    group = next(tree.topLevelItem(k) for k in range(tree.topLevelItemCount()) if tree.topLevelItem(k).childCount())
    assert group.text(2) == "3 \u00d7 preparation note"
    needed = tree.fontMetrics().horizontalAdvance(group.text(2))
    assert tree.columnWidth(2) >= needed + 10, (tree.columnWidth(0), tree.columnWidth(1), tree.columnWidth(2),
                                                tree.columnWidth(3))
    assert tree.columnWidth(2) > tree.viewport().width() // 3  # the widest column
    assert sum(tree.columnWidth(c) for c in range(4)) <= tree.viewport().width()  # no sideways scrolling
    assert group.toolTip(2).startswith("3 \u00d7 preparation note")
    warning = next(tree.topLevelItem(k) for k in range(tree.topLevelItemCount()) if tree.topLevelItem(k).text(1))
    assert warning.toolTip(2) == warning.text(2)  # the whole message
