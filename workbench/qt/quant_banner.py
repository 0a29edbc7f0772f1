"""The banner above the graph that says an open model is already quantized, and how.

Text from :meth:`workbench.core.api.QuantSummary.text` (formats, then per op type how many nodes
run with which activation/weight dtypes and how many stay float), then every op family onnxruntime
runs on quantized data (integer kernels, weight-only kernels, Reshape / Transpose / MaxPool ... on
integer tensors; not the float ops between Q/DQ pairs: ``QuantSummary.families``), most first
(:data:`FAMILIES_SHOWN` of them, "and N more" with the full list in the tooltip), e.g. "Already
quantized - QDQ: 38 Conv uint8/uint8, 13 MatMul uint8/uint8; quantized ops: 107 Add, 107 Mul, 38 Conv,
13 MatMul, 9 Transpose, 7 Sigmoid and 7 more". Hidden for float models.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QWidget

from workbench.qt.theme import shown_theme

#: shown where recipe controls would be (Inspector, Recipe panel) while an already-quantized model is open
RECIPE_OFF_NOTE = ("Recipe controls are hidden: this model is already quantized "
                   "(open its float model to change how it is quantized).")

#: what the banner adds for the open model: the app's actions on it
OPEN_FILE_NOTE = ("Calibrate, Analyze and Export are off; colours show the dtypes the file holds "
                  "(dtypes are activation/weight).")
#: what it adds in the exported-model tab: the model open in the window keeps its actions
EXPORTED_FILE_NOTE = ("The file as written, read-only: to change it, edit the recipe in the Graph tab "
                      "and export again (dtypes are activation/weight).")

#: op families the banner names before "and N more"
FAMILIES_SHOWN = 6

#: the banner's colours per theme shown: a light amber box with dark brown text, or a dark amber box with
#: light amber text (text on its background at least 7:1 in both, WCAG contrast)
STYLES = {
    "light": ("QFrame#quantBanner { background: #fff4e0; border: 1px solid #f0b35a; border-radius: 4px; }"
              " QFrame#quantBanner QLabel { color: #5a3b00; }"),
    "dark": ("QFrame#quantBanner { background: #3a2c10; border: 1px solid #a87a2e; border-radius: 4px; }"
             " QFrame#quantBanner QLabel { color: #f6deae; }"),
}


class QuantBanner(QFrame):
    """One line of text; :meth:`show_summary` fills it (None hides it)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("quantBanner")
        self.set_theme(shown_theme())
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 3, 8, 3)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.label, 1)
        self.setVisible(False)

    def show_summary(self, summary, name: str = "", note: str = OPEN_FILE_NOTE) -> None:
        """Show ``summary`` (a QuantSummary, or None for a float model: the banner hides); ``note``
        follows the summary (what the window does with the file: :data:`OPEN_FILE_NOTE` for the
        open model, :data:`EXPORTED_FILE_NOTE` for the exported-model tab)."""
        if summary is None or not summary.quantized:
            self.label.setText("")
            self.setVisible(False)
            return
        who = f"{html.escape(name)} is " if name else ""
        families = summary.families_text(FAMILIES_SHOWN)
        ops = f"; quantized ops: {html.escape(families)}" if families else ""
        self.label.setText(f"<b>{who}already quantized</b> - {html.escape(summary.text())}{ops}. {html.escape(note)}")
        tip = "Integer kernels: " + (", ".join(sorted(set(summary.kernels.values()))) or "none")
        if summary.families:
            tip += "\nOps onnxruntime runs on quantized data: " + ", ".join(f"{op} {n}" for op, n in summary.families)
        self.setToolTip(tip)
        self.setVisible(True)

    def set_theme(self, shown: str) -> None:
        """Colours of theme ``shown`` ("light" or "dark", :data:`STYLES`)."""
        self.setStyleSheet(STYLES.get(shown, STYLES["light"]))

    def text(self) -> str:
        return self.label.text()
