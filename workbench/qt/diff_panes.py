"""Float vs quantized side by side: two aligned canvases (float left, quantized file right).

Both panes are :class:`~workbench.qt.canvas.GraphCanvas` views placed by
:func:`workbench.core.api.pane_layout`: a matched node sits at the same scene position as its
partner, a folded float op has a row of its own (a gap on the right, like a removed line in a
text diff). The views stay in step: zooming or panning one moves the other to the same scene
point and scale; selecting nodes in one selects and centres their partners in the other (a
folded BatchNormalization selects the Conv it went into; that Conv selects it back with its
float Conv).

Marks (the shared key above the panes, :data:`workbench.qt.diff_marks.MARK_COLORS`): folded or
fused float ops greyed and struck through with a note naming the quantized node they went into;
compute ops left float framed orange with a "float" badge; added nodes framed green; Q/DQ pairs
are the canvas's dtype badges on the edges they sit on (weights: a ``w:`` tag on the consumer;
a pair before a graph output: an ``out:`` tag on its producer). With data the right pane is
coloured by the SQNR measured on every edge and node (the key gives the thresholds), else by the
dtype each edge carries.

In the app (``shared_key=True``, the diff tab) one key serves both panes (:attr:`DiffPanes.key`),
above them and collapsible (View > Legend, Ctrl+L, or the tab's Legend button): the panes' own legend
overlays stay hidden, so nothing covers the graph or the node a row centres. The panes open as the main
canvas does (:meth:`DiffPanes.open_readable`): both graphs whole when they fit at the readable zoom, else
at that zoom on the graph's start; :meth:`DiffPanes.fit` shows both graphs whole at one zoom. Without it (``render --compare``'s picture) each pane keeps its
overlay and the key holds the marks' line only.
"""

from __future__ import annotations

import html

import onnx
from PySide6.QtCore import QCoreApplication, QEvent, QPointF, QRectF, QSizeF, Qt, Signal
from PySide6.QtGui import QTransform
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSplitter,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from workbench.core.api import ModelDiff, PaneLayout
from workbench.qt.canvas.legend import LegendOverlay, badge_dtypes, legend_entries
from workbench.qt.canvas.main_body import densest_start
from workbench.qt.canvas.readable import readable_scale
from workbench.qt.canvas.swatch import swatch_html
from workbench.qt.canvas.view import GraphCanvas
from workbench.qt.diff_marks import MARK_COLORS, DiffMarksItem
from workbench.qt.error_rank import canvas_values

#: colour-map value shown for a bit-exact tensor (+inf dB)
INF_DB = 100.0
#: margin around the graphs a fit of both panes leaves, scene units (the canvas's own fit's)
FIT_MARGIN = 30.0
#: how far below the readable zoom a selected pair's view may go to show the nodes its edges join
#: (labels at 60 % of their readable height: ppocrv4_rec's hard-swish Clip and its neighbours at 0.52-0.59)
PAIR_ZOOM_FLOOR = 0.6


class PaneLegend(LegendOverlay):
    """A pane's legend overlay, never shown: the panes share :attr:`DiffPanes.key` above them.

    ``setVisible`` (View > Legend, a tab switch) shows or hides that key instead, through
    :attr:`on_toggle`; :meth:`text` still reads the pane's colour key.
    """

    def __init__(self, canvas):
        self.on_toggle = None  # set before LegendOverlay's own calls
        super().__init__(canvas)
        QFrame.setVisible(self, False)

    def setVisible(self, visible: bool) -> None:  # noqa: N802 - Qt override
        if visible and self.on_toggle is None:
            return  # before its pane is placed; hidden all along
        if self.on_toggle is not None:
            self.on_toggle(visible)
        QFrame.setVisible(self, False)


class PaneCanvas(GraphCanvas):
    """A canvas that says when its view moved (scroll, zoom or fit), for the partner pane to follow.

    Keys: the canvas's (+ / - zoom, Esc clears the selection, Ctrl+A selects all) and Home or 0 to
    fit the graph (both panes follow). Its legend overlay stays hidden (:class:`PaneLegend`); a fit
    is :attr:`pair_fit` (both panes at once) when set, the view it opens with :attr:`pair_open`.
    """

    viewChanged = Signal()

    def __init__(self, *args, shared_key: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.pair_fit = None
        self.pair_open = None
        self.partner: GraphCanvas | None = None  # the other pane: both scroll over both graphs
        if shared_key:
            own = self.legend_overlay
            self.colorsChanged.disconnect(own.refresh)
            self.viewport().removeEventFilter(own)
            own.hide()
            own.deleteLater()
            self.legend_overlay = PaneLegend(self)

    #: True inside :meth:`resizeEvent`: the scrolls it makes are not the user's (no viewChanged)
    _resizing = False

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Home, Qt.Key.Key_0):
            self.fit()
        else:
            super().keyPressEvent(event)

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        super().scrollContentsBy(dx, dy)
        if not self._resizing:
            self.viewChanged.emit()

    def resizeEvent(self, event) -> None:
        """A scroll that a resize makes (Qt keeps the resize anchor; the canvas fits or recentres itself) does not
        move the partner: each pane follows its own size. Followed, the two panes resized each other forever where
        one's new range showed or hid a scroll bar of the other (the diff tab of digits_cnn at the default window
        size on an AMD EPYC: the event loop never idled)."""
        self._resizing = True
        try:
            super().resizeEvent(event)
        finally:
            self._resizing = False

    def wheelEvent(self, event) -> None:
        super().wheelEvent(event)
        self.viewChanged.emit()

    def fit(self) -> None:
        if self.pair_fit is not None:
            self.pair_fit()
            return
        super().fit()
        self.viewChanged.emit()

    def fit_readable(self) -> None:
        """The view the pane opens with, and takes again as it grows: :attr:`pair_open` (both panes at
        the readable zoom, :meth:`DiffPanes.open_readable`) when set, else the whole graph."""
        if self.pair_open is not None:
            self.pair_open()
            return
        self.fit()

    def scroll_content(self, view: QRectF, scale: float) -> QRectF:
        """The main canvas's scroll room (:meth:`GraphCanvas.scroll_content`: the graph, its 30-unit margin and the
        overlays' room) around both panes' graphs: the panes share scene positions, so one range serves both and
        the partner can always show the same scene point."""
        room = super().scroll_content(view, scale)
        if self.partner is not None and self.partner._state is not None:
            room = room.united(GraphCanvas.scroll_content(self.partner, view, scale))
        return room

    def show_centre(self, centre: QPointF) -> None:
        """Scene point ``centre`` at the viewport's centre, the scroll range set by the main canvas's rule
        (:meth:`GraphCanvas._show_at`: :meth:`scroll_content` and what the view shows, both ways)."""
        self._show_at(centre, QRectF(self.viewport().rect()).center())

    def zoom_in(self) -> None:
        super().zoom_in()
        self.viewChanged.emit()

    def zoom_out(self) -> None:
        super().zoom_out()
        self.viewChanged.emit()


#: Between the key's entries: the only places its lines wrap (a QLabel with word wrap broke "w:" from "weight DQ").
ENTRY_GAP = "&nbsp;&nbsp; "  # the no-break spaces stay with the entry before: no line of blanks
WORD_JOINER = "\u2060"


#: the share of the panes' height (key, titles and canvases) the key above them takes at most; a longer key scrolls
KEY_MAX_SHARE = 0.18


def text_html(text: str) -> str:
    """Plain ``text`` as rich text (escaped) with a word joiner after each "/": Qt breaks a line after one ("Q/"
    then "DQ" on the next line)."""
    return html.escape(text).replace("/", "/" + WORD_JOINER)


def unbroken(rich: str) -> str:
    """``rich`` (rich text, its text through :func:`text_html`) as one piece a wrapped line never breaks: its
    spaces non-breaking (``<nobr>``)."""
    return f"<nobr>{rich}</nobr>"


def legend_html(badges=()) -> str:
    """The marks' line of the key (rich text); ``badges``: the edge badge texts of the quantized pane, whose
    dtypes the pills' entry names ("edge pills (i8)"; "edge pills" alone before the pane is laid out). Each
    entry is :func:`unbroken`: a narrow key wraps between entries only."""
    def sw(kind: str, label: str) -> str:
        c = MARK_COLORS[kind].name()
        return unbroken(f'<span style="color:{c}; font-weight:bold;">&#9632;</span>&nbsp;{text_html(label)}')
    dtypes = badge_dtypes(badges)
    pills = f" ({', '.join(dtypes)})" if dtypes else ""
    tags = [f"edge pills{pills}: Q/DQ pair inserted", "w: weight DQ", "b: bias DQ", "out: pair before a graph output"]
    return ENTRY_GAP.join([
        sw("folded", "struck grey: float op folded / fused (note: the node it went into)"),
        sw("removed", "struck red: removed"),
        sw("float", "orange frame: left float"),
        sw("added", "green frame: added by the quantizer"),
        "; ".join(unbroken(text_html(t)) for t in tags),
    ])


def pane_key_html(side: str, canvas: GraphCanvas) -> str:
    """One line of the key (rich text): ``side`` ("Left", "Right"), the colour mode of ``canvas`` and
    its swatches inline, each :func:`unbroken`, its notes after them."""
    title, rows, notes = legend_entries(canvas, all_ops=True)  # every colour of the pane named
    # outlined boxes: a square glyph in Constant's #eeeeee or "no value"'s #d9d9d9 vanished on the window colour
    swatches = " &nbsp;".join(unbroken(swatch_html(c, label)) for label, c in rows)
    tail = f' &nbsp; <span style="color:#666">{html.escape("; ".join(notes))}</span>' if notes else ""
    return f"{unbroken(f'<b>{side}</b> colour: {text_html(title)}:')} {swatches}{tail}"


class DiffPanes(QWidget):
    """The two aligned panes of ``diff`` (float ``float_proto`` left, ``quant_proto`` right).

    Call :meth:`show_layout` with the :class:`~workbench.core.api.PaneLayout` once computed (it
    runs off the GUI thread); :attr:`ready` is emitted when both panes are drawn. ``shared_key``: one
    key above both panes instead of a legend overlay in each, and fits of both panes at once (the app).
    """

    ready = Signal()

    def __init__(self, diff: ModelDiff, float_proto: onnx.ModelProto, quant_proto: onnx.ModelProto,
                 float_title: str, quant_title: str, parent: QWidget | None = None, *, shared_key: bool = False):
        super().__init__(parent)
        self.shared_key = shared_key
        self.diff, self.float_proto, self.quant_proto = diff, float_proto, quant_proto
        self.layout_: PaneLayout | None = None
        self._syncing = False
        self._pending = 2
        self.f2q: dict[str, list[str]] = {}
        self.q2f: dict[str, list[str]] = {}
        for m in diff.matches:
            self.f2q[m.float_node] = [m.quant_node]
            self.q2f.setdefault(m.quant_node, []).append(m.float_node)
        for fnode, qnode in diff.folded_into.items():
            self.f2q[fnode] = [qnode]
            self.q2f.setdefault(qnode, []).append(fnode)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.key = QLabel()
        self.key.setObjectName("diffKey")
        self.key.setTextFormat(Qt.TextFormat.RichText)
        self.key.setWordWrap(True)
        self.key.setToolTip("The key of both panes (View > Legend, Ctrl+L, shows or hides it).")
        # at most KEY_MAX_SHARE of the panes' height, the rest of the key scrolled to: at 1024 x 700 it wrapped to
        # six lines above panes 300 px high
        self.key_area = QScrollArea()
        self.key_area.setWidget(self.key)
        self.key_area.setWidgetResizable(True)
        self.key_area.setFrameShape(QFrame.Shape.NoFrame)
        self.key_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        lay.addWidget(self.key_area)
        self.legend = self.key  # the marks' line is its first line
        self.status = QLabel("Laying out both panes together (closing the tab cancels)...")
        lay.addWidget(self.status)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        lay.addWidget(split, 1)
        self.float_canvas = PaneCanvas(groups=False, shared_key=shared_key)
        self.quant_canvas = PaneCanvas(groups=False, shared_key=shared_key)
        for canvas, title in ((self.float_canvas, float_title), (self.quant_canvas, quant_title)):
            box = QWidget()
            col = QVBoxLayout(box)
            col.setContentsMargins(0, 0, 0, 0)
            head = QHBoxLayout()
            head.addWidget(QLabel(f"<b>{html.escape(title)}</b>"))
            head.addStretch(1)
            col.addLayout(head)
            col.addWidget(canvas, 1)
            split.addWidget(box)
            canvas.layoutReady.connect(self._on_pane_ready)
            if shared_key:
                canvas.colorsChanged.connect(self._refresh_key)
                canvas.legend_overlay.on_toggle = self.set_key_visible
                canvas.pair_fit = self.fit
                canvas.pair_open = self.open_readable
        split.setSizes([1000, 1000])  # equal widths: the same scene point sits at the same place in both
        self.float_canvas.partner, self.quant_canvas.partner = self.quant_canvas, self.float_canvas
        self.split = split
        self._refresh_key()
        self.float_canvas.selectionChangedNames.connect(
            lambda names: self._follow(names, self.f2q, self.quant_canvas))
        self.quant_canvas.selectionChangedNames.connect(
            lambda names: self._follow(names, self.q2f, self.float_canvas))
        self.float_canvas.viewChanged.connect(lambda: self._sync_view(self.float_canvas, self.quant_canvas))
        self.quant_canvas.viewChanged.connect(lambda: self._sync_view(self.quant_canvas, self.float_canvas))

    # ----------------------------------------------------------------- the key
    def _refresh_key(self) -> None:
        state = self.quant_canvas._state
        lines = [legend_html(state.data.structure.edge_badges.values() if state is not None else ())]
        if self.shared_key:
            lines += [pane_key_html("Left", self.float_canvas), pane_key_html("Right", self.quant_canvas)]
        self.key.setText("<br>".join(lines))
        self._fit_key()

    def _fit_key(self) -> None:
        """The key's area as high as its wrapped lines need, at most :data:`KEY_MAX_SHARE` of the panes' height
        (never under two lines); a longer key scrolls."""
        line = self.key.fontMetrics().lineSpacing()
        width = max(1, self.key_area.width())
        needed = self.key.heightForWidth(width)
        cap = max(2 * line, int(KEY_MAX_SHARE * self.height()))
        if needed > cap:  # the scroll bar takes part of the width: the lines wrap once more
            needed = self.key.heightForWidth(max(1, width - self.key_area.verticalScrollBar().sizeHint().width()))
        self.key_area.setFixedHeight(max(line, min(needed, cap)))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._fit_key()

    def set_key_visible(self, visible: bool) -> None:
        """Show or hide the key above the panes (View > Legend; the tab's Legend button)."""
        self.key_area.setVisible(visible)
        self.key.setVisible(visible)

    def key_visible(self) -> bool:
        return not self.key.isHidden()

    # ----------------------------------------------------------------- fitting both
    def fit(self) -> None:
        """Both graphs whole, at one zoom (never beyond 100 %), centred on the same scene point: the
        box around both graphs fits the smaller viewport (Fit graph, Home, a resize of a fitted pane)."""
        canvases = self._drawn()
        if not canvases:
            return
        bounds = self._bounds(canvases)
        views = {c: QSizeF(c.maximumViewportSize()) for c in canvases}
        scale = self._whole_scale(bounds, canvases)
        if scale <= 0:
            return
        self._syncing = True
        try:
            for c in canvases:
                view = views[c]
                visible = QRectF(bounds.center() - QPointF(view.width(), view.height()) / (2 * scale),
                                 QSizeF(view.width() / scale, view.height() / scale))
                pad = 1.0 / scale  # 1 px less than the viewport: no scroll bars
                shown = visible.adjusted(pad, pad, -pad, -pad)
                c.setAlignment(Qt.AlignmentFlag.AlignCenter)  # as GraphCanvas.fit: a centre-on aligned it top-left
                c.scene().setSceneRect(shown)
                c.setTransform(QTransform.fromScale(scale, scale))
                c.centerOn(bounds.center())
                c._fit_mode = "whole"
                c._fitted_view = c._view_key()
                c._sync_items()
                c.minimap().update()
                if c.horizontalScrollBar().isVisible() or c.verticalScrollBar().isVisible():
                    QCoreApplication.sendPostedEvents(c, QEvent.Type.MetaCall)  # as GraphCanvas.fit
        finally:
            self._syncing = False

    def _drawn(self) -> list[GraphCanvas]:
        """The panes showing a graph (both once :attr:`ready`)."""
        return [c for c in (self.float_canvas, self.quant_canvas) if c._state is not None]

    @staticmethod
    def _bounds(canvases: list[GraphCanvas]) -> QRectF:
        """Scene rectangle around the graphs of ``canvases``, :data:`FIT_MARGIN` around."""
        bounds = QRectF()
        for c in canvases:
            bounds = bounds.united(c._state.data.bounds)
        return bounds.adjusted(-FIT_MARGIN, -FIT_MARGIN, FIT_MARGIN, FIT_MARGIN)

    @staticmethod
    def _whole_scale(bounds: QRectF, canvases: list[GraphCanvas]) -> float:
        """The zoom showing scene ``bounds`` whole in the smaller viewport of ``canvases`` (1.0 at most)."""
        views = [QSizeF(c.maximumViewportSize()) for c in canvases]
        return min([1.0] + [min(v.width() / max(bounds.width(), 1e-9), v.height() / max(bounds.height(), 1e-9))
                            for v in views])

    def open_readable(self) -> None:
        """The view the panes open with (and take again as a pane still showing it grows), as the main
        canvas's ``fit_readable``: both graphs whole (:meth:`fit`) when they fit at the readable zoom
        (``readable.readable_scale`` of either pane, 100 % at most), else both panes at that zoom on the
        same scene point, the graph's first rows at the top and, across, the column holding the most
        nodes of the quantized pane among those rows (``main_body.densest_start``); scroll bars for the rest (a whole
        fit of ppocrv4_rec drew its labels about 1 px high)."""
        canvases = self._drawn()
        if not canvases:
            return
        bounds = self._bounds(canvases)
        scale = max(min(1.0, readable_scale(c._state.data)) for c in canvases)
        if self._whole_scale(bounds, canvases) >= scale:
            self.fit()
            for c in canvases:
                c._fit_mode = "readable"
            return
        # the smaller viewport, less the scroll bars the larger picture needs
        full = QSizeF(min(c.maximumViewportSize().width() for c in canvases),
                      min(c.maximumViewportSize().height() for c in canvases))
        bar = canvases[0].style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, canvases[0])
        wide, tall = bounds.width() * scale > full.width(), bounds.height() * scale > full.height()
        view = QSizeF(full.width() - (bar if tall else 0), full.height() - (bar if wide else 0)) / scale
        x = bounds.center().x()
        y = bounds.center().y() if bounds.height() <= view.height() else bounds.top() + view.height() / 2
        if bounds.width() > view.width():
            data = (self.quant_canvas if self.quant_canvas._state is not None else canvases[0])._state.data
            rows = (y - view.height() / 2, y + view.height() / 2)  # the densest column of the rows shown
            x = densest_start(data, bounds.left(), bounds.right(), view.width(), rows) + view.width() / 2
        centre = QPointF(x, y)
        shown = QRectF(centre - QPointF(view.width(), view.height()) / 2, view)
        self._syncing = True
        try:
            for c in canvases:
                c.setAlignment(Qt.AlignmentFlag.AlignCenter)  # as GraphCanvas.fit_readable
                c.scene().setSceneRect(bounds.united(shown))  # the graphs and the view: the scroll bars counted above
                c.setTransform(QTransform.fromScale(scale, scale))
                c.centerOn(centre)
                c._fit_mode = "readable"
                c._fitted_view = c._view_key()
                c._sync_items()
                c.minimap().update()
        finally:
            self._syncing = False

    def zoom_in(self) -> None:
        self.quant_canvas.zoom_in()  # the float pane follows

    def zoom_out(self) -> None:
        self.quant_canvas.zoom_out()

    # ----------------------------------------------------------------- showing
    def show_layout(self, layout: PaneLayout, quant_info: tuple | None = None) -> None:
        """Draw both panes at ``layout``'s positions; ``quant_info`` is the right canvas's
        :meth:`GraphCanvas.set_quant_info` arguments (tooltips, integer-kernel marks)."""
        self.layout_ = layout
        for fnode, qnode in layout.pairs.items():  # Constant weights at the same place: select them together
            self.f2q[fnode] = [qnode]
            self.q2f.setdefault(qnode, []).append(fnode)
        d = self.diff
        self._pending = 2
        fc, qc = self.float_canvas, self.quant_canvas
        fc.set_quant_info({}, {}, {n: [f"folded or fused into {q} (quantized file)"] for n, q in d.folded_into.items()})
        fc.set_badges({n: "folded" for n, _op in d.folded} | {n: "removed" for n, _op in d.removed})
        if quant_info is not None:
            qc.set_quant_info(*quant_info)
        qc.set_badges(self._quant_badges())
        if d.sqnr:  # bit-exact at INF_DB, all noise (-inf) at -INF_DB (red), as the app's canvas colours them
            qc.set_node_values(errors=canvas_values(d.node_sqnr(), INF_DB), error_label="SQNR vs float (dB)")
            qc.set_edge_values(canvas_values({d.tensors[f]: db for f, db in d.sqnr.items() if f in d.tensors}, INF_DB))
            qc.set_color_mode("error")
        else:
            qc.set_color_mode("dtype")
        fc.set_color_mode("op")
        fc.set_model(self.float_proto, positions=layout.float_positions)
        qc.set_model(self.quant_proto, positions=layout.quant_positions, collapse_qdq=True)

    def _quant_badges(self) -> dict[str, str]:
        """Right-pane badges: "float" on compute ops left float, "+" on added nodes (a Q/DQ pair
        before a graph output is the canvas's own "out:u8" tag on its producer)."""
        badges = {m.quant_node: "float" for m in self.diff.matches if m.status == "float"}
        badges.update({n: "+" for n, _op in self.diff.added})
        return badges

    def _on_pane_ready(self) -> None:
        self._pending -= 1
        if self._pending:
            return
        self._add_marks()
        self._refresh_key()  # the pills' dtypes, now that the quantized pane has its badges
        if self.shared_key:
            self.open_readable()
        else:
            self._sync_view(self.quant_canvas, self.float_canvas)
        self.status.hide()
        self.ready.emit()

    def _add_marks(self) -> None:
        d = self.diff
        fmarks = [(self.float_canvas.node_scene_rect(n), "folded",
                   f"into {d.folded_into[n]}" if n in d.folded_into else "folded") for n, _op in d.folded]
        fmarks += [(self.float_canvas.node_scene_rect(n), "removed", "removed") for n, _op in d.removed]
        qmarks = [(self.quant_canvas.node_scene_rect(m.quant_node), "float", "left float")
                  for m in d.matches if m.status == "float"]
        qmarks += [(self.quant_canvas.node_scene_rect(n), "added", "added") for n, _op in d.added
                   if n in self.layout_.quant_positions]
        self.marks: dict[str, list[tuple[QRectF, str, str]]] = {"float": fmarks, "quant": qmarks}
        for canvas, marks in ((self.float_canvas, fmarks), (self.quant_canvas, qmarks)):
            if marks:
                canvas.scene().addItem(DiffMarksItem(marks))

    # ----------------------------------------------------------------- keeping the panes in step
    def _follow(self, names: list[str], mapping: dict[str, list[str]], other: GraphCanvas) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            partners = sorted({p for n in names for p in mapping.get(n, [])})
            other.select_nodes(partners, center=bool(partners))
        finally:
            self._syncing = False

    def _sync_view(self, source: GraphCanvas, other: GraphCanvas) -> None:
        """Give ``other`` the scale and centre (scene point) of ``source``; a fitted ``source``
        leaves ``other`` fitted too, so a resize of either pane fits both again (as the main canvas)."""
        if self._syncing or source._state is None or other._state is None:
            return
        fitted = source._fitted_view == source._view_key()
        self._syncing = True
        try:
            # the other's range by the main canvas's rule around the source's centre: its own fit's rect neither
            # stops it short of that centre nor leaves it scrolling over empty scene
            other.setTransform(source.transform())
            other.show_centre(source.mapToScene(source.viewport().rect().center()))
            other._fitted_view = other._view_key() if fitted else None
        finally:
            self._syncing = False

    def select_pair(self, float_node: str = "", quant_node: str = "") -> None:
        """Select ``float_node`` left and ``quant_node`` right (either may be "": its partner is
        used), centring both. A quantized name that is a collapsed Q/DQ node selects the drawn
        nodes its badge sits between."""
        qnames = [quant_node] if quant_node else []
        if qnames and self.layout_ is not None and quant_node in self.layout_.qdq_marks:
            qnames = sorted({n for _k, a, b in self.layout_.qdq_marks[quant_node] for n in (a, b) if n})
        fnames = [float_node] if float_node else sorted({p for q in qnames for p in self.q2f.get(q, [])})
        if not qnames:
            qnames = self.f2q.get(float_node, [])
        self._syncing = True
        try:
            self.float_canvas.select_nodes(fnames, center=bool(fnames))
            self.quant_canvas.select_nodes(qnames, center=bool(qnames))
        finally:
            self._syncing = False
        self._centre_pair(fnames, qnames)

    def _centre_pair(self, fnames: list[str], qnames: list[str]) -> None:
        """Both panes at one scale, centred on the same scene point (a folded op and the node it went into
        are shown together): the pair and the nodes its edges join (:meth:`_pair_rect`) at the scale the
        selection left the quantized pane (else the float one), zoomed out as far as they need, never
        under :data:`PAIR_ZOOM_FLOOR` of the readable zoom; where they do not fit even there, on the pair alone. A pair whose
        neighbours sit far away in the layout (ppocrv4_rec's hard-swish Add and Clip, a side column
        about 900 px right of the chain they branch from) was shown alone, its edges leaving the pane."""
        rect, around = self._pair_rect(fnames, qnames)
        if rect.isNull():
            return
        source = self.quant_canvas if qnames else self.float_canvas
        scale = source.transform().m11()
        view = QRectF(self.quant_canvas.viewport().rect())
        room = around.adjusted(-FIT_MARGIN, -FIT_MARGIN, FIT_MARGIN, FIT_MARGIN)
        need = min(view.width() / max(room.width(), 1.0), view.height() / max(room.height(), 1.0))
        floor = PAIR_ZOOM_FLOOR * max(min(1.0, readable_scale(c._state.data))
                                      for c in (self.float_canvas, self.quant_canvas) if c._state is not None)
        centre = rect.center()
        if need >= scale:
            centre = around.center()
        elif need >= floor:
            scale, centre = need, around.center()
        self._syncing = True
        try:
            for canvas in (self.float_canvas, self.quant_canvas):
                canvas.setTransform(QTransform.fromScale(scale, scale))
                canvas.show_centre(centre)  # the scroll range by the main canvas's rule: it only grew
        finally:
            self._syncing = False

    def _pair_rect(self, fnames: list[str], qnames: list[str]) -> tuple[QRectF, QRectF]:
        """Scene rectangles of the pair (``fnames`` left, ``qnames`` right) and of the pair with every node
        an edge joins it to, in either pane."""
        rect, around = QRectF(), QRectF()
        for canvas, names in ((self.float_canvas, fnames), (self.quant_canvas, qnames)):
            if canvas._state is None:
                continue
            structure = canvas._state.data.structure
            chosen = {n for n in names if n in canvas._state.data.index}
            for n in chosen:
                rect = rect.united(canvas.node_scene_rect(n))
            near = {structure.names[b] if structure.names[a] in chosen else structure.names[a]
                    for a, b in structure.edges if structure.names[a] in chosen or structure.names[b] in chosen}
            for n in near | chosen:
                around = around.united(canvas.node_scene_rect(n))
        return rect, around

    def shutdown(self) -> None:
        self.float_canvas.shutdown()
        self.quant_canvas.shutdown()
