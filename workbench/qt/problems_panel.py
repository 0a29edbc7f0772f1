"""Problems dock: every preparation note, plan issue and writer note, with severity and node.

Fed typed :class:`~workbench.core.issues.PlanIssue` objects (the plan's own, the model's
preparation notes as info issues, and the issues a calibrate / export job returned), never text
parsed back. Clicking a row with a node emits ``nodeClicked(name)`` (the window selects and
centres it). Errors first, then warnings, then info.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.wording import count

_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
_COLOURS = {Severity.ERROR: "#c62828", Severity.WARNING: "#ef6c00", Severity.INFO: ""}


def collect_problems(doc) -> list[tuple[str, PlanIssue]]:
    """(source, issue) for the open model: preparation notes, plan issues (or the plan's error),
    then the last job's issues that the plan does not already list; sorted by severity. For an
    already-quantized model: its preparation notes and one note that recipe advice is left out."""
    if doc.model is None:
        return []
    out: list[tuple[str, PlanIssue]] = [("preparation", PlanIssue("", Severity.INFO, note, IssueCode.PREPARATION_NOTE)) for note in doc.model.notes]
    if doc.quant_summary is not None:  # a recipe's advice (which ops to keep float, ...) is for float models
        note = f"{doc.quantized_reason} Recipe advice is not listed: it applies to float models."
        return out + [("model", PlanIssue("", Severity.INFO, note, IssueCode.PREPARATION_NOTE))]
    if doc.plan_error:
        node = getattr(doc, "plan_error_node", "")  # the node a RecipeError names ("" when not one node's)
        out.append(("plan", PlanIssue(node, Severity.ERROR, doc.plan_error, IssueCode.PLAN_ERROR)))
    plan_issues = list(doc.plan.issues) if doc.plan is not None else []
    out += [("plan", issue) for issue in plan_issues]
    seen = {(i.node, i.message) for i in plan_issues}
    out += [("quantize", i) for i in doc.result_issues if (i.node, i.message) not in seen]
    return sorted(out, key=lambda si: _ORDER.get(si[1].severity, 3))


class ProblemsPanel(QWidget):
    """Table of the open model's problems; ``nodeClicked(name)`` on a row that names a node."""

    nodeClicked = Signal(str)
    countChanged = Signal(int, int)  # problems, errors

    def __init__(self, document, parent: QWidget | None = None):
        super().__init__(parent)
        self.doc = document
        self.problems: list[tuple[str, PlanIssue]] = []
        self.summary = QLabel("No model open.")
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["Severity", "Node", "Message", "From"])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        # each row as tall as its wrapped message at the Message column's width as it is when shown: rows
        # measured once, while the tab is hidden (the column still narrow), filled the whole table
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        lay = QVBoxLayout(self)
        lay.addWidget(self.summary)
        lay.addWidget(self.table, 1)
        lay.addStretch(0)
        self.table.setVisible(False)  # no empty table: the summary line says there is nothing to list
        self.table.cellClicked.connect(lambda row, _col: self.click_row(row))
        for signal in (document.modelChanged, document.recipeChanged, document.resultsChanged):
            signal.connect(self.refresh)

    def refresh(self, *_args) -> None:
        self.problems = collect_problems(self.doc)
        self.table.setRowCount(len(self.problems))
        self.table.setVisible(bool(self.problems))
        for row, (source, issue) in enumerate(self.problems):
            cells = [str(issue.severity), issue.node, issue.message, source]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(issue.message)
                if col == 0 and _COLOURS.get(issue.severity):
                    item.setForeground(QColor(_COLOURS[issue.severity]))
                self.table.setItem(row, col, item)
        errors = sum(1 for _s, i in self.problems if i.severity == Severity.ERROR)
        if self.doc.model is None:
            self.summary.setText("No model open.")
        elif not self.problems:
            self.summary.setText("No problems: no preparation notes, plan issues or writer notes.")
        else:
            self.summary.setText(f"{count(len(self.problems), 'problem')}, {count(errors, 'error')}. "
                                 "Click a row to select its node.")
        self.countChanged.emit(len(self.problems), errors)

    def row_of(self, text: str) -> int:
        """The first row whose message contains ``text`` (-1: none)."""
        return next((r for r, (_s, i) in enumerate(self.problems) if text in i.message), -1)

    def click_row(self, row: int) -> None:
        """Act as if row ``row`` was clicked."""
        if 0 <= row < len(self.problems) and self.problems[row][1].node:
            self.nodeClicked.emit(self.problems[row][1].node)


__all__ = ["ProblemsPanel", "collect_problems"]
