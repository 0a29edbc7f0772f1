"""Sensitivity panel: the sweep's per-unit figures in a sortable table, worst first.

Columns (dB, end-to-end SQNR over all model outputs against the float model, see
:mod:`workbench.core.analysis.sensitivity`): *only quantized* (only this unit quantized), *only float*
(every unit quantized but this one), *own output* (this unit's output with only it quantized),
*gain if float* (only float minus all quantized). Clicking a row emits :attr:`nodeClicked`; the
figure box chooses what the canvas is coloured by (:meth:`canvas_values`: by the value, on the app's SQNR
bands, :mod:`workbench.qt.sweep_colours`; the key under it says what each colour stands for); "Apply
suggestion" emits :attr:`applyRequested` (the window turns it into an undoable recipe edit). The sweep
measures the first :func:`workbench.qt.settings.sweep_rows` calibration rows (the Rows box, 8 unless set).
"""

from __future__ import annotations

import html
import math

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.api import FIGURES, SweepResult
from workbench.core.wording import count
from workbench.qt import settings
from workbench.qt.sweep_colours import band_labels, colour_notes, colour_scale, colour_value
from workbench.qt.sweep_text import (
    FIGURE_TIPS,
    NOTHING_QUANTIZED,
    errors_note,
    measured_text,
    negative_gains_note,
    number_text,
    rows_text,
)
from workbench.qt.tables import node_at, node_item, node_table

#: Figure key -> (column title, True when a higher value means a more sensitive unit).
FIGURE_TITLES = {
    "only_quant_db": ("Only quantized (dB)", False),
    "only_float_db": ("Only float (dB)", True),
    "local_db": ("Own output (dB)", False),
    "gain_db": ("Gain if float (dB)", True),
}


#: Said before the summary while the sweep was measured with an earlier recipe or other data.
STALE = "Out of date: swept with an earlier recipe or other calibration data; sweep again (F7). "

def column_title(title: str) -> str:
    """A figure's table title on three lines, its last word and its unit on their own ("Gain if float (dB)" ->
    "Gain if\\nfloat\\n(dB)"): on one line the four figure columns left the node names 26-55 px of the table in
    a 1024 x 700 window ("/f/...onv")."""
    name, unit = title.rsplit(" (", 1)
    return "\n".join(name.rsplit(" ", 1) + [f"({unit}"])


class _Num(QTableWidgetItem):
    """A numeric cell that sorts by value (NaN last in either order: highest first put every unit the sweep did
    not measure on top) and shows "-" for NaN, "exact" for +inf."""

    def __init__(self, value: float):
        super().__init__(number_text(value))  # "0.00", never "-0.00"
        self.value = value
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other) -> bool:
        a, b = self.value, getattr(other, "value", math.nan)
        if math.isnan(a) or math.isnan(b):
            table = self.tableWidget()
            descending = table is not None and \
                table.horizontalHeader().sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
            # Qt sorts highest first by asking ``other < self``: NaN is then the lesser, to come last
            return math.isnan(a) and not math.isnan(b) if descending else not math.isnan(a) and math.isnan(b)
        return a < b


class SensitivityPanel(QWidget):
    nodeClicked = Signal(str)
    figureChanged = Signal(str)
    runRequested = Signal()
    applyRequested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.result: SweepResult | None = None
        self.quantized: int | None = None  # node units the swept model quantizes (set_result)
        self.suggestion: list[str] = []
        self.float_nodes: set[str] = set()
        self.stale = False  # measured with an earlier recipe or other data (set_stale)
        self.outputs: list[dict] = []  # the Errors panel's output SQNR (set_errors_outputs)
        lay = QVBoxLayout(self)
        top = QHBoxLayout()
        self.run_button = QPushButton("Run sweep")
        self.run_button.setToolTip("Measure every unit alone quantized and alone float (F7)")
        self.figure = QComboBox()
        for key in FIGURES:
            self.figure.addItem(FIGURE_TITLES[key][0], key)
        self.figure.setToolTip("Figure the canvas is coloured by, by its value (the key below)")
        self.rows = QSpinBox()
        self.rows.setRange(1, 100_000)
        self.rows.setValue(settings.sweep_rows())
        self.rows.setToolTip("The sweep measures the first N calibration rows (each unit costs two runs over\n"
                             "them); the Errors panel's SQNR is over every row. Takes effect at the next sweep.")
        self.apply_button = QPushButton("Apply suggestion")
        self.apply_button.setEnabled(False)
        top.addWidget(self.run_button)
        top.addWidget(QLabel("Rows:"))
        top.addWidget(self.rows)
        top.addWidget(QLabel("Colour by:"))
        top.addWidget(self.figure)
        top.addStretch(1)
        top.addWidget(self.apply_button)
        lay.addLayout(top)
        self.summary = QLabel("No sweep yet: Run > Sensitivity Sweep (F7).")
        self.summary.setWordWrap(True)
        lay.addWidget(self.summary)
        self.key = QLabel()
        self.key.setWordWrap(True)
        self.key.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(self.key)
        self.table = node_table(["Node", "Op"] + [column_title(FIGURE_TITLES[k][0]) for k in FIGURES])
        for c, key in enumerate(FIGURES):  # what each figure means; why a gain can be negative
            self.table.horizontalHeaderItem(2 + c).setToolTip(FIGURE_TIPS[key])
        lay.addWidget(self.table, 1)
        self.table.setVisible(False)  # no empty table before a sweep: the summary line says what to do
        lay.addStretch(0)
        self.table.cellClicked.connect(self._on_cell)
        self.run_button.clicked.connect(self.runRequested)
        self.apply_button.clicked.connect(self.applyRequested)
        self.figure.currentIndexChanged.connect(lambda _i: self._refresh_key())
        self.figure.currentIndexChanged.connect(lambda _i: self.figureChanged.emit(self.current_figure()))
        self.rows.valueChanged.connect(self._rows_changed)
        self._refresh_key()

    # ------------------------------------------------------------------ content
    def _rows_changed(self, rows: int) -> None:
        settings.set_sweep_rows(rows)
        self._refresh_key()

    def _refresh_key(self) -> None:
        """The key of the canvas colours for the chosen figure and the rows the next sweep measures."""
        figure = self.current_figure()
        swatches = " &nbsp;".join(
            f'<span style="color:{colour}; font-weight:bold;">&#9632;</span>&nbsp;{html.escape(label)}'
            for label, colour in band_labels(figure))
        rows = self.rows.value()
        self.key.setText(f"Canvas colour ({html.escape(self.figure.currentText())}), by value: {swatches}; "
                         "grey: not measured. "
                         f"The next sweep measures the first {html.escape(count(rows, 'calibration row'))} "
                         "(Rows; the Errors panel measures every row).")

    def set_result(self, result: SweepResult | None, suggestion: list[str] | None = None,
                   quantized: int | None = None) -> None:
        """Show ``result`` (rows worst first, i.e. sorted by "only quantized" ascending); ``quantized``: how many
        node units the swept model quantizes (0: the summary says nothing was quantized, no dB figure; None: not
        recorded)."""
        self.result, self.suggestion = result, list(suggestion or [])
        self.quantized = quantized
        self.table.setSortingEnabled(False)
        rows = result.rows if result is not None else []
        self.table.setRowCount(len(rows))
        self.table.setVisible(bool(rows))
        for i, r in enumerate(rows):
            suggested = r.node in self.suggestion
            name = node_item(r.node, "Suggested: keep in float" if suggested else "")
            if suggested:
                font = name.font()
                font.setBold(True)
                name.setFont(font)
            self.table.setItem(i, 0, name)
            self.table.setItem(i, 1, QTableWidgetItem(r.op_type))
            for c, key in enumerate(FIGURES):
                self.table.setItem(i, 2 + c, _Num(getattr(r, key)))
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(2, Qt.SortOrder.AscendingOrder)  # the header's indicator too (_Num reads it)
        self.set_float(self.float_nodes)

    def set_float(self, nodes: set[str]) -> None:
        """Mark the rows of units the current recipe keeps in float (greyed, tooltip) and enable
        "Apply suggestion" only while part of the suggestion is not applied yet."""
        self.float_nodes = set(nodes)
        grey = self.palette().color(self.foregroundRole())  # the theme's text colour, faded
        grey.setAlpha(110)
        for row in range(self.table.rowCount()):
            item, node = self.table.item(row, 0), self.node_at(row)
            is_float = node in self.float_nodes
            for col in range(self.table.columnCount()):
                # other rows keep no colour of their own: they follow the theme when it changes
                self.table.item(row, col).setData(Qt.ItemDataRole.ForegroundRole, grey if is_float else None)
            tips = (["Suggested: keep in float"] if node in self.suggestion else []) + (
                ["Kept in float by the current recipe"] if is_float else [])
            item.setToolTip("; ".join(tips))
        pending = self.pending()
        self.apply_button.setEnabled(self.can_apply())
        if self.stale and pending:
            self.apply_button.setToolTip("Out of date: sweep again (F7) before applying its suggestion")
        elif pending:
            self.apply_button.setToolTip(f"Keep in float: {', '.join(pending)}")
        else:
            self.apply_button.setToolTip("The suggestion is applied" if self.suggestion else
                                         "No unit gains enough end to end from staying in float")
        self.summary.setText(self._summary())

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
        """A theme switch (palette change) recolours the greyed rows in the new text colour."""
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.set_float(self.float_nodes)

    def set_stale(self, stale: bool) -> None:
        """Mark the sweep as measured with an earlier recipe or other data: said first in the summary,
        and its suggestion is not offered until it is swept again."""
        self.stale = stale
        self.set_float(self.float_nodes)

    def set_errors_outputs(self, outputs: list[dict] | None) -> None:
        """The Errors panel's output SQNR (the calibrate job's ``outputs``): the summary says why the sweep's
        all-quantized figure differs from it (rows, kernels)."""
        self.outputs = list(outputs or [])
        self.summary.setText(self._summary())

    def can_apply(self) -> bool:
        """Part of the suggestion is not applied yet, and the sweep is current."""
        return bool(self.pending()) and not self.stale

    def pending(self) -> list[str]:
        """Suggested units the current recipe still quantizes."""
        return [n for n in self.suggestion if n not in self.float_nodes]

    def _summary(self) -> str:
        res = self.result
        if res is None:
            return "No sweep yet: Run > Sensitivity Sweep (F7)."
        if self.quantized == 0 and not res.rows:
            return STALE + NOTHING_QUANTIZED if self.stale else NOTHING_QUANTIZED
        measured = sum(1 for r in res.rows if not math.isnan(r.only_quant_db))
        text = (f"{measured_text(len(res.rows), measured)}; "
                f"{rows_text(res.samples, res.all_quant_db)}.{errors_note(res.samples, res.all_quant_db, self.outputs)}"
                f"{negative_gains_note([r.gain_db for r in res.rows])}")
        if self.suggestion:
            text += f" Suggestion: keep {len(self.suggestion)} in float ({', '.join(self.suggestion[:3])}" + \
                    (" ...)" if len(self.suggestion) > 3 else ")")
            text += " - applied." if not self.pending() else "."
        text += self._marks_text() + " Click a row to select the node."
        return STALE + text if self.stale else text

    def _marks_text(self) -> str:
        """What the table's bold and greyed rows mean, when it has such rows (said only in their tooltips)."""
        shown = {r.node for r in self.result.rows} if self.result is not None else set()
        marks = (["in bold: suggested to keep in float"] if shown & set(self.suggestion) else []) + (
            ["greyed: kept in float by the current recipe"] if shown & self.float_nodes else [])
        return f" Rows {'; '.join(marks)}." if marks else ""

    def node_at(self, row: int) -> str:
        """Node name shown in table row ``row`` (after sorting)."""
        return node_at(self.table, row)

    def click_row(self, row: int) -> None:
        """Act as if row ``row`` (as currently sorted) was clicked."""
        if 0 <= row < self.table.rowCount():
            self.table.selectRow(row)
            self.nodeClicked.emit(self.node_at(row))

    def _on_cell(self, row: int, _column: int) -> None:
        self.nodeClicked.emit(self.node_at(row))

    def current_figure(self) -> str:
        return self.figure.currentData()

    def canvas_scale(self, figure: str | None = None) -> tuple[float, float, bool] | None:
        """(lowest, highest, higher_is_worse) of the bands of ``figure`` (default: the chosen one) when
        they are not the SQNR's (the gain if float: :func:`~workbench.qt.sweep_colours.colour_scale`),
        for the canvas legend to label its stops with; None for an SQNR figure or without a sweep."""
        if self.result is None:
            return None
        return colour_scale(figure or self.current_figure())

    def canvas_notes(self, figure: str | None = None) -> list[str]:
        """The canvas legend's notes for ``figure`` (default: the chosen one): coloured by the value."""
        return colour_notes(figure or self.current_figure())

    def canvas_figures(self, figure: str | None = None) -> dict[str, float]:
        """Node -> the real value (dB, +inf for exact) of ``figure`` (default: the chosen one) for the
        nodes :meth:`canvas_values` colours: what the canvas's group boxes and tooltips name."""
        if self.result is None:
            return {}
        key = figure or self.current_figure()
        return {r.node: getattr(r, key) for r in self.result.rows if not math.isnan(getattr(r, key))}

    def canvas_values(self, figure: str | None = None) -> dict[str, float]:
        """Node -> value on the canvas's SQNR colour stops for ``figure`` (default: the chosen one), by
        the figure's value (:func:`~workbench.qt.sweep_colours.colour_value`): an SQNR figure its dB
        (+inf at 100), the gain if float on its own bands (0 dB green, 10 dB or more red); units not
        measured left out. A sweep whose every unit is harmless is all green."""
        if self.result is None:
            return {}
        key = figure or self.current_figure()
        out = {}
        for r in self.result.rows:
            value = colour_value(key, getattr(r, key))
            if value is not None:
                out[r.node] = value
        return out
