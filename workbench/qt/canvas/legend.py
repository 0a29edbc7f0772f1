"""The legend overlay of the graph canvas: what each colour of the current mode means.

A small frame in the canvas's top-left corner that follows the colour mode (``colorsChanged``):

* op: the op types present, most frequent first (colour per op type, stable between runs): the
  first :data:`MAX_OPS`, then a clickable line "N more op types" that lists the rest in its tooltip
  and, clicked, in the legend (clicked again, hides them), so every colour drawn has an entry;
* dtype: node fills per dtype drawn, the coloured edges (dtype carried; grey = float), the collapsed
  Q/DQ badge, the node tags of folded Q/DQ ("in:u8 w:i8 b:i32 out:u8"), the "INT" mark of integer kernels
  and, for a model quantized elsewhere, what its group boxes say and are coloured by;
* error / sensitivity: the colour stops of the map with their thresholds in dB
  (:data:`workbench.qt.canvas.colors.ERROR_STOPS`, linear in between) and "no value"; a figure on a scale
  of its own (the sweep's gain if float) labels each stop with the value it stands for.

The live legend stays compact (:meth:`LegendOverlay._fill`): its op-type and dtype rows run in two columns past
:data:`COLUMN_ROWS`, and where it would still cover more than :data:`MAX_SHARE` of the viewport's area (or run past
its bottom) its notes go into the title's tooltip and then the less frequent op types into the "N more op types"
line (at least :data:`MIN_OPS` stay), so every colour keeps an entry. A picture draws it whole, one column.

View > Legend (Ctrl+L) hides or shows it; a click on its title collapses it to that title line, one
line however long (elided, the whole title in its tooltip), and a second click opens it again. Only the
title catches clicks: a click, drag or wheel turn anywhere else on the legend goes to the canvas under it
(it selects the node there).
"""

from __future__ import annotations

import html
from collections import Counter

from PySide6.QtCore import QCoreApplication, QEvent, QPoint, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from workbench.core.wording import count
from workbench.qt.canvas import colors
from workbench.qt.canvas.items import TEXT_SCALE, badge_factor
from workbench.qt.canvas.overlay_colors import LIGHT_OVERLAY, overlay_colors
from workbench.qt.canvas.swatch import swatch_html

MAX_OPS = 14
MAX_WIDTH = 300  # px; longer notes wrap
MIN_WIDTH = 120  # px; a narrower viewport clips the legend
MARGIN = 8  # px between the legend and the viewport's edges
#: the share of the viewport's area the live legend may cover: at 1024 x 700 nudenet_320n's op legend (14 rows, a
#: note, the "more" line in one column) took 289 x 248 px, half the viewport's height
MAX_SHARE = 0.25
#: past this many op-type or dtype rows the live legend lays them out in two columns
COLUMN_ROWS = 6
#: the fewest op types the live legend keeps when it cuts rows to stay within :data:`MAX_SHARE`
MIN_OPS = 4
COLUMN_GAP = 10  # px between the two columns


def _tags_note(tags) -> str:
    """The note on the node tag pills ("in:u8 w:i8 b:i32"): the kinds present, e.g. "node tag:
    folded Q/DQ of its graph input (in:), weight (w:), bias (b:)"."""
    kinds = {t.split(":")[0] for text in tags for t in text.split()}
    parts = [
        f"{what} ({kind}:)"
        for kind, what in (("in", "graph input"), ("w", "weight"), ("b", "bias"), ("out", "graph output"))
        if kind in kinds
    ]
    return "node tag: folded Q/DQ of its " + ", ".join(parts)


def badge_dtypes(badges) -> list[str]:
    """The dtypes edge badge texts show ("u8", "i8", "u8 i8" for two pairs in a row), each once, in order of
    first appearance: ``["i8"]`` for a file with int8 pairs only."""
    return list(dict.fromkeys(t for text in badges for t in text.split()))


def _badges_note(badges) -> str:
    """The note on the edge badges, naming the dtypes drawn: "edge badge (i8): a folded Q/DQ pair"."""
    return f"edge badge ({', '.join(badge_dtypes(badges))}): a folded Q/DQ pair"


def _scaled_rows(scale: tuple[float, float, bool]) -> list[tuple[str, QColor]]:
    """Legend rows of a figure drawn by its value on the SQNR colour stops, its own scale stretched over
    them (``scale``: lowest, highest, True when a higher value is worse): each stop labelled with the value
    it stands for, the ends with ">=" / "<=" (values past them take the end's colour), each row in the
    colour a node of that value is drawn in."""
    lo, hi, higher_is_worse = scale
    stops = colors.ERROR_STOPS
    first, last = stops[0][0], stops[-1][0]
    rows = []
    for k, (db, _colour) in enumerate(stops):
        t = (db - first) / (last - first)
        value = hi - t * (hi - lo) if higher_is_worse else lo + t * (hi - lo)
        drawn = first + ((hi - value) if higher_is_worse else (value - lo)) / (hi - lo) * (last - first)
        end = "" if 0 < k < len(stops) - 1 else (">= " if (k == 0) == higher_is_worse else "<= ")
        rows.append((f"{end}{value:.1f} dB", colors.error_color(drawn)))
    return rows + [("no value", colors.NO_VALUE)]


def _scaled_note(scale: tuple[float, float, bool]) -> str:
    """What the colours of a figure on its own scale mean (the legend's note when none is given)."""
    lo, hi, higher_is_worse = scale
    red, green = (
        (f"{hi:g} dB or more", f"{lo:g} dB or less")
        if higher_is_worse
        else (f"{lo:g} dB or less", f"{hi:g} dB or more")
    )
    return f"coloured by the value: {red} red, {green} green, linear between"


def _op_rows(canvas) -> list[tuple[str, QColor]]:
    """One row per op type of ``canvas``'s model, most frequent first: ("Conv (38)", its fill)."""
    state = canvas._state
    counts = Counter(state.data.structure.op_types) if state is not None else Counter()
    palette = canvas.op_colors()
    return [(f"{op} ({n})", QColor(palette.get(op, colors.op_color(op)))) for op, n in counts.most_common()]


def more_op_types(canvas, limit: int = MAX_OPS) -> list[tuple[str, QColor]]:
    """The op-type rows past the first ``limit`` (what "N more op types" stands for); [] in the other
    colour modes."""
    return _op_rows(canvas)[limit:] if canvas.color_mode() == "op" else []


def marks_drawn(canvas) -> bool:
    """Whether ``canvas`` at its current scale draws the Q/DQ edge badges, node tags and INT marks
    (``items.badge_factor``: hidden below the zoom that keeps their text readable)."""
    scale = canvas.transform().m11()
    return scale >= TEXT_SCALE and badge_factor(scale) is not None


def pills_drawn(canvas) -> bool:
    """Whether ``canvas`` at its current scale marks integer kernels with the "INT" pill (node boxes with their
    name: from ``TEXT_SCALE`` up, the pill as large as the op type where other marks are already hidden); below
    it a bar under the op type stands for it (``items.kernel_band``, the overview's bars too)."""
    return canvas.transform().m11() >= TEXT_SCALE


def _values_drawn(canvas) -> bool:
    """Whether ``canvas`` colours some node or edge by a figure (the "error" mode's values); False before a model
    is shown too."""
    state = canvas._state
    if state is None:
        return False
    return any(k is not None for k in state.fill_keys) or getattr(canvas, "_error_edges", None) is not None


def _marks_shown(canvas) -> tuple[bool, dict[int, str], dict[int, str], list[str]]:
    """(whether the view's scale draws marks at all (:func:`marks_drawn`), the node tags of shown nodes (index ->
    "w:i8 b:i32"), the integer kernels of shown nodes (index -> op), the texts of the edge badges drawn): the marks
    of nodes inside a collapsed group's box and of edges hidden with them are not drawn, so not explained."""
    state = canvas._state
    if state is None:
        return False, {}, {}, []
    shown = state.data.shown
    tags = {i: t for i, t in state.data.structure.node_tags.items() if shown(i)}
    kernels = {i: k for i, k in state.kernels.items() if shown(i)}
    badges = [text for _point, text in state.data.badge_points]  # on edges between shown nodes
    return marks_drawn(canvas), tags, kernels, badges


def marks_key(canvas) -> tuple:
    """What decides which of the dtype legend's mark notes apply (:func:`_marks_shown`): the scene drawn (a new one
    each time a group opens or closes) and whether the scale draws marks. The canvas refreshes its legend when this
    changes (a zoom past the marks' readable size, a group opened)."""
    state = canvas._state
    return (
        id(state),
        marks_drawn(canvas) if state is not None else False,
        pills_drawn(canvas) if state is not None else False,
    )


def legend_entries(
    canvas, all_ops: bool = False, picture: bool = False, limit: int = MAX_OPS
) -> tuple[str, list[tuple[str, QColor]], list[str]]:
    """(title, [(label, colour)], notes) for ``canvas``'s current colour mode. Op types: the first
    ``limit`` (:data:`MAX_OPS`; the rest: :func:`more_op_types`), or every one with ``all_ops``. With ``picture`` (a
    picture of the view as it is) the notes on edge badges, node tags and INT marks are left out where the
    view's scale draws none (:func:`marks_drawn`; ``render --max-side 416`` of a quantized digits_cnn explained
    tags no node showed), and each of them where none is shown (nudenet_320n collapsed: every tag and INT mark
    inside a box); the live legend too (it explained them with every group of nudenet_320n collapsed), refreshed
    by the canvas when :func:`marks_key` changes. A picture's SQNR legend where no node or edge has a figure (every node grey: ``render --colour
    sqnr`` with no unit quantized) lists "no value" alone, with the notes given (``error_notes``) and none on
    the colour stops."""
    mode = canvas.color_mode()
    state = canvas._state
    if (
        mode == "error" and picture and not _values_drawn(canvas)
    ):  # all grey: the stops explain no colour drawn
        return (
            canvas.error_label(),
            [("no value", colors.NO_VALUE)],
            [*(canvas.error_notes or []), *float_notes(canvas)],
        )
    if mode == "error":
        stops = colors.ERROR_STOPS
        if canvas.error_scale is not None:
            return (
                canvas.error_label(),
                _scaled_rows(canvas.error_scale),
                [*(canvas.error_notes or [_scaled_note(canvas.error_scale)]), *float_notes(canvas)],
            )
        rows = [(f"<= {stops[0][0]:g} dB", stops[0][1])]
        rows += [(f"{db:g} dB", c) for db, c in stops[1:-1]]
        rows += [(f">= {stops[-1][0]:g} dB", stops[-1][1]), ("no value", colors.NO_VALUE)]
        notes = list(
            canvas.error_notes
            or ["linear between the stops; bit-exact shown as 100 dB, all noise (-inf) as -100 dB (red)"]
        )
        if canvas._error_edges is not None:
            notes.append("edges: SQNR of the tensor they carry; nodes: of their output")
        return canvas.error_label(), rows, notes + float_notes(canvas)  # the outline is drawn in every mode
    if mode == "dtype":
        rows = [(label, c) for label, c in canvas.legend()]
        notes = []
        index = [label for label, _ in rows if label in colors.INDEX_DTYPES and label != "int32"]
        if index:
            notes.append(f"{' / '.join(index)}: shapes, indices, masks (greys; not quantized)")
        if any(
            label == "int32" for label, _ in rows
        ):  # a quantized file's biases and integer accumulators too
            notes.append("int32: quantized biases and integer accumulators, or indices (grey)")
        edges = canvas.edge_colour_keys()
        if edges:
            notes.append("edges coloured by the dtype they carry; grey: float")
        marks, tags, kernels, badges = _marks_shown(canvas)
        if marks and badges:
            notes.append(_badges_note(badges))
        if marks and tags:
            notes.append(_tags_note(tags.values()))
        if kernels and pills_drawn(canvas):
            notes.append(INT_NOTE)
        elif kernels:
            notes.append(KERNEL_BAND_NOTE)
        if state is not None and any(
            i not in state.kernels and d.startswith("float/") for i, d in state.compute.items()
        ):
            notes.append(WEIGHT_ONLY_NOTE)
        if state is not None and state.compute and state.data.plan is not None:
            note = (
                group_kernels_note(canvas)
                if picture
                else GROUP_KERNELS_NOTE
                if _groups_with_figures(canvas)
                else None
            )
            if note:
                notes.append(note)
        elif state is not None and state.kernels and _fraction_boxes_shown(canvas):
            notes.append(FRACTION_BOX_NOTE)
        in_file = state is not None and bool(state.kernels or state.compute)  # a model quantized elsewhere
        title = "dtype in the file" if canvas.edge_colour_keys() or in_file else "dtype (recipe)"
        return title, rows, notes + float_notes(canvas)
    rows = _op_rows(canvas)
    return "op type", rows if all_ops else rows[:limit], float_notes(canvas)


#: the dtype legend's note on the "INT" pill of integer kernels, and on the bar that stands for it zoomed out
INT_NOTE = "INT: integer kernel (or a QDQ unit fused into one)"
KERNEL_BAND_NOTE = "dark green bar under the op type: integer kernel (INT when zoomed in)"
#: the dtype legend's note on a weight-only node of a file (a MatMulNBits below accuracy_level 4, a DequantizeLinear
#: weight on a float MatMul): float math on an integer weight, so its fill is its weight's dtype and it has no INT mark
WEIGHT_ONLY_NOTE = (
    "weight-only node (no INT): float math on an integer weight, filled with the weight's dtype"
)

#: the dtype legend's note on what a group (block) says of a file quantized elsewhere: "box" alone read as the
#: node boxes, which show no kernels
GROUP_KERNELS_NOTE = (
    "group title: the quantized kernels inside (dtypes activation/weight); a collapsed group's box "
    "is coloured by their activation dtype as run (a weight-only kernel's: its weight dtype)"
)
#: its first half alone (a picture that draws the kernels in a group's title but shows no collapsed box)
GROUP_TITLE_NOTE = "group title: the quantized kernels inside (dtypes activation/weight)"
#: its second half alone (a picture whose collapsed boxes are too small to draw their kernels)
GROUP_BOX_NOTE = (
    "a collapsed group's box is coloured by the activation dtype of the quantized kernels inside as run "
    "(a weight-only kernel's: its weight dtype)"
)

#: the dtype legend's note on the collapsed boxes of a file the app exported (its integer kernels known, no compute
#: dtypes): what the fill and the "N% quantized" of :func:`group_figures` mean
FRACTION_BOX_NOTE = (
    "a collapsed group's box: filled with the dtype of its integer kernels (else of most of its "
    'nodes); "N% quantized": the share of its nodes'
)


def _groups_with_figures(canvas) -> bool:
    """Whether some group of ``canvas``'s graph says what quantized kernels it holds (its title's figure or a
    collapsed box's fill, shown as the user opens, collapses and zooms): False on a graph with no group (a lone
    MatMulInteger's, whose legend told of group titles and boxes no view of it draws)."""
    state = canvas._state
    ids = set(state.data.group_ids) if state is not None else set()
    return bool(ids & (set(state.group_texts) | set(state.group_fills))) if ids else False


def _fraction_boxes_shown(canvas) -> bool:
    """Whether a collapsed box filled by :func:`~workbench.qt.canvas.group_figures.group_figures`'s share rule is
    shown (the Exported tab: the file's kernels known, not its compute dtypes)."""
    item = getattr(canvas, "_groups_item", None)
    return item is not None and item.kernel_boxes_shown()


def group_kernels_note(canvas) -> str | None:
    """The picture's note on what its groups say of a file quantized elsewhere: of the two things
    :data:`GROUP_KERNELS_NOTE` explains, only those drawn: the kernels in a group's title (drawn where the
    title keeps its scene-sized font, :meth:`GroupsItem.kernels_drawn`), a collapsed box coloured by them;
    None when neither is (``render q.onnx --colour dtype --max-side 416``: the frame ``f`` titled by its
    screen-size name alone, no box collapsed)."""
    item = getattr(canvas, "_groups_item", None)
    if item is None:
        return None
    titles = item.kernels_drawn(canvas.transform().m11())
    boxes = item.kernel_boxes_shown()
    if titles and boxes:
        return GROUP_KERNELS_NOTE
    return GROUP_TITLE_NOTE if titles else GROUP_BOX_NOTE if boxes else None


#: the op legend's note for the dashed outline of nodes kept float (:meth:`GraphCanvas.set_float_nodes`)
FLOAT_NOTE = "dashed {shade} blue outline: kept float ({n})"


def float_notes(canvas) -> list[str]:
    """The op legend's note on the nodes marked kept float ([] when none is)."""
    n = len(canvas.float_nodes())
    shade = "light" if getattr(canvas, "dark_theme", False) else "dark"  # colors.float_mark on a dark canvas
    return [FLOAT_NOTE.format(shade=shade, n=count(n, "node"))] if n else []


def _more_text(hidden: int, shown: bool) -> str:
    """The clickable line under the op types: what a click does."""
    return (
        f"\u25be hide the {hidden} less frequent op types"
        if shown
        else f"\u25b8 {hidden} more op types (click to list)"
    )


class _Title(QLabel):
    """The legend's title line: a click collapses or opens the legend."""

    clicked = Signal()

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()
            event.accept()
        else:
            super().mousePressEvent(event)

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802 - Qt override
        # Qt 6 delivers the second click of two quick ones as a press (a toggle) and then this: the title's,
        # never a double-click on the node under it
        event.accept()

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 - Qt override
        event.accept()  # the end of the title's click: not a release on the canvas under it


class LegendOverlay(QFrame):
    """The legend; :meth:`refresh` re-reads the canvas (connected to ``colorsChanged``).

    ``title`` is its first line ("Colour: op type"), clickable: :meth:`set_collapsed` shows it alone;
    ``label`` holds the rows and notes (or the canvas's empty hint). Mouse events anywhere but on the title
    go on to the canvas's viewport, at the same spot (:meth:`_pass_on`).
    """

    def __init__(self, canvas, parent: QWidget | None = None):
        # a child of the view, not of its viewport: the viewport scrolls its children with the scene
        super().__init__(parent or canvas)
        self.canvas = canvas
        self.setObjectName("canvasLegend")
        self.colors = LIGHT_OVERLAY  # the theme's overlay colours (:meth:`set_dark`)
        self._restyle()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 4, 6, 4)
        lay.setSpacing(0)
        self.collapsed = False
        self._title = ""  # the colour mode's title, as legend_entries names it
        self._rows: list[str] = []  # the colour rows (HTML) and notes (text) shown last (:meth:`_fill`)
        self._notes: list[str] = []
        self._columns = False  # rows past COLUMN_ROWS in two columns (op types, dtypes; not a picture)
        self._cuttable = False  # op types past MIN_OPS may go into the "more" line for room
        self._op_rows: list[
            tuple[str, QColor]
        ] = []  # every op type of the op colour mode, most frequent first
        #: how many op types the rows show (the rest: the "N more op types" line); with every op type listed
        #: (all_ops), how many a click on "hide the N less frequent op types" leaves
        self.op_limit = MAX_OPS
        #: True while the notes are left out for want of height (they are in the title's tooltip)
        self.notes_left_out = False
        self.title = _Title()
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setWordWrap(True)
        self.title.setCursor(Qt.CursorShape.PointingHandCursor)
        self.title.clicked.connect(self.toggle_collapsed)
        lay.addWidget(self.title)
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.setMaximumWidth(MAX_WIDTH)
        lay.addWidget(self.label)
        self.label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.all_ops = False  # the op types past MAX_OPS listed too (a click on ``more``)
        self.picture = False  # drawn into a picture (:meth:`set_picture`): every op type, nothing to click
        self.more = _Title()  # "N more op types": a click lists them (again: hides them)
        self.more.setTextFormat(Qt.TextFormat.RichText)
        self.more.setCursor(Qt.CursorShape.PointingHandCursor)
        self.more.clicked.connect(self.toggle_all_ops)
        lay.addWidget(self.more)
        self.more.hide()
        canvas.viewport().installEventFilter(self)
        canvas.colorsChanged.connect(self.refresh)
        self.refresh()

    def _restyle(self) -> None:
        r, g, b, a = self.colors.background
        self.setStyleSheet(
            f"QFrame#canvasLegend {{ background: rgba({r},{g},{b},{a}); border: 1px solid "
            f"{self.colors.border}; border-radius: 4px; }} QFrame#canvasLegend QLabel "
            f"{{ color: {self.colors.text}; }}"
        )

    def set_dark(self, dark: bool) -> None:
        """Draw in the dark theme's overlay colours (``True``: dark frame, light text, lighter swatch outlines) or
        the light ones (:mod:`workbench.qt.canvas.overlay_colors`)."""
        colors = overlay_colors(dark)
        if colors != self.colors:
            self.colors = colors
            self._restyle()
            self.refresh()

    def eventFilter(self, watched, event) -> bool:
        if event.type() in (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.Move):
            before = self.size()
            if (self._notes or self._cuttable) and self.title.isVisible():
                self._fill()  # the notes and the less frequent op types in or out for the new size
                self.fit_size()
            self.place()
            if self.size() != before:  # re-wrapped to a new viewport width
                self.canvas.legend_resized()
        return False

    def place(self) -> None:
        """Top-left corner of the canvas's viewport, above it, no wider than the viewport (its
        lines wrap): a 256 px wide diff pane clipped the 300 px legend."""
        width = min(MAX_WIDTH, max(MIN_WIDTH, self.canvas.viewport().width() - 32))  # 8 px each side, frame
        if width != self.label.maximumWidth():
            self.label.setMaximumWidth(width)
            self.title.setMaximumWidth(width)
            if self.collapsed and self.title.isVisibleTo(self):
                self._set_title(self._title)  # elided to the new width
            self.fit_size()
        self.move(self.canvas.viewport().geometry().topLeft() + QPoint(MARGIN, MARGIN))
        self.raise_()

    def _empty_hint(self) -> str:
        """While the canvas shows no graph: its ``opening_hint`` while a layout is under way ("Laying out 10
        nodes..."), else its ``empty_hint`` (what to do; "" without one). "" while it shows a graph."""
        if self.canvas._state is not None:
            return ""
        if self.canvas.opening() and getattr(self.canvas, "opening_hint", ""):
            return self.canvas.opening_hint
        return getattr(self.canvas, "empty_hint", "")

    def refresh(self) -> None:
        """Re-read the canvas: its colour key, or its ``empty_hint`` (what to do) while it has no graph
        (a legend of nothing, "Colour: op type" alone, was shown after a failed first open)."""
        hint = self._empty_hint()
        if hint:
            self.title.hide()
            self.label.setText(html.escape(hint))
            self.label.show()
        else:
            title, rows, notes = legend_entries(
                self.canvas, all_ops=self.all_ops or self.picture, picture=self.picture
            )
            self._set_title(title)
            self.title.show()
            mode = self.canvas.color_mode()
            self._op_rows = _op_rows(self.canvas) if mode == "op" else []
            self._columns = mode in ("op", "dtype") and not self.picture
            self._cuttable = mode == "op" and not self.picture
            self._rows = [swatch_html(c, label, self.colors.swatch_outline) for label, c in rows]
            self._notes = list(notes)
            self._fill()
            self.label.setVisible(not self.collapsed)
        before = self.size()
        self.fit_size()
        self.place()
        if self.size() != before:
            self.canvas.legend_resized()

    def fit_size(self) -> None:
        """Size the frame to its contents: ``adjustSize``, then as tall as the wrapped lines need at the width it
        took. The size hint alone follows no label's height for its width: render's SQNR legend of digits_cnn
        drew its grey note on six lines in a frame of five, its last line cut at the bottom edge."""
        self.adjustSize()
        layout = self.layout()
        if layout.hasHeightForWidth():
            needed = layout.totalHeightForWidth(self.width())
            if needed > self.height():
                self.resize(self.width(), needed)

    def _compose(self, rows: list[str], notes: list[str]) -> str:
        """The label's rich text: ``rows`` (HTML), in two columns past :data:`COLUMN_ROWS` where the mode allows
        (the first half down the left column, most frequent first), then ``notes`` (text, muted)."""
        noted = [f'<span style="color:{self.colors.muted}">{html.escape(n)}</span>' for n in notes]
        if not (self._columns and len(rows) > COLUMN_ROWS):
            return "<br>".join(rows + noted)
        half = (len(rows) + 1) // 2
        cells = [(rows[k], rows[k + half] if k + half < len(rows) else "") for k in range(half)]
        table = "".join(
            f'<tr><td style="white-space:nowrap">{a}</td><td width="{COLUMN_GAP}"></td>'
            f'<td style="white-space:nowrap">{b}</td></tr>'
            for a, b in cells
        )
        tail = f"<div>{'<br>'.join(noted)}</div>" if noted else ""
        return f'<table cellspacing="0" cellpadding="0">{table}</table>{tail}'

    def _too_big(self) -> bool:
        """Whether the legend, sized to its contents, runs past the bottom of the canvas's viewport or covers more
        than :data:`MAX_SHARE` of its area."""
        self.fit_size()
        viewport = self.canvas.viewport()
        return (
            self.height() > viewport.height() - 2 * MARGIN
            or self.width() * self.height() > MAX_SHARE * viewport.width() * viewport.height()
        )

    def _fill(self) -> None:
        """The rows and notes in the label, kept compact while live (a picture is drawn whole): when the whole
        legend would run past the bottom of the canvas's viewport or cover more than :data:`MAX_SHARE` of it, the
        notes are left out (into the title's tooltip; under the Sensitivity dock of a 1024 x 700 window the
        viewport is about 180 px high, and the sensitivity legend's notes were cut mid-line at its bottom edge),
        then the less frequent op types go into the "N more op types" line, down to :data:`MIN_OPS`. With every op
        type listed (:attr:`all_ops`), :attr:`op_limit` is what the compact legend would show at this size, so the
        "hide the N less frequent op types" line names the N a click hides (it counted those past :data:`MAX_OPS`:
        "hide the 6" on a legend that then showed 8 of 20)."""
        if self._cuttable and self.all_ops:
            compact = [
                swatch_html(c, label, self.colors.swatch_outline) for label, c in self._op_rows[:MAX_OPS]
            ]
            self.all_ops = False  # the legend as a click on the line leaves it, with its "N more" line
            try:
                limit = self._shrink(compact, cut=True)
            finally:
                self.all_ops = True
            self.op_limit = (
                limit  # the "hide the N" line sized with the rows, its N those past the compact ones
            )
            self._shrink(self._rows, cut=False)
        else:
            self._shrink(self._rows, cut=self._cuttable)
        if self._title:
            tip = self.title.toolTip().split("\n\n")[0]
            self.title.setToolTip("\n\n".join([tip, *self._notes]) if self.notes_left_out else tip)

    def _shrink(self, rows: list[str], *, cut: bool) -> int:
        """Put ``rows`` (HTML) and the notes in the label; while live, leave the notes out where the legend is too
        big (:meth:`_too_big`), and with ``cut`` then the op types past :data:`MIN_OPS` one by one. Returns (and
        sets as :attr:`op_limit`) how many op types the rows show with ``cut``; without, :attr:`op_limit` is kept
        while every op type is listed (what a click leaves, :meth:`_fill`), else :data:`MAX_OPS`."""
        notes = self._notes
        self.op_limit = len(rows) if cut else self.op_limit if self.all_ops and self._cuttable else MAX_OPS
        self.label.setText(self._compose(rows, notes))
        self._refresh_more()
        self.notes_left_out = False
        live = not self.picture and not self.collapsed
        if live and notes and self._too_big():
            self.label.setText(self._compose(rows, []))
            self.notes_left_out = True
        if live and cut:
            while self.op_limit > MIN_OPS and self._too_big():
                self.op_limit -= 1
                self.label.setText(self._compose(rows[: self.op_limit], [] if self.notes_left_out else notes))
                self._refresh_more()
        return self.op_limit

    def _refresh_more(self) -> None:
        """The "N more op types" line: shown in the op colour mode when there are more op types than the rows
        show (:attr:`op_limit`, the legend open); its tooltip lists them with their colours."""
        hidden = self._op_rows[self.op_limit :]
        self.more.setVisible(bool(hidden) and not self.collapsed and not self.picture)
        if not hidden:
            return
        self.more.setText(
            f'<span style="color:{self.colors.link}">{html.escape(_more_text(len(hidden), self.all_ops))}</span>'
        )
        self.more.setToolTip(
            "<br>".join(
                [swatch_html(c, label, self.colors.swatch_outline) for label, c in hidden]
                + ["<i>click to " + ("hide them" if self.all_ops else "list them in the legend") + "</i>"]
            )
        )

    def set_picture(self, picture: bool) -> None:
        """Draw the legend for a picture (``True``: File > Export Picture, ``workbench-cli render``): every op
        type with its colour, and no line that asks for a click (a picture has none: "7 more op types (click to
        list)" was drawn into nudenet_320n's) nor the title's collapse arrow; ``False``: as the canvas shows it."""
        if picture != self.picture:
            self.picture = picture
            self.refresh()

    def toggle_all_ops(self) -> None:
        """A click on the "more op types" line: list every op type, or the compact legend's again (:meth:`_fill`)."""
        self.all_ops = not self.all_ops
        self.refresh()

    def _set_title(self, title: str) -> None:
        """The title line: wrapped when open; one line when collapsed, elided to the legend's width (the
        frame shrinks to the title, and a long sensitivity title wrapped onto three lines)."""
        self._title = title
        arrow = "\u25b8" if self.collapsed else "\u25be"  # > collapsed, v open (as a group's chevron)
        line = f"Colour: {title}" if self.picture else f"{arrow} Colour: {title}"
        self.title.setWordWrap(not self.collapsed)
        font = self.title.font()
        font.setBold(True)
        metrics = QFontMetrics(font)
        if self.collapsed:
            line = metrics.elidedText(line, Qt.TextElideMode.ElideRight, self.label.maximumWidth())
        # open, it wraps only past the legend's width: short rows left a wrapping label narrow
        # ("Colour: dtype" / "(recipe)" on two lines above two short entries)
        self.title.setMinimumWidth(min(metrics.horizontalAdvance(line) + 2, self.label.maximumWidth()))
        self.title.setText(f"<b>{html.escape(line)}</b>")
        self.title.setToolTip(
            f"Colour: {title}\nClick to collapse the legend to this line (click again to open "
            "it); View > Legend (Ctrl+L) hides it"
        )

    def set_collapsed(self, collapsed: bool) -> None:
        """Show the title line alone (``True``) or the whole legend; a fitted view is fitted again."""
        if collapsed != self.collapsed:
            self.collapsed = collapsed
            self.refresh()

    def toggle_collapsed(self) -> None:
        """A click on the title: collapse an open legend, open a collapsed one."""
        self.set_collapsed(not self.collapsed)

    def _pass_on(self, event) -> None:
        """Send mouse ``event`` (on the frame or the rows, which let it through) to the canvas's viewport
        at the same screen spot, as if the legend were not there."""
        viewport = self.canvas.viewport()
        at = viewport.mapFromGlobal(self.mapToGlobal(event.position()))
        if isinstance(event, QWheelEvent):
            copy = QWheelEvent(
                at,
                event.globalPosition(),
                event.pixelDelta(),
                event.angleDelta(),
                event.buttons(),
                event.modifiers(),
                event.phase(),
                event.inverted(),
            )
        else:
            copy = QMouseEvent(
                event.type(), at, event.globalPosition(), event.button(), event.buttons(), event.modifiers()
            )
        QCoreApplication.sendEvent(viewport, copy)
        event.accept()

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt override
        self._pass_on(event)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 - Qt override
        self._pass_on(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 - Qt override
        self._pass_on(event)

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802 - Qt override
        self._pass_on(event)

    def wheelEvent(self, event) -> None:  # noqa: N802 - Qt override
        self._pass_on(event)

    def setVisible(self, visible: bool) -> None:  # noqa: N802 - Qt override
        changed = visible != self.isVisible()
        super().setVisible(visible)
        if changed:
            self.canvas.legend_resized()

    def text(self) -> str:
        """The legend as plain lines (title, one line per entry, notes), or the canvas's empty hint."""
        if self._empty_hint():
            return self._empty_hint()
        title, rows, notes = legend_entries(
            self.canvas, all_ops=self.all_ops or self.picture, limit=self.op_limit
        )
        hidden = more_op_types(self.canvas, self.op_limit)
        more = [_more_text(len(hidden), self.all_ops)] if hidden and not self.picture else []
        return "\n".join([title] + [label for label, _c in rows] + notes + more)
