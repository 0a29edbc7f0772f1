"""Cost panel: MACs, bit operations and weight memory per compute node, float vs planned quantization.

The float figures (MACs from inferred shapes, weight and bias sizes) depend on the model and the
input shapes: they are counted at the shapes of the calibration data's first sample (symbolic
height / width, sequence length, a sample rate that picks an If branch), or at batch 1 without data,
by :func:`workbench.core.analysis.cost.model_cost` on the open model in a worker thread (it infers
shapes on a weight-less skeleton: 0.1-0.6 s for the corpus models), once per model and data source
and only while the panel is visible. The quantized figures come from the document's plan of the
current recipe: each node gets the (weight, activation) bit widths the written file reads it at, each
input on the grid the writer gives its tensor (:func:`workbench.core.analysis.cost.plan_bits`); nodes
that read no quantized tensor stay float32 (32 x 32); "BOPs as run" counts them at the widths onnxruntime computes at
(:func:`workbench.core.analysis.cost.plan_kernel_bits`). They are recomputed on every recipe change, without a job.
Formulas: :mod:`workbench.core.analysis.cost` (BOPs = MACs x activation bits x weight bits).
Clicking a row emits :attr:`nodeClicked`.
"""

from __future__ import annotations

import json
import logging

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QLabel,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core import api
from workbench.core.api import CostReport, NodeCost
from workbench.core.errors import WorkbenchError
from workbench.core.wording import count
from workbench.qt.tables import node_at, node_item, node_table
from workbench.qt.workers import ThreadJob
from workbench.qt.wrapped_height import WrappedHeight

log = logging.getLogger(__name__)

COLUMNS = ["Node", "Op", "MACs", "Bits (w/a)", "BOPs float", "BOPs quantized", "BOPs as run", "Weights float (bits)",
           "Weights quantized (bits)"]
#: tooltip of the "BOPs as run" header
AS_RUN_TIP = ("Bit operations at the widths onnxruntime's CPU provider computes at: integer kernels for 8-bit "
              "Conv / MatMul / Gemm, MatMulNBits for int4 block weights; a ConvTranspose, 16-bit activations or "
              "float8 run DequantizeLinear and a float kernel (32 x 32). This is the figure that tracks latency.")


#: the summary's least width, pixels (a long file name in it wraps no further and is cut, never widening the dock)
SUMMARY_MIN_WIDTH = 60


class _Num(QTableWidgetItem):
    """A right-aligned integer cell with thousands separators that sorts by value (unknown first)."""

    def __init__(self, value: int | None):
        super().__init__("?" if value is None else f"{value:,}")
        self.value = -1 if value is None else value
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other) -> bool:
        return self.value < getattr(other, "value", -1)


def _float_cost(model, data) -> tuple[CostReport]:
    """Float cost of ``model`` at the shapes of ``data``'s first sample (batch 1 without data, or when
    the data cannot be read: a note says why). Runs in the worker thread."""
    sample, note = None, None
    if data:
        try:
            sample = api.data_sample(model, data)
        except WorkbenchError as exc:
            note = f"counted at batch 1: the calibration data gives no shapes ({exc.message})"
    report = api.model_cost(model.proto, input_values=sample)
    if note:
        report.notes.insert(0, note)
    return (report,)


class CostPanel(QWidget):
    nodeClicked = Signal(str)
    #: emitted after the table shows new figures (a model's float cost arrived or the recipe changed)
    updated = Signal()

    def __init__(self, document, parent: QWidget | None = None):
        super().__init__(parent)
        self.doc = document
        self.job: ThreadJob | None = None
        self._float_rows: list[NodeCost] | None = None
        self._rows_key: tuple | None = None  # (model path, data spec) the float rows were counted for
        self._notes: list[str] = []
        self.report: CostReport | None = None
        lay = QVBoxLayout(self)
        self.summary = QLabel("Open a model to see its cost.")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # its least width is not its longest word's: "Computing the cost of model_opset17.onnx..." asked 155 px of
        # the dock while it counted, and beside the Problems tabs of a 1024 x 700 window the window grew 2 px
        self.summary.setMinimumWidth(SUMMARY_MIN_WIDTH)
        lay.addWidget(self.summary)
        self.table = node_table(COLUMNS)
        self.table.horizontalHeaderItem(COLUMNS.index("BOPs as run")).setToolTip(AS_RUN_TIP)
        lay.addWidget(self.table, 1)
        self.wrapped_height = WrappedHeight(self)  # the summary's wrapped lines whole (a narrow dock cut them)
        self.table.cellClicked.connect(lambda row, _col: self.nodeClicked.emit(self.node_at(row)))
        document.modelChanged.connect(self._on_model)
        document.dataChanged.connect(self._on_data)
        document.recipeChanged.connect(self.refresh)

    # ------------------------------------------------------------------ float cost (job)
    def _key(self) -> tuple | None:
        """What the float rows depend on: the model file and the calibration data spec."""
        if self.doc.model is None or not self.doc.model_path:
            return None
        return str(self.doc.model_path), json.dumps(self.doc.data, sort_keys=True, default=str)

    def _on_model(self) -> None:
        self._float_rows, self._rows_key, self.report = None, None, None
        self._show()
        if self.isVisible():
            self.compute()

    def _on_data(self) -> None:
        if self._float_rows is not None and self._rows_key != self._key():
            self._float_rows = None  # other shapes: count again (the old figures stay until then)
            if self.isVisible():
                self.compute()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._float_rows is None:
            self.compute()

    def compute(self) -> ThreadJob | None:
        """Start counting the float cost of the open model at its data's shapes (None when there is
        nothing to do, or a count for other inputs is still running: it is redone when that ends)."""
        key = self._key()
        if key is None or (self._float_rows is not None and self._rows_key == key):
            return None
        if self.doc.quant_summary is not None:  # no float cost, no plan: say so instead of zeros
            self.summary.setText(self.quantized_text())
            return None
        if self.job is not None:  # for another model or data: _on_finished starts the new count
            return None
        model, data = self.doc.model, self.doc.data
        job = ThreadJob(lambda: (key, *_float_cost(model, data)), title=f"Cost of {self.doc.model_path.name}",
                        plain=True, parent=self)
        self.job = job
        job.succeeded.connect(self._on_cost)
        job.failed.connect(self._on_failed)
        job.finished.connect(self._on_finished)
        self.summary.setText(f"Computing the cost of {self.doc.model_path.name}...")
        job.start()
        return job

    def _on_cost(self, result: tuple) -> None:
        key, report = result
        if key != self._key():
            return
        self._float_rows, self._rows_key = report.rows, key
        self._notes = list(report.notes)
        self.refresh()

    def _on_failed(self, err) -> None:
        log.warning("cost of %s failed: %s", self.doc.model_path, err)
        self.summary.setText(f"Cost not available: {err}")

    def _on_finished(self) -> None:
        job, self.job = self.job, None
        if job is not None:
            job.deleteLater()
        if self.isVisible() and self._float_rows is None:
            self.compute()  # the model changed while the job ran

    def shutdown(self, timeout_ms: int = 5_000) -> None:
        """Cancel a running job and wait for it (called when the window closes)."""
        if self.job is not None and self.job.running:
            self.job.cancel()
            self.job.wait(timeout_ms)

    # ------------------------------------------------------------------ quantized figures
    def planned_bits(self) -> dict[str, tuple[int, int]]:
        """Node -> (weight bits, activation bits) as the file the plan writes reads them (:func:`api.plan_bits`)."""
        plan = self.doc.plan
        return api.plan_bits(plan, self.doc.model.proto.graph) if plan is not None else {}

    def refresh(self) -> None:
        """Recompute the quantized figures from the current plan and show them."""
        if self._float_rows is None:
            return
        plan = self.doc.plan
        kernel = api.plan_kernel_bits(plan, self.doc.model.proto.graph) if plan is not None else {}
        self.report = CostReport(rows=api.with_bits(self._float_rows, self.planned_bits(), kernel),
                                 notes=list(self._notes))
        self._show()
        self.updated.emit()

    def _show(self) -> None:
        rep = self.report
        self.table.setSortingEnabled(False)
        rows = rep.rows if rep is not None else []
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            self.table.setItem(i, 0, node_item(r.node, r.note or ""))
            self.table.setItem(i, 1, QTableWidgetItem(r.op_type))
            self.table.setItem(i, 2, _Num(r.macs))
            self.table.setItem(i, 3, QTableWidgetItem(f"{r.weight_bits}/{r.activation_bits}"))
            for c, value in enumerate((r.bops_float, r.bops, r.bops_kernel, r.memory_float_bits, r.memory_bits),
                                      start=4):
                self.table.setItem(i, c, _Num(value))
        self.table.setSortingEnabled(True)
        if rep is not None:
            self.summary.setText(self.summary_text())
        elif self.doc.model is None:
            self.summary.setText("Open a model to see its cost.")
        else:  # a model with no figures yet: never the totals of the one before
            self.summary.setText(self.pending_text())

    def pending_text(self) -> str:
        """The summary while the open model's cost is not counted yet (the panel hidden, or a count running)."""
        if self.doc.quant_summary is not None:
            return self.quantized_text()
        name = self.doc.model_path.name if self.doc.model_path else "the model"
        if self.isVisible():
            return f"Computing the cost of {name}..."
        return f"The cost of {name} is counted when this panel is shown (View > Cost)."

    def quantized_text(self) -> str:
        """The panel's text for an already-quantized file (it has no float cost or plan to count)."""
        return (f"{self.doc.model_path.name} is already quantized: the cost panel counts a float model's MACs, "
                "bit operations and weights against its recipe. Open the float model to see them; the banner "
                "above the graph says how this file is quantized.")

    def summary_text(self) -> str:
        rep = self.report
        if rep is None:
            return ""
        ratio = f" ({rep.bops_float / rep.bops:.1f}x fewer)" if rep.bops else ""
        run = f" ({rep.bops_float / rep.bops_kernel:.1f}x fewer)" if rep.bops_kernel else ""
        text = (f"Total over {count(len(rep.rows), 'compute node')}: {rep.macs:,} MACs; BOPs {rep.bops_float:,} float -> "
                f"{rep.bops:,} quantized{ratio}, {rep.bops_kernel:,} as onnxruntime runs them{run}; "
                f"weights {rep.memory_float_bits / 8:,.0f} -> "
                f"{rep.memory_bits / 8:,.0f} bytes. Quantized widths from the current recipe's plan.")
        if rep.unknown:
            text += (f" The MAC and BOPs totals exclude {count(len(rep.unknown), 'node')} whose shapes stay unknown: "
                     f"{', '.join(rep.unknown)}.")
        if rep.notes:  # a sentence of its own after "...plan.": "Input 'input': shape 1x1x8x8 from the data."
            notes = "; ".join(rep.notes)
            text += " " + notes[:1].upper() + notes[1:] + "."
        return text

    # ------------------------------------------------------------------ rows
    def node_at(self, row: int) -> str:
        """Node name shown in table row ``row`` (after sorting)."""
        return node_at(self.table, row)

    def row_of(self, node: str) -> int:
        """Table row showing ``node`` (-1 when absent)."""
        for i in range(self.table.rowCount()):
            if self.node_at(i) == node:
                return i
        return -1

    def click_row(self, row: int) -> None:
        """Act as if row ``row`` (as currently sorted) was clicked."""
        if 0 <= row < self.table.rowCount():
            self.table.selectRow(row)
            self.nodeClicked.emit(self.node_at(row))
