"""File > Apply Project to Model...: the match table of a project's recipe against the open model.

The project's overrides are matched to the open model's nodes by name, then by structure, and its
name globs re-counted (:func:`workbench.core.pipeline.retarget.retarget_recipe`); the dialog lists
every entry with where it lands, and Apply replaces the recipe in one undoable edit.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QTableWidgetItem, QVBoxLayout, QWidget

from workbench.core.wording import count, plural
from workbench.qt.tables import node_item, node_table

#: how an entry matched -> the words of the "Matched by" column
MATCHED_BY = {"name": "name", "structure": "structure (moved)", "missing": "no longer exists", "glob": "name glob"}

COLUMNS = ["In the project", "Recipe entry", "In this model", "Matched by", "Detail"]


def summary_text(rt) -> str:
    """The dialog's summary: overrides applied / moved / gone, globs that match nothing now."""
    overrides = [r for r in rt.rows if r.kind == "override"]
    gone = [r for r in overrides if r.how == "missing"]
    moved = [r for r in overrides if r.how == "structure"]
    dead_globs = [r for r in rt.rows if r.kind != "override" and r.how == "missing"]
    lines = [f"Overrides: {len(overrides) - len(gone)} of {len(overrides)} apply "
             f"({len(moved)} moved to a new name, {len(gone)} no longer {plural(len(gone), 'exists', 'exist')})."]
    if dead_globs:
        lines.append(f"{count(len(dead_globs), 'name glob matches', 'name globs match')} no node of this model any more.")
    if overrides and len(gone) == len(overrides):
        lines.append("None of the project's overrides matches this model: is it a version of the project's model?")
    if not rt.structure:
        lines.append("The project's own model file is missing or changed, so overrides were matched by name only.")
    lines.append("Apply replaces the recipe (Edit > Undo reverts it); calibrate (F5) to measure this model.")
    return "\n".join(lines)


class ApplyProjectDialog(QDialog):
    """The match table of ``rt`` (a :class:`~workbench.core.pipeline.retarget.Retarget`); Apply accepts."""

    def __init__(self, rt, project: Path, model_name: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.retarget = rt
        self.setWindowTitle(f"Apply {project.name} to {model_name}")
        self.resize(900, 420)
        lay = QVBoxLayout(self)
        lay.addWidget(QLabel(f"Recipe of <b>{project}</b> on <b>{model_name}</b>:"))
        self.table = node_table(COLUMNS)
        self.table.setRowCount(len(rt.rows))
        for i, r in enumerate(rt.rows):
            self.table.setItem(i, 0, node_item(r.old))
            cells = [r.kind, r.new if r.new is not None else "(no longer exists)", MATCHED_BY[r.how], r.detail]
            for j, text in enumerate(cells, start=1):
                self.table.setItem(i, j, QTableWidgetItem(text))
        lay.addWidget(self.table, 1)
        self.summary = QLabel(summary_text(rt))
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.summary)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.apply_button = self.buttons.addButton("&Apply", QDialogButtonBox.ButtonRole.AcceptRole)
        self.apply_button.setDefault(True)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)

    def rows_text(self) -> list[tuple[str, ...]]:
        """The table as shown: one tuple of cell texts per row."""
        return [tuple(self.table.item(i, j).text() for j in range(self.table.columnCount()))
                for i in range(self.table.rowCount())]
