"""Problems dock: every preparation note, plan issue and writer note, with severity and node.

Fed typed :class:`~workbench.core.issues.PlanIssue` objects (the plan's own, the model's
preparation notes as info issues, and the issues a calibrate / export job returned), never text
parsed back. Clicking a row with a node emits ``nodeClicked(name)`` (the window selects and
centres it). Errors first, then warnings, then notes (info), each kind counted apart, here and in the status
bar's link (:func:`link_text`: "2 warnings, 75 notes"; a note is not a problem). Issues of one
code (and severity and source) are one expandable row with their count ("68 × tensor uses its producer's
activation spec"), its children one row each. A long message wraps in the Message column
(:class:`~workbench.qt.wrapped_column.WrappedColumn`), its whole text also in the row's tooltip. The last job's issues, once the recipe or the data
changed since it ran, are listed last, greyed and marked out of date (:data:`STALE_SOURCE`), and are not
counted: the current recipe's own are the plan's.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.wording import ISLAND_MEANS, count
from workbench.qt.latency_edits import latency_kept_recorded, latency_kept_units
from workbench.qt.wrapped_column import WrappedColumn

_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
_COLOURS = {Severity.ERROR: "#c62828", Severity.WARNING: "#ef6c00", Severity.INFO: ""}
#: the Severity column's word: an info issue is a note, not a problem
_WORDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
#: a group row's title, one issue of the code in words ("68 × <title>"); other codes: the code in words
GROUP_TITLES = {
    IssueCode.SPEC_SHARED: "tensor uses its producer's activation spec",
    IssueCode.SPEC_CONFLICT: "tensor gets a grid of its own (its readers ask for another dtype)",
    IssueCode.PREPARATION_NOTE: "preparation note",
    IssueCode.OUTPUT_KEPT_FLOAT: "output kept float for a float consumer",
    IssueCode.BIAS_FLOAT: "bias left in float",
    IssueCode.BIAS_OVERFLOW: "int32 bias out of range, rescaled",
    IssueCode.FLOAT_ISLAND: "element-wise unit kept float (no integer kernel reached)",
    IssueCode.WEIGHT_DQ_ONLY: "unit kept float (it would quantize only its weight)",
    IssueCode.SENTINEL_RANGE: "tensor reaching a mask / sentinel value",
    IssueCode.NON_NEGATIVE_GRID: "non-negative tensor on a [0, max] grid",
    IssueCode.REDUCTION_STATISTIC: "mean / variance / norm kept float",
    IssueCode.CALIBRATION_DATA: "NaN / Inf or empty tensor in the calibration data",
    IssueCode.LATENCY_KEPT_FLOAT: "unit kept float: its integer kernel measured slower",
    IssueCode.UNMATCHED_RECIPE_ENTRY: "recipe entry matching no node",
    IssueCode.RELU_REWRITTEN: "Relu written as Max(x, 0)",
    IssueCode.CLIP_REWRITTEN: "Clip written as Min(Max(x, lo), hi)",
    IssueCode.NO_MATMULNBITS: "int4 weight onnxruntime will not fuse",
    IssueCode.SHARED_TABLE: "weight also read by a float node, stored once",
}
#: a group's title where one code's issues differ by severity: the latency fallback's warnings are islands of
#: units (each row names its units), the latency placement's notes single units
SEVERITY_TITLES = {
    (IssueCode.LATENCY_KEPT_FLOAT, Severity.WARNING): "island of units kept float: the quantized model measured "
                                                      "slower than float",
}
#: a group's title for the latency fallback's notes on the islands of a microsecond model (``island`` set, info):
#: grouped apart from the latency placement's single units, whose title says a kernel was measured
SMALL_ISLANDS_TITLE = "island of units kept float: quantization does not pay at this size"
#: codes whose issues without a node (about the whole model) are not grouped with those of a node
NODELESS_APART = (IssueCode.LATENCY_KEPT_FLOAT,)
#: the widest share of the tree's width the Node and From columns open at (the Message column takes what is left)
NODE_SHARE = 0.25
#: the narrowest the Node and From columns open, px
NODE_MIN = 40
#: the tree's indentation per level, px (Qt's 20 widened the Severity column)
INDENT = 12
#: the "From" of an issue of the last calibration made with another recipe or other rows than the current ones
STALE_SOURCE = "quantize (out of date)"
#: the "From" of a unit the recipe keeps float because a latency check did, listed from the document's record
#: when the last job's issues do not say so (an export's check, measured again by an analysis; a reopened project)
LATENCY_SOURCE = "latency check"
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
    out += [(LATENCY_SOURCE, i) for i in _latency_kept_notes(doc)]
    return sorted(out, key=lambda si: (si[0] == STALE_SOURCE, _ORDER.get(si[1].severity, 3)))


def _latency_kept_notes(doc) -> list[PlanIssue]:
    """One note per unit the recipe keeps float because a latency check did (an export's, a reopened
    project's), with the reason recorded when it was kept, when the last job's issues hold no latency note:
    after an export kept every unit float and the figures were measured again by an analysis (no latency
    check), the Errors panel said "View > Problems lists them" over "No problems"."""
    if any(i.code == IssueCode.LATENCY_KEPT_FLOAT for i in doc.result_issues):
        return []
    record = getattr(doc, "latency_record", {})
    recorded = latency_kept_recorded(doc)
    notes = []
    for node in sorted(latency_kept_units(doc)):
        entry = record.get(node)
        ratio = entry.ratio if entry is not None else None
        notes.append(PlanIssue(node, Severity.INFO, _kept_reason(entry, node in recorded), IssueCode.LATENCY_KEPT_FLOAT,
                               units=(node,), ratio=ratio))
    return notes


def _kept_reason(entry, recorded: bool) -> str:
    """Why a unit is kept float by a latency check: ``entry``'s saved reason (a LatencyKept, or None), else where
    it was measured: ``recorded``, a project's record (an opened, restored or applied project's ``latency_kept``,
    whose entry may hold no reason): when that project was saved, maybe on another machine, with the ratio it
    records; else by a latency check of this session, on this machine."""
    if entry is not None and entry.reason:
        return entry.reason
    if not recorded:
        return "kept float by the latency check (slower quantized on this machine)"
    measured = f"; it measured {entry.ratio:.2f}x its float latency" if entry is not None and entry.ratio is not None else ""
    return f"kept float by the latency check (slower quantized when the project was saved{measured})"


def group_problems(problems: list[tuple[str, PlanIssue]]) -> list[list[tuple[str, PlanIssue]]]:
    """``problems`` (as :func:`collect_problems` orders them) in groups of one source, severity and code
    (of :data:`NODELESS_APART`, those with a node and those without apart; the notes on islands, ``island`` set,
    apart from the others), each group where its first member was; the order of severities and the out-of-date rows
    last are kept."""
    groups: dict[tuple, list[tuple[str, PlanIssue]]] = {}
    for source, issue in problems:
        apart = issue.code in NODELESS_APART and not issue.node  # a whole-model note is no island
        groups.setdefault((source, issue.severity, issue.code, apart, issue.island), []).append((source, issue))
    return list(groups.values())


def group_title(issue: PlanIssue, n: int) -> str:
    """A group row's message: ``"68 × tensor uses its producer's activation spec"``."""
    small = issue.island and issue.severity == Severity.INFO
    title = (SMALL_ISLANDS_TITLE if small else None) or SEVERITY_TITLES.get((issue.code, issue.severity)) \
        or GROUP_TITLES.get(issue.code)
    return f"{n} \u00d7 {title or str(issue.code).replace('-', ' ')}"


def island_tip(issue: PlanIssue) -> str:
    """What an island is, for the tooltip of a group of island notes (``issue.island``): " (an island: a connected
    group of quantized node units between float nodes)"; "" for other groups."""
    return f" (an island: {ISLAND_MEANS})" if issue.island else ""


def severity_counts(issues) -> str:
    """``"0 errors, 2 warnings, 75 notes"`` for ``issues`` (PlanIssue)."""
    n = {sev: sum(1 for i in issues if i.severity == sev) for sev in _WORDS}
    return ", ".join(count(n[sev], _WORDS[sev]) for sev in (Severity.ERROR, Severity.WARNING, Severity.INFO))


def link_text(errors: int, warnings: int, notes: int) -> str:
    """The status bar link's words for the counts of current issues: the kinds there are, errors and warnings
    (the problems) first, notes apart (``"2 warnings, 75 notes"``, ``"77 notes"``; ``""`` for none)."""
    kinds = ((errors, "error"), (warnings, "warning"), (notes, "note"))
    return ", ".join(count(n, word) for n, word in kinds if n)


class ProblemsPanel(QWidget):
    """Tree of the open model's problems; ``nodeClicked(name)`` on a row that names a node."""

    nodeClicked = Signal(str)
    countChanged = Signal(int, int, int)  # errors, warnings, notes of the current issues

    def __init__(self, document, parent: QWidget | None = None):
        super().__init__(parent)
        self.doc = document
        #: every issue listed: (source, issue), in the tree's order (a group's members together), the out-of-date
        #: ones last
        self.problems: list[tuple[str, PlanIssue]] = []
        #: the row of each of :attr:`problems` (a group's child, or a top-level row)
        self.items: list[QTreeWidgetItem] = []
        #: rows from a calibration made with another recipe or other rows (not counted as problems)
        self.out_of_date = 0
        self.summary = QLabel("No model open.")
        self.tree = QTreeWidget()
        self.tree.setColumnCount(4)
        self.tree.setHeaderLabels(["Severity", "Node", "Message", "From"])
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        # a long message wraps in its column, the row as tall as its lines (it was cut at its first line)
        self._wrapped = WrappedColumn(self.tree, 2)
        header = self.tree.header()
        header.setStretchLastSection(False)
        # the message takes what is left: the severity and the source as wide as their words, the node column
        # at most :data:`NODE_SHARE` of the width (a 310 px dock squeezed the message to "3 × …")
        for col, mode in ((0, QHeaderView.ResizeMode.ResizeToContents), (1, QHeaderView.ResizeMode.Interactive),
                          (2, QHeaderView.ResizeMode.Stretch), (3, QHeaderView.ResizeMode.Interactive)):
            header.setSectionResizeMode(col, mode)
        self.tree.setIndentation(INDENT)
        lay = QVBoxLayout(self)
        lay.addWidget(self.summary)
        lay.addWidget(self.tree, 1)
        lay.addStretch(0)
        self.tree.setVisible(False)  # no empty tree: the summary line says there is nothing to list
        self.tree.itemClicked.connect(self._on_item_clicked)
        for signal in (document.modelChanged, document.recipeChanged, document.resultsChanged, document.dataChanged):
            signal.connect(self.refresh)

    def refresh(self, *_args) -> None:
        problems = collect_problems(self.doc)
        self.tree.clear()
        self.problems, self.items = [], []
        for group in group_problems(problems):
            parent = None
            if len(group) > 1:
                source, first = group[0]
                parent = self._row(None, source, first, group_title(first, len(group)), node="")
                parent.setToolTip(2, f"{parent.text(2)}{island_tip(first)}\n\nClick to list them; a row's node is "
                                     "selected when it is clicked.")
            for source, issue in group:
                self.items.append(self._row(parent, source, issue, issue.message, node=issue.node))
                self.problems.append((source, issue))
        self.tree.setVisible(bool(self.problems))
        current = [i for s, i in self.problems if s != STALE_SOURCE]
        self.out_of_date = len(self.problems) - len(current)
        stale = (f" {count(self.out_of_date, 'row')} from the last calibration {'is' if self.out_of_date == 1 else 'are'} "
                 "out of date (made with another recipe or other data): F5 calibrates again." if self.out_of_date else "")
        if self.doc.model is None:
            self.summary.setText("No model open.")
        elif not current:
            none = " with the current recipe." if stale else ": no preparation notes, plan issues or writer notes."
            self.summary.setText(f"No problems{none}{stale}")
        else:
            self.summary.setText(f"{severity_counts(current)}. Click a row to select its node.{stale}")
        self.countChanged.emit(*(sum(1 for i in current if i.severity == sev) for sev in _ORDER))
        self._fit_columns()

    def _fit_columns(self) -> None:
        """The Node and From columns as wide as their words, each at most :data:`NODE_SHARE` of the tree (the
        user may drag them); the Message column takes the rest."""
        width = self.tree.viewport().width()
        for col in (1, 3):
            widest = max(self.tree.sizeHintForColumn(col), self.tree.header().sectionSizeHint(col))
            self.tree.setColumnWidth(col, max(NODE_MIN, min(widest, int(width * NODE_SHARE))))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit_columns()

    def _row(self, parent, source: str, issue: PlanIssue, message: str, *, node: str) -> QTreeWidgetItem:
        """A row of the tree (under ``parent``, or top-level) for ``issue``, showing ``message`` and ``node``."""
        stale = source == STALE_SOURCE
        item = QTreeWidgetItem([_WORDS.get(issue.severity, str(issue.severity)), node, message, source])
        item.setData(0, Qt.ItemDataRole.UserRole, node)
        for col in range(4):
            item.setTextAlignment(col, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)  # beside line 1
            item.setToolTip(col, f"{issue.message}\n\n{_STALE_TIP}" if stale else issue.message)
            if stale:
                item.setForeground(col, self.palette().color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text))
        if not stale and _COLOURS.get(issue.severity):
            item.setForeground(0, QColor(_COLOURS[issue.severity]))
        if parent is None:
            self.tree.addTopLevelItem(item)
        else:
            parent.addChild(item)
        return item

    def row_of(self, text: str) -> int:
        """The index in :attr:`problems` of the first issue whose message contains ``text`` (-1: none)."""
        return next((r for r, (_s, i) in enumerate(self.problems) if text in i.message), -1)

    def item_of(self, row: int) -> QTreeWidgetItem:
        """The tree's row of ``problems[row]``."""
        return self.items[row]

    def click_row(self, row: int) -> None:
        """Act as if the row of ``problems[row]`` was clicked."""
        if 0 <= row < len(self.items):
            self._on_item_clicked(self.items[row], 2)

    def _on_item_clicked(self, item: QTreeWidgetItem, _col: int) -> None:
        """A row with a node selects it; a group row opens or closes."""
        node = item.data(0, Qt.ItemDataRole.UserRole)
        if node:
            self.nodeClicked.emit(node)
        elif item.childCount():
            item.setExpanded(not item.isExpanded())


__all__ = ["GROUP_TITLES", "SEVERITY_TITLES", "STALE_SOURCE", "ProblemsPanel", "collect_problems", "group_problems",
           "group_title", "island_tip", "severity_counts"]
