"""Problems dock: every preparation note, plan issue and writer note, with severity and node.

Fed typed :class:`~workbench.core.issues.PlanIssue` objects (the plan's own, the model's
preparation notes as info issues, and the issues a calibrate / export job returned), never text
parsed back. Clicking a row with a node emits ``nodeClicked(name)`` (the window selects and
centres it). Errors first, then warnings, then info. The last job's issues, once the recipe or the data
changed since it ran, are listed last, greyed and marked out of date (:data:`STALE_SOURCE`), and are not
counted: the current recipe's own are the plan's.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QColor, QPalette
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
#: the "From" of an issue of the last calibration made with another recipe or other rows than the current ones
STALE_SOURCE = "quantize (out of date)"
_STALE_TIP = ("From the last calibration, made with another recipe or other calibration data than the current "
              "ones: it may no longer apply. Calibrate (F5) to check it again.")


def collect_problems(doc) -> list[tuple[str, PlanIssue]]:
    """(source, issue) for the open model: preparation notes, plan issues (or the plan's error),
    then the last job's issues that the plan does not already list; sorted by severity. The job's issues
    come from "quantize", or from :data:`STALE_SOURCE` (listed last) when the recipe, data or sample count
    changed since it ran (``doc.results_current`` is False). For an already-quantized model: its
    preparation notes and one note that recipe advice is left out."""
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
    source = "quantize" if doc.results_current else STALE_SOURCE
    out += [(source, i) for i in doc.result_issues if (i.node, i.message) not in seen]
    return sorted(out, key=lambda si: (si[0] == STALE_SOURCE, _ORDER.get(si[1].severity, 3)))


class ProblemsPanel(QWidget):
    """Table of the open model's problems; ``nodeClicked(name)`` on a row that names a node."""

    nodeClicked = Signal(str)
    countChanged = Signal(int, int)  # problems, errors

    def __init__(self, document, parent: QWidget | None = None):
        super().__init__(parent)
        self.doc = document
        #: the table's rows: (source, issue), the out-of-date ones last
        self.problems: list[tuple[str, PlanIssue]] = []
        #: rows from a calibration made with another recipe or other rows (not counted as problems)
        self.out_of_date = 0
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
        for signal in (document.modelChanged, document.recipeChanged, document.resultsChanged, document.dataChanged):
            signal.connect(self.refresh)

    def refresh(self, *_args) -> None:
        self.problems = collect_problems(self.doc)
        self.table.setRowCount(len(self.problems))
        self.table.setVisible(bool(self.problems))
        for row, (source, issue) in enumerate(self.problems):
            stale = source == STALE_SOURCE
            cells = [str(issue.severity), issue.node, issue.message, source]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(f"{issue.message}\n\n{_STALE_TIP}" if stale else issue.message)
                if stale:
                    item.setForeground(self.palette().color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text))
                elif col == 0 and _COLOURS.get(issue.severity):
                    item.setForeground(QColor(_COLOURS[issue.severity]))
                self.table.setItem(row, col, item)
        current = [i for s, i in self.problems if s != STALE_SOURCE]
        self.out_of_date = len(self.problems) - len(current)
        errors = sum(1 for i in current if i.severity == Severity.ERROR)
        stale = (f" {count(self.out_of_date, 'row')} from the last calibration {'is' if self.out_of_date == 1 else 'are'} "
                 "out of date (made with another recipe or other data): F5 calibrates again." if self.out_of_date else "")
        if self.doc.model is None:
            self.summary.setText("No model open.")
        elif not current:
            none = " with the current recipe." if stale else ": no preparation notes, plan issues or writer notes."
            self.summary.setText(f"No problems{none}{stale}")
        else:
            self.summary.setText(f"{count(len(current), 'problem')}, {count(errors, 'error')}. "
                                 f"Click a row to select its node.{stale}")
        self.countChanged.emit(len(current), errors)

    def row_of(self, text: str) -> int:
        """The first row whose message contains ``text`` (-1: none)."""
        return next((r for r, (_s, i) in enumerate(self.problems) if text in i.message), -1)

    def click_row(self, row: int) -> None:
        """Act as if row ``row`` was clicked."""
        if 0 <= row < len(self.problems) and self.problems[row][1].node:
            self.nodeClicked.emit(self.problems[row][1].node)


__all__ = ["STALE_SOURCE", "ProblemsPanel", "collect_problems"]
