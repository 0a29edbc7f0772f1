"""Run > Sweep Executor...: where the sensitivity sweep's tasks run, chosen from the known executors.

The choices are a list (threads, inline, ray) whose entry can be edited into a cluster's address
(ray:HOST:PORT); the line below the list says what the chosen one does. OK is the default button (Enter),
Cancel answers Escape.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

#: executor -> what it does
CHOICES = {
    "threads": "In the app, one thread per core (the default).",
    "inline": "In the app, one thread.",
    "ray": "A private local Ray instance (needs pip install 'onnx-quant-workbench[ray]').",
}
CLUSTER = "An existing Ray cluster at that address (needs pip install 'onnx-quant-workbench[ray]')."
#: the dialog's width: the lines wrap in it instead of stretching it across the screen
WIDTH = 460


def describe(spec: str) -> str:
    """What the executor ``spec`` does, one line; "" for a spec that names none."""
    spec = spec.strip()
    if spec in CHOICES:
        return CHOICES[spec]
    return CLUSTER if spec.startswith("ray:") else ""


class ExecutorDialog(QDialog):
    """The executor choice; :attr:`choice` holds the list's entry."""

    def __init__(self, current: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Sweep executor")
        intro = QLabel("Where the sensitivity sweep's tasks run. Pick one, or type ray:HOST:PORT for an existing "
                       "Ray cluster.")
        intro.setWordWrap(True)
        self.choice = QComboBox()
        self.choice.setEditable(True)
        self.choice.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.choice.addItems(list(CHOICES))
        self.choice.setCurrentText(current)
        self.hint = QLabel(describe(current))
        self.hint.setWordWrap(True)
        self.choice.currentTextChanged.connect(lambda text: self.hint.setText(describe(text)))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setDefault(True)
        layout = QVBoxLayout(self)
        for widget in (intro, self.choice, self.hint, buttons):
            layout.addWidget(widget)
        self.setFixedWidth(WIDTH)
        self.choice.setFocus()
        self.choice.lineEdit().selectAll()


def ask_executor(parent: QWidget | None, current: str) -> str | None:
    """Show the dialog; the chosen executor spec (stripped, "threads" when left empty), or None on Cancel."""
    dialog = ExecutorDialog(current, parent)
    try:
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        return dialog.choice.currentText().strip() or "threads"
    finally:
        dialog.deleteLater()
