"""The selected unit's histograms, one tab each: its output, its activation inputs, its weight.

As AIMET's per-layer view shows them: the values the unit writes, the values it reads (each activation
input; a unit with several picks one in the tab's list) and its weight, each with the clip range and grid of
the quantizer applied to it (:mod:`workbench.qt.hist_plot`: a legend names every colour). The caption of the
tab shown is :attr:`UnitHistograms.caption` (the Errors panel shows it under the plots); where a tab has
nothing to draw, its caption and the plot itself say why (no weight, an input whose values are not kept).
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QTabWidget, QVBoxLayout, QWidget

from workbench.core.api import QParams
from workbench.qt import hist_plot
from workbench.qt.theme import colors_for, shown_theme

#: tab index -> kind
KINDS = ("output", "input", "weight")
#: the least height (pixels) of a histogram plot: its legend under the value axis (three entries, one a line, in a
#: plot narrower than :data:`workbench.qt.hist_plot.BESIDE_WIDTH`) and the axis take about 100 px, the view box
#: keeps the rest. Without it the Errors dock of a 1024 x 700 window left the plot 64 px and the view box 0 px
MIN_PLOT_HEIGHT = 150


def _plot() -> pg.PlotWidget:
    plot = pg.PlotWidget()
    plot.setLabel("left", "count")  # the value axis untitled: the legend beside it names the values drawn
    plot.setMinimumHeight(MIN_PLOT_HEIGHT)
    return plot


class UnitHistograms(QTabWidget):
    """Output / Input / Weight tabs of one unit's histograms; :attr:`captionChanged` carries the shown tab's caption."""

    captionChanged = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setDocumentMode(True)
        self.output_plot, self.input_plot, self.weight_plot = _plot(), _plot(), _plot()
        self.input_choice = QComboBox()  # which activation input (a unit may read several)
        self.input_choice.setToolTip("The unit's activation input whose values are drawn")
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.input_choice)
        lay.addWidget(self.input_plot, 1)
        self.addTab(self.output_plot, "Output")
        self.addTab(page, "Input")
        self.addTab(self.weight_plot, "Weight")
        self.setTabToolTip(0, "The values the unit writes (its output), with the clip range of their quantizer")
        self.setTabToolTip(1, "The values the unit reads (an activation input), with the clip range they are "
                              "quantized to")
        self.setTabToolTip(2, "The unit's weight, with the grid it is written with")
        self.captions = dict.fromkeys(KINDS, "")
        self.inputs: list[tuple[dict, QParams | None, str, str]] = []  # (hist, qp, note, unit) per input
        self.input_choice.currentIndexChanged.connect(self._draw_input)
        self.currentChanged.connect(lambda _i: self.captionChanged.emit(self.caption()))

    def caption(self) -> str:
        """The caption of the tab shown."""
        return self.captions[KINDS[self.currentIndex()]]

    def kind(self) -> str:
        """"output", "input" or "weight": the tab shown."""
        return KINDS[self.currentIndex()]

    def _set_caption(self, kind: str, text: str) -> None:
        self.captions[kind] = text
        if kind == self.kind():
            self.captionChanged.emit(text)

    def clear(self, message: str) -> None:
        """Every tab empty, each caption ``message`` ("Computing the histogram of ...")."""
        for plot in (self.output_plot, self.input_plot, self.weight_plot):
            hist_plot.reset(plot)
        self.inputs = []
        self.input_choice.blockSignals(True)
        self.input_choice.clear()
        self.input_choice.blockSignals(False)
        self.input_choice.hide()
        self.setTabText(1, "Input")
        for kind in KINDS:
            self._set_caption(kind, message)

    def set_output(self, hist: dict, qp: QParams | None, note: str) -> None:
        """Draw the unit's output ``hist`` (``unit``: its name, ``tensor``) with ``qp``; ``note`` ends the caption."""
        name = f"{hist['unit']} \u2192 output {hist.get('tensor', '')}" if hist.get("unit") else hist.get("tensor", "")
        rows = hist.get("rows")
        text = hist_plot.draw(self.output_plot, hist, qp, fill=colors_for(shown_theme()).histogram_fill,
                              label=f"output values ({rows} rows)" if rows else "output values")
        self._set_caption("output", f"{name}: {text}" + (f"; {note}" if note else ""))

    def set_inputs(self, unit: str, inputs: list[tuple[dict, QParams | None, str]]) -> None:
        """The unit's activation inputs, each ``(hist, qp, note)`` (a ``hist`` with ``missing`` says why it has no
        values); none: the tab says the unit reads only constants."""
        self.inputs = [(h, qp, note, unit) for h, qp, note in inputs]
        self.input_choice.blockSignals(True)
        self.input_choice.clear()
        for h, _qp, _note in inputs:
            self.input_choice.addItem(h.get("tensor", ""))
        self.input_choice.setCurrentIndex(0 if inputs else -1)
        self.input_choice.blockSignals(False)
        self.input_choice.setVisible(len(inputs) > 1)
        self.setTabText(1, f"Inputs ({len(inputs)})" if len(inputs) > 1 else "Input")
        if not inputs:
            hist_plot.reset(self.input_plot)
            self._say(self.input_plot, "no activation input")
            self._set_caption("input", f"{unit} reads no activation (only constants): no input histogram.")
            return
        self._draw_input(0)

    def _draw_input(self, index: int) -> None:
        if not 0 <= index < len(self.inputs):
            return
        hist, qp, note, unit = self.inputs[index]
        name = f"{unit} \u2190 input {hist.get('tensor', '')}"
        if "missing" in hist:
            hist_plot.reset(self.input_plot)
            self._say(self.input_plot, "values not kept")
            self._set_caption("input", f"{name}: its values are not kept: {hist['missing']}.")
            return
        rows = hist.get("rows")
        text = hist_plot.draw(self.input_plot, hist, qp, fill=colors_for(shown_theme()).histogram_fill,
                              label=f"input values ({rows} rows)" if rows else "input values")
        self._set_caption("input", f"{name}: {text}" + (f"; {note}" if note else ""))

    def set_weight(self, unit: str, hist: dict | None, qp: QParams | None, note: str) -> None:
        """The unit's weight ``hist`` (None: it has none) with the grid ``qp`` it is written with (with a
        per-channel ``qp``: the histogram's channel, ``channel_qparams``, is drawn over it with that grid; None:
        the values alone, ``note`` says why)."""
        if hist is None or "missing" in hist:
            hist_plot.reset(self.weight_plot)
            self._say(self.weight_plot, "no weight")
            why = hist["missing"] if hist else "it has no weight (or its weight stays float)"
            self._set_caption("weight", f"{unit}: no weight histogram: {why}.")
            return
        name = f"{unit} weight {hist.get('tensor', '')}"
        channel = hist.get("channel")
        shown = qp
        overlay = ""
        if qp is not None and channel is not None and hist.get("channel_qparams"):
            shown = QParams.from_json(hist["channel_qparams"])
            overlay = f"channel #{channel}"
            hist = {**hist, "overlay_counts": hist.get("channel_counts", [])}
        text = hist_plot.draw(self.weight_plot, hist, shown, fill=colors_for(shown_theme()).histogram_fill,
                              label="all channels" if overlay else "weight values",  # beside "channel #k"
                              overlay_label=overlay)
        if overlay:
            text += (f"; drawn over them: channel #{channel} of {hist.get('channels')} (axis {qp.axis}), the clip "
                     "range and grid shown are that channel's")
        self._set_caption("weight", f"{name}: {text}" + (f"; {note}" if note else ""))

    @staticmethod
    def _say(plot: pg.PlotWidget, text: str) -> None:
        """A word in the middle of an empty plot (the caption says more)."""
        label = pg.TextItem(text, anchor=(0.5, 0.5), color=(110, 110, 110))
        label.setPos(0.5, 0.5)
        plot.addItem(label)
