"""Evaluate panel: the float and the quantized model side by side on eval data.

Top: :class:`~workbench.qt.eval_settings.EvalSettings` (eval data, metric, samples), Evaluate /
Cancel and the job's progress. Below, after a run (:func:`workbench.core.jobs.job_evaluate`): the
task metric on each model with the change, a bar chart of the two (legend under it: float, quantized, with their values), and
per model output the SQNR (``10 log10(sum f^2 / sum (f - q)^2)`` dB), cosine and max abs error of
the quantized output against the float one. The line above says how many samples were used, with
which onnxruntime graph optimisation level, and whether the recipe changed since.
"""

from __future__ import annotations

import math
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStyle,
    QStyledItemDelegate,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core import api
from workbench.core.api import fmt_metric
from workbench.qt.elide import distinct_elide, distinct_starts
from workbench.qt.eval_settings import EvalSettings
from workbench.qt.tables import node_table

FLOAT_COLOR = "#3b78c2"
QUANT_COLOR = "#e07b28"


def _num(value: float | None, text: str | None = None) -> QTableWidgetItem:
    if text is None:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            text = "-"
        elif value == math.inf:
            text = "exact"
        else:
            text = f"{value:.4g}" if abs(value) >= 1e4 or (value and abs(value) < 1e-3) else f"{value:.4f}"
    item = QTableWidgetItem(text)
    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def saved_form(result: dict) -> dict:
    """An Evaluate job's result as the document keeps it and a project saves it (its report as JSON)."""
    return {"report": result["report"].to_json(), "metric": result.get("metric"), "eval_data": result["eval_data"],
            "recipe": result.get("recipe")}


#: item data role of an output name's :func:`distinct_starts` value
START_ROLE = Qt.ItemDataRole.UserRole + 1


class OutputNameDelegate(QStyledItemDelegate):
    """Draws the output names of a column with :func:`distinct_elide`: two long ONNX output names
    that differ only in their middle ("/bert/encoder/layer.0/.../output_0", "layer.5") no longer
    read alike once the column is too narrow for them (a middle ellipsis hid the difference)."""

    def initStyleOption(self, option, index) -> None:  # noqa: N802 (Qt's name)
        super().initStyleOption(option, index)
        widget = option.widget
        style = widget.style() if widget is not None else QApplication.style()
        # the room the style draws the text in (it elides what is wider, in the middle), less 2 px
        # for its text layout's rounding
        margin = style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, widget) + 1
        room = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, option, widget).width() - 2 * margin - 2
        option.text = distinct_elide(option.text, index.data(START_ROLE) or 0, option.fontMetrics, room)


class EvaluatePanel(QWidget):
    """Emits ``runRequested`` (Evaluate) and ``cancelRequested``; :meth:`set_result` shows a job result."""

    runRequested = Signal()
    cancelRequested = Signal()

    def __init__(self, document, parent: QWidget | None = None):
        super().__init__(parent)
        self.doc = document
        self.result: dict | None = None
        lay = QVBoxLayout(self)
        self.settings = EvalSettings()
        lay.addWidget(self.settings)
        buttons = QHBoxLayout()
        self.run_button = QPushButton("Evaluate")
        self.run_button.setToolTip("Run the float and the quantized model on the eval data (F9)")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.progress, 1)
        lay.addLayout(buttons)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        lay.addWidget(self.summary)
        split = QSplitter(Qt.Orientation.Horizontal)
        tables = QWidget()
        tlay = QVBoxLayout(tables)
        tlay.setContentsMargins(0, 0, 0, 0)
        self.metric_table = node_table(["Task metric", "Float", "Quantized", "Change"])
        self.output_table = node_table(["Output", "SQNR (dB)", "Cosine", "Max abs error"])
        self.output_table.setToolTip("Each output of the quantized model against the float model's")
        self.output_names = OutputNameDelegate(self.output_table)
        self.output_table.setItemDelegateForColumn(0, self.output_names)
        self.metric_table.setMaximumHeight(self.metric_table.horizontalHeader().sizeHint().height() * 3)
        tlay.addWidget(self.metric_table)
        tlay.addWidget(QLabel("Quantized vs float, per model output:"))
        tlay.addWidget(self.output_table, 2)
        split.addWidget(tables)
        self.plot = pg.PlotWidget()
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.setMenuEnabled(False)
        self.plot.showGrid(x=False, y=True, alpha=0.3)
        # under the axis, not over the bars: in the view box "quantized 0.9956" was cut off at the right edge
        # of a plot under ~220 px wide (the Evaluate dock beside the Errors bars) and covered the bar tops
        self.legend = pg.LegendItem()
        self.plot.getPlotItem().layout.addItem(self.legend, 4, 0, 1, 3)  # under the axes, the whole width
        self.plot.getPlotItem().legend = self.legend  # named items join it (PlotItem.addItem)
        split.addWidget(self.plot)
        split.setSizes([400, 270])
        lay.addWidget(split, 1)
        self.run_button.clicked.connect(self.runRequested)
        self.cancel_button.clicked.connect(self.cancelRequested)
        document.modelChanged.connect(self._on_model)
        document.recipeChanged.connect(self._update_summary)
        document.dataChanged.connect(self._update_summary)
        document.evaluatedChanged.connect(self._on_evaluated)
        self.clear()

    # ------------------------------------------------------------------ state
    def clear(self) -> None:
        """Forget the last result (a new model was opened)."""
        self.result = None
        self.metric_table.setRowCount(0)
        self.output_table.setRowCount(0)
        self.plot.clear()
        self.legend.clear()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self._update_summary()

    def _on_model(self) -> None:
        self.settings.reset(self.doc.model_path)
        self.clear()

    def _on_evaluated(self) -> None:
        """Show the document's Evaluate run (a project's, an autosave's) unless it is the one shown."""
        saved = self.doc.evaluated
        if saved is None:
            if self.result is not None:
                self.clear()
            return
        if self.result is None or saved_form(self.result) != saved:
            self.set_result({**saved, "report": api.EvalReport.from_json(saved["report"])})
        self.result["rows"] = self.doc.evaluated_data
        self._update_summary()

    def set_running(self, running: bool, message: str = "") -> None:
        """Cancel enabled while this panel's job runs (the window enables the run button)."""
        self.cancel_button.setEnabled(running)
        if running:
            self.progress.setRange(0, 0)
        if message:
            self.summary.setText(message)

    def show_progress(self, done: int, total: int, message: str) -> None:
        if total > 0:
            self.progress.setRange(0, total)
            self.progress.setValue(min(done, total))
        else:
            self.progress.setRange(0, 0)
        self.summary.setText(message)

    def stopped(self) -> None:
        """The job was cancelled or failed: the previous result (if any) stays, marked as such."""
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self._update_summary()
        previous = f"The figures below are from the previous run: {self.summary.text()}" if self.result else ""
        self.summary.setText(f"Evaluation stopped (cancelled or failed). {previous}".strip())

    def set_result(self, result: dict, rows: tuple | None = None) -> None:
        """Show a :func:`workbench.core.jobs.job_evaluate` result; ``rows``: the calibration (data, samples) the
        job quantized with (the summary says when the document's rows are other ones since)."""
        self.result = {**result, "rows": rows} if rows is not None else result
        rep = result["report"]
        self.progress.setRange(0, 1)
        self.progress.setValue(1)
        self.metric_table.setRowCount(0)
        if rep.metric is not None:
            self._metric_row(self.metric_label(), rep.float_metric, rep.quant_metric)
        self.output_table.setRowCount(len(rep.outputs))
        starts = distinct_starts([o.name for o in rep.outputs])
        for i, o in enumerate(rep.outputs):
            name = QTableWidgetItem(o.name)
            name.setData(START_ROLE, starts[i])
            name.setToolTip(f"{o.name}: shape {o.shape} (first batch), MSE {o.mse:.4g}"
                            + (f", {o.nonfinite} non-finite values left out" if o.nonfinite else ""))
            self.output_table.setItem(i, 0, name)
            self.output_table.setItem(i, 1, _num(o.sqnr_db))
            self.output_table.setItem(i, 2, _num(o.cosine))
            self.output_table.setItem(i, 3, _num(o.max_abs_error))
        self._plot(rep)
        self._update_summary()

    def metric_label(self) -> str:
        metric = (self.result or {}).get("metric")
        if not metric:
            return "no metric"
        return Path(metric).stem if metric.endswith(".py") else metric

    def _metric_row(self, label: str, f: float, q: float) -> None:
        row = self.metric_table.rowCount()
        self.metric_table.insertRow(row)
        item = QTableWidgetItem(label)
        item.setToolTip("Task metric on each model over the same eval samples (higher is better)")
        self.metric_table.setItem(row, 0, item)
        self.metric_table.setItem(row, 1, _num(f, fmt_metric(f)))
        self.metric_table.setItem(row, 2, _num(q, fmt_metric(q)))
        self.metric_table.setItem(row, 3, _num(q - f, f"{q - f:+.4f}"))

    def _plot(self, rep) -> None:
        self.plot.clear()
        self.legend.clear()
        if rep.metric is None:
            self.plot.setTitle("No task metric chosen: see the per-output figures above")
            return
        f, q = rep.float_metric, rep.quant_metric
        for x, value, color, name in ((0, f, FLOAT_COLOR, f"float {fmt_metric(f)}"),
                                      (1, q, QUANT_COLOR, f"quantized {fmt_metric(q)}")):
            bar = pg.BarGraphItem(x=[x], height=[value], width=0.6, brush=color, name=name)
            self.plot.addItem(bar)
        self.plot.getAxis("bottom").setTicks([[(0, "float"), (1, "quantized")]])
        self.plot.setLabel("left", self.metric_label())
        lo = min(0.0, f, q)
        hi = max(f, q, 0.0)
        self.plot.setYRange(lo, hi + 0.05 * ((hi - lo) or 1.0))
        self.plot.setXRange(-0.6, 1.6)

    def _update_summary(self) -> None:
        res = self.result
        if res is None:
            self.summary.setText("No evaluation yet: pick eval data and a metric, then Run > Evaluate (F9).")
            return
        rep = res["report"]
        stale = "" if res.get("recipe") == self.doc.recipe.to_json() else \
            " The recipe changed since: evaluate again (F9)."
        if not stale and "rows" in res and res["rows"] != self.doc.rows:
            stale = " The calibration data changed since: evaluate again (F9)."
        self.summary.setText(
            f"{rep.samples} samples of {Path(res['eval_data']).name}; onnxruntime CPU, graph optimisation "
            f"{rep.optimization_level or 'default'}; {rep.seconds:.1f} s.{stale}")
        self.summary.setToolTip("\n".join([res["eval_data"], *rep.notes]))
