"""Error view (pyqtgraph): per-node-unit SQNR bars worst first, and a tensor histogram.

Clicking a bar emits :attr:`ErrorView.nodeClicked` (the window selects and centres the node on
the canvas). For an already-quantized file there is nothing to calibrate: the view says so and
offers "Compare with its float model..." (:attr:`ErrorView.compareRequested`), whose per-edge SQNR
is what errors mean for such a file. The histogram shows a float tensor's values with the clip range of its quantization
parameters (``rmin = (qmin - zero_point) * scale``, ``rmax = (qmax - zero_point) * scale``, ONNX
QuantizeLinear saturation bounds) and, when there are at most :data:`MAX_GRID_LINES` levels in
view, the quantization grid ``(q - zero_point) * scale`` (both from
:mod:`workbench.core.report.histograms`, the same the HTML report draws).
"""

from __future__ import annotations

import html
import math
import re
import statistics

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollBar,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from workbench.core.api import QParams
from workbench.core.wording import count
from workbench.qt.canvas.colors import ERROR_STOPS, NO_VALUE, SELECTION, error_color
from workbench.qt.dialogs import guarded
from workbench.qt.elide import distinct_labels
from workbench.qt.error_rank import (
    AXIS_TITLES,
    DEFAULT_RANK,
    RANK_TIP,
    RANKS,
    drawn,
    figure,
    has_local,
    marker_note,
    ranked,
    worst_text,
)
from workbench.qt.quantize_anyway import SHOW_QUANTIZED
from workbench.qt.theme import colors_for, shown_theme
from workbench.qt.unit_hist_view import UnitHistograms
from workbench.qt.wrapped_height import WrappedHeight

#: The summary names at most this many model outputs' SQNR (the worst ones; the tooltip lists all).
OUTPUTS_SHOWN = 3

#: The summary of a float model before its first calibration.
NO_RESULTS = "No results yet: calibrate (Run > Calibrate, F5) to see each node unit's error."
#: Said before the figures while they were measured with an earlier recipe or other calibration data.
STALE = "Out of date: measured with an earlier recipe or other calibration data; calibrate again (F5). "

#: Bars for units with SQNR +inf (bit-exact) are drawn at this many dB.
INF_SQNR_DB = 100.0
#: Width of the bar labels' axis, pixels, at least: it grows with the labels up to LABEL_AXIS_SHARE of
#: the bars' plot and LABEL_AXIS_MAX pixels; longer labels are shortened keeping what tells them apart
#: (:func:`workbench.qt.elide.distinct_labels`; the full one is the bar's tooltip). At most
#: MAX_ROWS_SHOWN bars show at once, fewer when the plot is too low for their labels not to overlap; the
#: scroll bar beside them, the wheel and the keys (Up / Down move the selection, Page Up / Page Down, Home,
#: End) reach the rest, and the selected bar is kept in view.
LABEL_AXIS_WIDTH = 190
LABEL_AXIS_MAX = 420
LABEL_AXIS_SHARE = 0.45
#: the tick and its gap beside a label, pixels
LABEL_PAD = 12
#: the labels are shortened again this many milliseconds after the plot's last resize
RELABEL_MS = 80
MAX_ROWS_SHOWN = 25
#: height of a bar's tick (the other figure), pixels, where its row has the room (else the row's height less 5)
TICK_PX = 16.0
#: SQNR tick steps (dB) the bars' axis may use: the smallest whose labels stay apart
TICK_STEPS = (1.0, 2.0, 5.0, 10.0, 20.0, 25.0, 50.0, 100.0, 200.0)
#: room between two tick labels, pixels
TICK_GAP = 14
#: the bars' width beside a histogram (pixels; at least): labels, and an SQNR axis to read
BARS_BESIDE_HISTOGRAM = LABEL_AXIS_WIDTH + 240
#: bars one wheel step scrolls
WHEEL_ROWS = 3


#: the histogram caption while no histogram is drawn
NO_HISTOGRAM = "Select one node to see the histogram of its output."
#: the keys that move the selected bar: key -> rows (PAGE: a page of bars, +-END: the last / first)
PAGE, END = 1 << 20, 1 << 30
BAR_KEYS = {Qt.Key.Key_Up: -1, Qt.Key.Key_Down: 1, Qt.Key.Key_PageUp: -PAGE, Qt.Key.Key_PageDown: PAGE,
            Qt.Key.Key_Home: -END, Qt.Key.Key_End: END}
#: a caption word (tensor name) longer than this many characters may break after its "/" (and "." ,
#: "_" or ":" before a letter), or every this many characters where it has none
LONG_WORD = 24
_ZWSP = "\u200b"  # zero-width space: a line may break there, nothing is drawn


def breakable(text: str) -> str:
    """``text`` with zero-width spaces where its long words may break: after the separators of a
    tensor name ("/bert/encoder/layer.0/..."), else every :data:`LONG_WORD` characters. A word-wrapped
    label then is as wide as its longest piece, not as its longest name (a 76-character MiniLM
    tensor set the Errors dock's minimum width to 530 px)."""
    def soften(word: str) -> str:
        if len(word) <= LONG_WORD:
            return word
        word = re.sub(r"(/|[._:](?=\D))(?=.)", "\\1" + _ZWSP, word)  # not inside "layer.0", "output_1"
        return re.sub(f"([^{_ZWSP}]{{{LONG_WORD}}})(?=[^{_ZWSP}])", "\\1" + _ZWSP, word)
    return " ".join(soften(w) for w in text.split(" "))


class Caption(QLabel):
    """A word-wrapped label whose long words (tensor names) wrap too (:func:`breakable`);
    :meth:`text` is the text as set, without the break marks."""

    def __init__(self, text: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        self._text = text
        super().setText(breakable(text))

    def text(self) -> str:
        return self._text


class _BarsBox(pg.ViewBox):
    """The bars' view box: a wheel turn scrolls the rows (``on_wheel(delta)``) instead of zooming them."""

    def __init__(self, on_wheel):
        super().__init__()
        self._on_wheel = on_wheel

    def wheelEvent(self, ev, axis=None):  # noqa: N802 (Qt's name)
        self._on_wheel(ev.delta())
        ev.accept()


class ErrorView(QWidget):
    nodeClicked = Signal(str)
    colorBySqnr = Signal()
    exportNodeData = Signal()  # "Export for Model Explorer..." (the window asks for the file)
    compareRequested = Signal()  # "Compare with its float model..." (an already-quantized file is open)
    rankChanged = Signal(str)  # the bars' ranking switched ("local" or "accumulated", :mod:`.error_rank`)
    showQuantized = Signal()  # "Show the quantized model's errors" (the latency check kept every unit float)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.rows: list = []
        self.split: dict | None = None  # weights vs activations of the rows (NoiseSplit JSON)
        self.outputs: list[dict] = []  # each model output's SQNR over the calibration rows (job_calibrate's "outputs")
        self.weights: dict[str, dict] = {}  # unit -> its weight's error (WeightError JSON)
        self.local: dict = {}  # unit -> the noise it adds itself (local SQNR, as the calibrate job writes it)
        self.stale = False  # the rows were measured with another recipe than the document's
        self.rank = DEFAULT_RANK  # what the bars rank by, as chosen (:meth:`shown_rank`: as drawn)
        self._given: list = []  # the rows as set, before ranking
        self.quantized_name = ""  # the open file when it is already quantized ("" for a float model)
        #: shown instead of :data:`NO_RESULTS` when a calibration ended with nothing quantized (why and what to do)
        self.empty_note = ""
        #: ends the summary of the rows (the quantized model's errors after the latency check's edit was undone)
        self.rows_note = ""
        #: the units whose bars are shown (the shown tab's graph: a subgraph's nodes), None for every unit
        self.scope: frozenset[str] | None = None
        #: the summary while the results have no bar in :attr:`scope` ("No error data for this view: ...")
        self.scope_note = ""
        lay = QVBoxLayout(self)
        lay.setContentsMargins(9, 4, 9, 4)  # less above and under: the dock's title bar sets it apart; room for the plots
        lay.setSpacing(4)
        top = QHBoxLayout()
        self.summary = Caption(NO_RESULTS)  # long node or file names wrap too
        self.summary.setWordWrap(True)  # the dock may share its row with the Evaluate dock
        self.color_button = QPushButton("Colour canvas by SQNR")
        self.color_button.setEnabled(False)
        self.node_data_button = QPushButton("Export for Model Explorer...")
        self.node_data_button.setToolTip("Write these figures as Model Explorer node data (File > Export Model "
                                         "Explorer Data...)")
        self.node_data_button.setEnabled(False)
        self.compare_button = QPushButton("Compare with its float model...")
        self.compare_button.setToolTip("Pick the float model this file was quantized from: it opens, and the "
                                       "per-edge SQNR of this file against it shows (View > Compare Float vs "
                                       "Quantized, Ctrl+Shift+D)")
        self.compare_button.setVisible(False)
        self.show_quantized_button = QPushButton(SHOW_QUANTIZED)
        self.show_quantized_button.setToolTip("Undo the latency check's edit (Edit > Undo) and analyse the recipe as "
                                              "it is (Run > Analyze, F6): the bars show the quantized model's "
                                              "per-node errors; Ctrl+Y keeps the units float again")
        self.show_quantized_button.setVisible(False)
        # the summary on a row of its own, the buttons under it: a long summary wraps instead of
        # setting the dock's minimum width beside three buttons (423 px, about 600 with Compare)
        lay.addWidget(self.summary)
        self.rank_box = QComboBox()
        for key, text in RANKS.items():
            self.rank_box.addItem(text, key)
        self.rank_box.setCurrentIndex(self.rank_box.findData(DEFAULT_RANK))
        self.rank_box.setToolTip(RANK_TIP)
        self.rank_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.rank_label = QLabel("Rank by:")
        self.rank_label.setToolTip(RANK_TIP)
        top.addStretch(1)
        top.addWidget(self.show_quantized_button)
        top.addWidget(self.compare_button)
        lay.addLayout(top)  # no height while both are hidden (the figures' buttons sit beside the bar legend)
        split = self.split_view = QSplitter()
        self.top_row = 0  # the first bar in view
        self.selected: str | None = None  # the node of the selected bar (the canvas's one selected node)
        self.bars_plot = pg.PlotWidget(viewBox=_BarsBox(self._on_wheel))
        self.bars_plot.setLabel("bottom", "SQNR", units="dB")
        self.bars_plot.invertY(True)
        self.bars_plot.setMouseEnabled(x=False, y=False)  # the rows scroll (bar, wheel, keys), never zoom
        self.bars_plot.getPlotItem().hideButtons()  # its "auto range" button squeezed every bar into view
        self.bars_plot.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # Up / Down move the selected bar
        self.bars_scroll = QScrollBar(Qt.Orientation.Vertical)
        self.bars_scroll.setToolTip("Scroll the bars (also the wheel; Up / Down move the selection)")
        self.bars_scroll.valueChanged.connect(self._on_scroll)
        self.bars_plot.showGrid(x=True, y=False, alpha=0.3)
        self.bars_plot.getAxis("left").setWidth(LABEL_AXIS_WIDTH)
        self.bars_plot.getPlotItem().vb.sigResized.connect(lambda _vb: self._show_rows(follow=True))
        self._labelled_at = 0  # the labels' axis width the labels were shortened to
        # the plot's width sets the labels' (:meth:`label_width`): shortened again once a resize settles
        self._relabel = QTimer(self, singleShot=True, interval=RELABEL_MS)
        self._relabel.timeout.connect(self._label_again)
        self.bars_plot.installEventFilter(self)  # resizes relabel the bars, keys move the selection
        self.hists = UnitHistograms()  # the selected unit's output, input and weight histograms, a tab each
        self.hist_plot = self.hists.output_plot
        self.hist: dict | None = None  #: the histogram drawn (:meth:`set_histogram`), None when cleared
        bars = QWidget()
        row = QHBoxLayout(bars)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        row.addWidget(self.bars_plot, 1)
        row.addWidget(self.bars_scroll)
        column = QVBoxLayout()  # the bars, the switch of what they rank by under them
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(bars, 1)
        switch = QHBoxLayout()
        switch.addWidget(self.rank_label)
        switch.addWidget(self.rank_box)
        switch.addStretch(1)
        column.addLayout(switch)
        bars_column = QWidget()
        bars_column.setLayout(column)
        self.bar_legend = QLabel(bar_legend_html())  # what the bar colours mean
        self.bar_legend.setToolTip("Bar colour by SQNR, the canvas's colour map: red at or below 5 dB, yellow at "
                                   f"25 dB, green at or above 45 dB, linear between; bit-exact units (+inf) are drawn "
                                   f"at {INF_SQNR_DB:.0f} dB")
        self.bar_legend.setWordWrap(True)  # its one line was the dock's minimum width (885 px)
        split.addWidget(bars_column)
        split.addWidget(self.hists)
        self.hists.hide()  # until a node is chosen: the bars get the room, the caption says what to do
        lay.addWidget(split, 1)
        # the colour legend under the bars and the histograms (the whole width: under the bars alone it wrapped to
        # four lines beside a histogram, and the bars kept room for 2-4 rows), the buttons acting on the figures
        # beside it: on a row of their own above the bars they left the histogram 70 px at 1400 x 860
        foot = QHBoxLayout()
        foot.addWidget(self.bar_legend, 1)
        foot.addWidget(self.color_button)
        foot.addWidget(self.node_data_button)
        lay.addLayout(foot)
        self.hist_title = Caption(NO_HISTOGRAM)  # a long tensor name must not widen the dock (and the window)
        self.hists.captionChanged.connect(self.hist_title.setText)
        lay.addWidget(self.hist_title)
        lay.addStretch(0)  # holds the room of the hidden plots: the summary stays on top
        self.wrapped_height = WrappedHeight(self)  # the dock makes room for the wrapped lines, not the histogram
        self._show_parts()  # empty: the summary line alone (no empty axes)
        self._bars: pg.BarGraphItem | None = None
        #: a tick per bar at the figure not ranked by (both figures visible per bar)
        self._ticks = pg.ScatterPlotItem(symbol="|", size=TICK_PX, pen=pg.mkPen("#000000", width=2), brush=None)
        self._ticks.setZValue(2)
        self.bars_plot.addItem(self._ticks)
        self.rank_box.currentIndexChanged.connect(self._on_rank)
        self.bars_plot.scene().sigMouseClicked.connect(self._on_click)
        self.bars_plot.scene().sigMouseMoved.connect(self._on_hover)
        self.color_button.clicked.connect(self.colorBySqnr)
        self.node_data_button.clicked.connect(self.exportNodeData)
        self.compare_button.clicked.connect(self.compareRequested)
        self.show_quantized_button.clicked.connect(self.showQuantized)

    def set_quantized(self, name: str) -> None:
        """``name`` (the open file) is already quantized ("" for a float model): the empty view says
        what it shows instead of asking to calibrate, and offers the comparison with the float model."""
        self.quantized_name = name
        self.compare_button.setVisible(bool(name))
        self._show_parts()
        if not self.rows:
            self.summary.setText(self._empty_text())

    def _show_parts(self) -> None:
        """With rows: the bars, their legend, the histogram's caption and the buttons that act on
        the figures; without: the summary line alone (the dock stays a line high, no empty axes)."""
        has = bool(self.rows)
        for part in (self.split_view, self.bar_legend, self.hist_title, self.rank_label, self.rank_box):
            part.setVisible(has)
        for button in (self.color_button, self.node_data_button):  # a quantized file has no figures to act on
            button.setVisible(has and not self.quantized_name)

    def set_empty_note(self, text: str, *, offer: bool = False) -> None:
        """Without rows, show ``text`` (bold: a calibration ended with nothing to measure, and why) instead of
        :data:`NO_RESULTS`; "" goes back to it. ``offer``: the "Show the quantized model's errors" button too
        (the latency check kept every unit float, and its edit can be undone)."""
        self.empty_note = text
        self.show_quantized_button.setVisible(bool(offer and text))
        if not self.rows:
            self.summary.setText(self._empty_text())
        self._mark_note()

    def set_rows_note(self, text: str) -> None:
        """End the rows' summary with ``text`` ("" for none)."""
        if text != self.rows_note:
            self.rows_note = text
            if self.rows:
                self._write_summary()

    def _mark_note(self) -> None:
        """The summary is bold while it shows :attr:`empty_note`."""
        font = self.summary.font()
        font.setBold(bool(self.empty_note) and not self._given and not self.quantized_name)
        self.summary.setFont(font)

    def set_scope(self, scope: set[str] | frozenset[str] | None, note: str = "") -> None:
        """Show the bars of the units named in ``scope`` only (the nodes of the graph the shown tab draws, e.g. a
        subgraph body), every bar for None. ``note``: the summary while the results have no bar in ``scope`` (what
        this view has no figures for, and why)."""
        scope = None if scope is None else frozenset(scope)
        if (scope, note) == (self.scope, self.scope_note):
            return
        self.scope, self.scope_note = scope, note
        self.set_rows(self._given)

    def _empty_text(self) -> str:
        if self._given and self.scope is not None:  # results, none of them in this view
            return self.scope_note
        if self.quantized_name:
            return (f"{self.quantized_name} is already quantized: per-node errors need the float model it was "
                    "made from. Click Compare with its float model... (or open the float model and use View > "
                    "Compare Float vs Quantized, Ctrl+Shift+D) for the per-edge SQNR.")
        return self.empty_note or NO_RESULTS

    # ------------------------------------------------------------------ bars
    def set_rows(self, rows: list) -> None:
        """Show the UnitError-like ``rows`` (``node``, ``op_type``, ``sqnr_db``), worst first by
        :meth:`shown_rank` (set the local figures first, :meth:`set_local`)."""
        self._given = list(rows)
        scoped = self._given if self.scope is None else [r for r in self._given if r.node in self.scope]
        self.rows = ranked(scoped, self.local, self.shown_rank())
        self.color_button.setText("Colour canvas by own noise" if self.shown_rank() == "local" else
                                  "Colour canvas by SQNR")
        self.rank_box.setEnabled(has_local(self._given, self.local))
        self.rank_box.setToolTip(RANK_TIP if self.rank_box.isEnabled() else
                                 "These results have no local figures (saved before they were measured): the "
                                 "bars rank by accumulated SQNR. Calibrate again (F5) to rank by own noise.")
        self.color_button.setEnabled(bool(self.rows))
        self.node_data_button.setEnabled(bool(self.rows))
        self._show_parts()
        if not self.rows:
            if self._bars is not None:
                self._bars.setVisible(False)
            self._ticks.setVisible(False)
            self.bars_plot.getAxis("left").setTicks([[]])
            self.summary.setText(self._empty_text())
            self._mark_note()
            return
        values = self.bar_values()
        y = np.arange(len(values), dtype=float)
        rank = self.shown_rank()  # the canvas's SQNR colours; grey where the figure is not measured
        brushes = [pg.mkBrush(error_color(v) if not math.isnan(figure(r, self.local, rank)) else NO_VALUE)
                   for r, v in zip(self.rows, values, strict=True)]
        if self._bars is None:
            self._bars = pg.BarGraphItem(x0=0.0, y=y, height=0.8, width=np.asarray(values), brushes=brushes,
                                         pens=self._bar_pens())
            self.bars_plot.addItem(self._bars)
        else:
            self._bars.setOpts(x0=0.0, y=y, height=0.8, width=np.asarray(values), brushes=brushes,
                               pens=self._bar_pens())
            self._bars.setVisible(True)
        ticks = self.tick_values()
        shown = [(t, i) for i, t in enumerate(ticks) if not math.isnan(t)]
        self._ticks.setData([t for t, _i in shown], [float(i) for _t, i in shown],  # in the axes' colour
                            pen=pg.mkPen(colors_for(shown_theme()).plot_foreground, width=3))
        self._ticks.setVisible(True)
        self.bar_legend.setText(bar_legend_html(rank))
        self.bars_plot.setXRange(0.0, max(max(values), max((t for t, _i in shown), default=0.0), 1.0), padding=0.03)
        self._mark_note()
        self._label_bars()
        self._show_rows(follow=True)
        self._write_summary()

    def _bar_pens(self) -> list:
        """A thin outline per bar; the selected one's thick, in the canvas's selection colour."""
        at = self.selected_row()
        thin = pg.mkPen(colors_for(shown_theme()).plot_foreground, width=0.5)
        return [pg.mkPen(SELECTION, width=3) if i == at else thin for i in range(len(self.rows))]

    def selected_row(self) -> int | None:
        """Index of the selected bar (:attr:`selected`), None when no bar is selected."""
        return next((i for i, r in enumerate(self.rows) if r.node == self.selected), None)

    def show_selected(self, node: str | None) -> None:
        """``node`` is the one node selected (on the canvas, or here): its bar is outlined and scrolled into
        view; None (no node, or several) outlines none."""
        if node == self.selected:
            if node is not None:
                self._show_rows(follow=True)
            return
        self.selected = node
        if self.rows and self._bars is not None:
            self._bars.setOpts(pens=self._bar_pens())
            self._show_rows(follow=True)

    def rows_in_view(self) -> range:
        """The indices of the bars in view (:attr:`top_row` on, :meth:`rows_shown` of them)."""
        return range(self.top_row, min(len(self.rows), self.top_row + self.rows_shown())) if self.rows else range(0)

    def scroll_to(self, top: int) -> None:
        """Show the bars from index ``top`` on (clamped so the view stays full)."""
        self.top_row = top
        self._show_rows()

    def _on_scroll(self, value: int) -> None:
        if value != self.top_row:
            self.scroll_to(value)

    def _on_wheel(self, delta: int) -> None:
        if self.rows and delta:
            self.scroll_to(self.top_row - WHEEL_ROWS * (1 if delta > 0 else -1))

    def move_selection(self, step: int) -> None:
        """Select the bar ``step`` rows below the selected one (above when negative; :data:`PAGE`: a page of bars,
        :data:`END`: the last / first), as a click on it does; with none selected, the first bar in view."""
        if not self.rows:
            return
        at = self.selected_row()
        page = self.rows_shown()
        if at is None:
            target = self.top_row
        elif abs(step) >= END:
            target = 0 if step < 0 else len(self.rows) - 1
        elif abs(step) >= PAGE:
            target = at + (page if step > 0 else -page)
        else:
            target = at + step
        target = max(0, min(len(self.rows) - 1, target))
        self.click_row(target)
    def _label_metrics(self) -> QFontMetrics:
        axis = self.bars_plot.getAxis("left")
        return QFontMetrics(axis.style.get("tickFont") or self.bars_plot.font())

    def label_width(self) -> int:
        """Width of the bar labels' axis, pixels: the widest full label and its tick, between
        :data:`LABEL_AXIS_WIDTH` and :data:`LABEL_AXIS_SHARE` of the bars' plot (at most :data:`LABEL_AXIS_MAX`)."""
        metrics = self._label_metrics()
        widest = max((metrics.horizontalAdvance(self.bar_label(i)) for i in range(len(self.rows))), default=0)
        cap = max(LABEL_AXIS_WIDTH, min(LABEL_AXIS_MAX, int(self.bars_plot.width() * LABEL_AXIS_SHARE)))
        return max(LABEL_AXIS_WIDTH, min(cap, widest + LABEL_PAD))

    def _label_bars(self) -> None:
        """The labels' axis as wide as :meth:`label_width`, each label shortened to it apart from the
        others ("…layer.3/attention/…/dense/Add (Add)" beside "…layer.4/...")."""
        axis = self.bars_plot.getAxis("left")
        width = self.label_width()
        axis.setWidth(width)
        self.bars_plot.getPlotItem().layout.activate()  # the axis and the bars take their widths now
        texts = distinct_labels([r.node for r in self.rows], [r.op_type for r in self.rows], self._label_metrics(),
                                width - LABEL_PAD)
        axis.setTicks([[(float(i), text) for i, text in enumerate(texts)]])
        self._labelled_at = width

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        """The bars' plot resized (the dock, the splitter, the histogram shown): its labels follow. A key of
        :data:`BAR_KEYS` on the bars moves the selected bar (:meth:`move_selection`)."""
        if watched is self.bars_plot and event.type() == QEvent.Type.Resize and self.rows:
            self._relabel.start()
        if (watched is self.bars_plot and event.type() == QEvent.Type.KeyPress and self.rows
                and event.key() in BAR_KEYS and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier):
            self.move_selection(BAR_KEYS[event.key()])
            return True
        return super().eventFilter(watched, event)

    @guarded
    def _label_again(self) -> None:
        if self.rows and self.label_width() != self._labelled_at:
            self._label_bars()

    def bar_label(self, index: int) -> str:
        """The full label of bar ``index``: node name and op type (the axis may show it shortened)."""
        row = self.rows[index]
        return f"{row.node} ({row.op_type})"

    def rows_shown(self) -> int:
        """How many bars fit the plot's height with labels that do not overlap (1 to MAX_ROWS_SHOWN)."""
        line = QFontMetrics(self.bars_plot.font()).height() + 2
        height = self.bars_plot.getPlotItem().vb.height()
        return max(1, min(MAX_ROWS_SHOWN, len(self.rows), int(height // line)))

    def _show_rows(self, follow: bool = False) -> None:
        """The bars from :attr:`top_row` on, as many as fit (:meth:`rows_shown`), the scroll bar beside them when
        some are out of view; ``follow``: scrolled first so the selected bar is in view (after a resize, a
        selection or new rows; not after a scroll, which may leave it)."""
        if not self.rows:
            self.bars_scroll.hide()
            return
        shown, n = self.rows_shown(), len(self.rows)
        top = max(0, min(self.top_row, n - shown))
        at = self.selected_row() if follow else None
        if at is not None and not top <= at < top + shown:
            top = at if at < top else at - shown + 1
        self.top_row = top
        self.bars_plot.setYRange(top - 0.5, top + shown - 0.5, padding=0.0)
        # a tick no taller than its row less 2 px (its 3 px pen adds 3): at 16 px in a 17 px row, the tick of the
        # first bar below the view showed over the axis under the last bar
        pitch = self.bars_plot.getPlotItem().vb.height() / shown
        self._ticks.setSize(max(4.0, min(TICK_PX, pitch - 5.0)))
        self.bars_scroll.blockSignals(True)
        self.bars_scroll.setRange(0, n - shown)
        self.bars_scroll.setPageStep(shown)
        self.bars_scroll.setSingleStep(1)
        self.bars_scroll.setValue(top)
        self.bars_scroll.blockSignals(False)
        self.bars_scroll.setVisible(n > shown)
        self._space_ticks()

    def _space_ticks(self) -> None:
        """SQNR ticks far enough apart for their labels not to run together ("0 2040" in a narrow
        plot), and the axis title shortened to "dB" where "SQNR (dB)" would not fit under the bars, centred again when
        it changes (it ran past the plot's right edge, placed for the shorter text)."""
        axis = self.bars_plot.getAxis("bottom")
        metrics = QFontMetrics(axis.style.get("tickFont") or self.bars_plot.font())
        lo, hi = self.bars_plot.getPlotItem().vb.viewRange()[0]
        width = self.bars_plot.getPlotItem().vb.width()
        per_db = width / max(hi - lo, 1e-9)
        need = metrics.horizontalAdvance(f"{hi:.0f}") + TICK_GAP
        step = next((s for s in TICK_STEPS if s * per_db >= need), TICK_STEPS[-1])
        axis.setTickSpacing(levels=[(step, 0.0)])
        title = AXIS_TITLES[self.shown_rank()]
        fits = QFontMetrics(self.bars_plot.font()).horizontalAdvance(f"{title} (dB)") + 8 <= width
        shown = axis.labelText
        self.bars_plot.setLabel("bottom", title if fits else "", units="dB")
        if axis.labelText != shown:  # pyqtgraph places its title on resizes only: centred for the old text
            axis.resizeEvent()

    def set_stale(self, stale: bool) -> None:
        """Mark the rows as measured with another recipe than the current one: the summary says so
        first and the bars fade, until figures of the current recipe arrive (:meth:`set_rows`)."""
        self.stale = bool(stale) and bool(self.rows)
        if self._bars is not None:
            self._bars.setOpacity(0.35 if self.stale else 1.0)
        self._ticks.setOpacity(0.35 if self.stale else 1.0)
        if self.rows:
            self._write_summary()

    def set_split(self, split: dict | None) -> None:
        """Weights vs activations of the rows about to be shown (NoiseSplit JSON, or None): the
        summary adds which of them holds most of the model-output noise."""
        self.split = split
        if self.rows:
            self._write_summary()

    def set_outputs(self, outputs: list[dict] | None) -> None:
        """Each model output's end-to-end SQNR for the rows about to be shown (``{"name", "sqnr_db" (dB; "inf" or
        None as a saved project holds them), "samples", "worst_row_sqnr_db", "worst_row", "analysis_samples"}``,
        :func:`workbench.core.jobs._output_sqnr`; a project saved before has the first three, on the analysis
        rows): the summary starts with it."""
        self.outputs = list(outputs or [])
        if self.rows:
            self._write_summary()

    def outputs_text(self) -> str:
        """"Output SQNR: softmax_11.tmp_0 23.8 dB (worst row 9.1 dB, row 41) over 64 calibration rows. " ("" without
        figures); past :data:`OUTPUTS_SHOWN` outputs the worst ones, and how many more (all of them in the tooltip).
        A project saved before the figures covered every calibration row says "on 32 analysis rows"."""
        if not self.outputs:
            return ""
        shown = sorted(self.outputs, key=lambda o: _db_order(o.get("sqnr_db")))[:OUTPUTS_SHOWN] \
            if len(self.outputs) > OUTPUTS_SHOWN else self.outputs
        parts = ", ".join(f"{o['name']} {_output_db(o.get('sqnr_db'))}{_worst_row(o)}" for o in shown)
        more = f" (worst {len(shown)} of {len(self.outputs)} outputs)" if len(shown) < len(self.outputs) else ""
        rows = self.outputs[0].get("samples")
        if not isinstance(rows, int):
            on = ""
        elif "analysis_samples" in self.outputs[0]:
            on = f" over {count(rows, 'calibration row')}"
        else:  # saved before: the analysis rows
            on = f" on {count(rows, 'analysis row')}"
        return f"Output SQNR: {parts}{more}{on}. "

    def per_node_rows(self) -> str:
        """" (per-node figures on the first 32 rows)" when the outputs' figures say how many rows the per-node
        analysis measured and that is fewer than theirs, " (per-node figures on the same 64 rows)" when it is as
        many; "" without."""
        first = self.outputs[0] if self.outputs else {}
        analysed, rows = first.get("analysis_samples"), first.get("samples")
        if not isinstance(analysed, int) or not isinstance(rows, int):
            return ""
        if analysed < rows:
            return f" (per-node figures on the first {count(analysed, 'row')})"
        return f" (per-node figures on the same {count(analysed, 'row')})"

    def split_text(self) -> str:
        """" Output noise: 37 % from the weights, 63 % from the activations." ("" without a split)."""
        sp = self.split
        if not sp or sp.get("weights_share") is None:
            return ""
        share = float(sp["weights_share"])
        rough = " (the two do not add up on this model: rough shares)" if sp.get("additive") is False else ""
        return f" Output noise: {share:.0%} from the weights, {1 - share:.0%} from the activations{rough}."

    def _write_summary(self) -> None:
        rank = self.shown_rank()
        finite = [v for v in (figure(r, self.local, rank) for r in self.rows) if math.isfinite(v)]
        median = f"{statistics.median(finite):.1f}" if finite else "nan"
        self.summary.setText(f"{STALE if self.stale else ''}{self.outputs_text()}"
                             f"{count(len(self.rows), 'node unit')}{self.per_node_rows()}; "
                             f"{worst_text(self.rows[0], self.local, rank)}; median {median} dB"
                             f"{' local' if rank == 'local' else ''}.{self.split_text()} Click a bar to select the node."
                             f"{self.rows_note}")
        sp = self.split
        self.summary.setToolTip(self._outputs_tip() + (
            "Output noise: the model-output SQNR with only the weights quantized "
            f"({_db_text(sp.get('weights_db'))}) and with only the activations quantized "
            f"({_db_text(sp.get('activations_db'))}), against {_db_text(sp.get('all_db'))} with both, on "
            f"{sp.get('samples')} samples (graph as written). Independent noise powers add"
            + (f" (here they do not: added they give {_db_text(sp.get('parts_db'))}, so the shares are rough)"
               if sp.get("additive") is False else "")
            + ": mostly weights, try per-channel or wider weights; mostly activations, try other observers or int16 "
            "activations."
            if sp and sp.get("weights_share") is not None else ""))

    def _outputs_tip(self) -> str:
        if not self.outputs:
            return ""
        lines = "\n".join(f"  {o['name']}: {_output_db(o.get('sqnr_db'))}{_worst_row(o)}" for o in self.outputs)
        first = self.outputs[0]
        if "analysis_samples" not in first:  # saved before the figures covered every calibration row
            return ("Output SQNR: each model output of the quantized model against the float model on the analysis "
                    f"rows, measured as Evaluate and workbench-cli evaluate measure it:\n{lines}\n\n")
        return ("Output SQNR: each model output of the quantized model against the float model over every "
                "calibration row, measured as Evaluate and workbench-cli evaluate measure it; the worst row is the "
                "single row (sample) with the lowest SQNR, its index in the data. A few rows can hold most of the "
                f"error: the per-node bars are measured on the first {count(first.get('analysis_samples') or 0, 'row')} "
                f"(Analysis samples), which may leave them out.\n{lines}\n\n")

    def bar_values(self) -> list[float]:
        """Bar lengths in dB, worst first: the figure ranked by (:meth:`shown_rank`; +inf drawn as
        INF_SQNR_DB, NaN as 0)."""
        rank = self.shown_rank()
        return [drawn(figure(r, self.local, rank), INF_SQNR_DB) for r in self.rows]

    def tick_values(self) -> list[float]:
        """Each bar's tick: the figure not ranked by, in dB (+inf at INF_SQNR_DB; NaN: no tick)."""
        other = "accumulated" if self.shown_rank() == "local" else "local"
        out = []
        for r in self.rows:
            v = figure(r, self.local, other)
            out.append(math.nan if math.isnan(v) else drawn(v, INF_SQNR_DB))
        return out

    def shown_rank(self) -> str:
        """What the bars rank by as drawn: :attr:`rank`, or "accumulated" when the rows have no local figures."""
        return self.rank if self.rank == "accumulated" or has_local(self._given, self.local) else "accumulated"

    def set_rank(self, rank: str) -> None:
        """Rank the bars by ``rank`` ("local" or "accumulated"; another value is ignored): the switch follows,
        :attr:`rankChanged` is emitted when it changes."""
        index = self.rank_box.findData(rank)
        if index >= 0:
            self.rank_box.setCurrentIndex(index)

    def _on_rank(self, _index: int) -> None:
        self.rank = self.rank_box.currentData()
        if self._given:
            self.set_rows(self._given)
        self.rankChanged.emit(self.rank)

    @guarded
    def _on_click(self, event) -> None:
        if not self.rows or self._bars is None:
            return
        pos = self.bars_plot.getPlotItem().vb.mapSceneToView(event.scenePos())
        self.click_row(int(round(pos.y())))

    def set_weights(self, weights: dict[str, dict]) -> None:
        """Unit -> its weight's quantization error (WeightError JSON), for the bars' tooltips."""
        self.weights = dict(weights)

    def set_local(self, local: dict) -> None:
        """Unit -> the noise it adds itself (local SQNR in dB, "inf", or None when not measured), for the
        bars' tooltips."""
        self.local = dict(local)
        if self._given:
            self.set_rows(self._given)

    def bar_tooltip(self, index: int) -> str:
        """Bar ``index``'s tooltip: the label, its SQNR, the noise the unit adds itself (local SQNR) and,
        for a unit with a weight, the weight's own SQNR and its worst output channel."""
        row = self.rows[index]
        text = f"{self.bar_label(index)}: output SQNR {_db_text(row.sqnr_db if row.sqnr_db != math.inf else None)}"
        local = self.local.get(row.node, "absent")
        if local != "absent":
            text += f"; its own noise {_local_text(local)}"
        w = self.weights.get(row.node)
        if w:
            text += f"; weight {_db_text(w.get('sqnr_db'))}"
            if w.get("worst_channel") is not None and w.get("channels", 1) > 1:
                text += f" (worst of {w['channels']} output channels: #{w['worst_channel']}, " \
                        f"{_db_text(w.get('worst_channel_db'))})"
        return text

    @guarded
    def _on_hover(self, scene_pos) -> None:
        row = self._row_at(scene_pos)
        self.bars_plot.setToolTip(self.bar_tooltip(row) if row is not None else "")

    def _row_at(self, scene_pos) -> int | None:
        if not self.rows or self._bars is None:
            return None
        index = int(round(self.bars_plot.getPlotItem().vb.mapSceneToView(scene_pos).y()))
        return index if 0 <= index < len(self.rows) else None

    def click_row(self, index: int) -> None:
        """Act as if the bar at ``index`` (0 = worst) was clicked: it is selected (outlined, in view) and
        :attr:`nodeClicked` is emitted (the window selects the node)."""
        if 0 <= index < len(self.rows):
            self.show_selected(self.rows[index].node)
            self.nodeClicked.emit(self.rows[index].node)

    # ------------------------------------------------------------------ histogram
    def clear_histogram(self, message: str = "", *, computing: bool = True) -> None:
        """Empty the histograms, their axes back to [0, 1] (no old ranges while the next ones compute).
        Without a ``message`` (no node chosen), or with one and ``computing=False`` (no histogram will follow:
        several nodes selected, no data, a failed job), the plots hide and the bars take their room, so no empty
        axes show; the caption says why and what to do."""
        self.hist = None
        if not message or not computing:
            self._show_histogram(False)
        self.hists.clear(message or NO_HISTOGRAM)
        self.hist_title.setText(message or NO_HISTOGRAM)

    def _show_histogram(self, shown: bool) -> None:
        """Show or hide the histograms; shown again, the bars keep :data:`BARS_BESIDE_HISTOGRAM`
        pixels (or half the width)."""
        if shown != self.hists.isHidden():
            return
        self.hists.setVisible(shown)
        if shown:
            width = max(self.split_view.width(), 2)
            bars = min(max(BARS_BESIDE_HISTOGRAM, width // 2), width - width // 3)
            self.split_view.setSizes([bars, width - bars])

    def set_histogram(self, hist: dict, qp: QParams | None, note: str = "") -> None:
        """Draw ``hist`` (``counts``, ``edges``, ``tensor``, optional ``unit``: the node unit whose output
        ``tensor`` is; kept as :attr:`hist`) with ``qp``'s clip range and grid; ``note`` ends the title (why no
        clip range is drawn). The title names the unit and the tensor drawn ("p2o.Conv.32 → output p2o.Add.227").
        The unit's inputs and weight: :meth:`set_unit_inputs`, :meth:`set_unit_weight`."""
        self.hist = hist
        self._show_histogram(True)
        self.hists.set_output(hist, qp, note)
        self.hist_title.setText(self.hists.caption())

    def set_unit_inputs(self, unit: str, inputs: list[tuple[dict, QParams | None, str]]) -> None:
        """The Input tab: each activation input of ``unit`` as ``(hist, qp, note)`` (:meth:`UnitHistograms.set_inputs`)."""
        self.hists.set_inputs(unit, inputs)

    def set_unit_weight(self, unit: str, hist: dict | None, qp: QParams | None, note: str = "") -> None:
        """The Weight tab: ``unit``'s weight histogram with the grid it is written with (:meth:`UnitHistograms.set_weight`)."""
        self.hists.set_weight(unit, hist, qp, note)


def _local_text(v) -> str:
    """A local SQNR as the calibrate job writes it: dB, "inf" (no noise) or None."""
    if v is None:
        return "not measured (an input's noise is unknown)"
    v = float(v)
    if v == math.inf:
        return "none (exact on float inputs)"
    return f"{v:.1f} dB (local SQNR)"


def _db_value(v) -> float:
    """An output SQNR as the calibrate job or a saved project holds it (float, "inf", None) -> dB (NaN for None)."""
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _db_order(v) -> float:
    """Worst first: the lowest SQNR, an unmeasured (NaN) one last."""
    db = _db_value(v)
    return math.inf if math.isnan(db) else db


def _output_db(v) -> str:
    """An output's SQNR for the summary: "13.8 dB", "no noise" (+inf: equal outputs), "not measured" (NaN)."""
    db = _db_value(v)
    return "not measured" if math.isnan(db) else "no noise" if db == math.inf else f"{db:.1f} dB"


def _worst_row(o: dict) -> str:
    """" (worst row 9.1 dB, row 41)" of an output's figures; "" without a worst row, or when every row is equal
    to float (+inf)."""
    db, row = _db_value(o.get("worst_row_sqnr_db")), o.get("worst_row")
    if math.isnan(db) or db == math.inf or not isinstance(row, int):
        return ""
    return f" (worst row {db:.1f} dB, row {row})"


def _db_text(v) -> str:
    """A NoiseSplit JSON figure in dB (None is +inf: no noise at all)."""
    return "no noise" if v is None else f"{float(v):.1f} dB"


def bar_legend_html(rank: str = DEFAULT_RANK) -> str:
    """The bars' colour legend: a swatch at each stop of the canvas's SQNR colour map
    (:data:`workbench.qt.canvas.colors.ERROR_STOPS`), the same colours the nodes take, and what the tick
    on each bar shows (the figure ``rank`` does not rank by); one line beside the Errors dock's buttons at 1400 px
    (the unit only after the last stop)."""
    parts = []
    for i, (db, color) in enumerate(ERROR_STOPS):
        mark = "<= " if i == 0 else (">= " if i == len(ERROR_STOPS) - 1 else "")
        unit = " dB" if i == len(ERROR_STOPS) - 1 else ""
        parts.append(f"<span style='color: {color.name()}'>&#9632;</span> {html.escape(mark)}{db:.0f}{unit}")
    return "Bar colour: " + " &nbsp; ".join(parts) + f"; {html.escape(marker_note(rank))}"
