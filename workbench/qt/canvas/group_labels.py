"""Group titles kept readable however far the canvas is zoomed out.

A group's title is drawn in a scene-sized font (``groups_item._Fonts``): zoomed out to "Fit graph" it
shrank to a few pixels and then vanished, leaving blank boxes (ppocrv4_rec, nudenet_320n). Where that
font would be under :data:`LABEL_PX` pixels on screen, :func:`place_labels` places the titles in a
screen-size font instead, LABEL_PX pixels high at any zoom:

* a collapsed box's title starts at the box's left edge, centred on it, elided to the wider of the box
  and :data:`LABEL_W` pixels (it may run past a narrow box, on a chip of the box's fill);
* an open group's title sits in its title bar when that is tall enough, else left of the frame's
  top-left corner, else just above the frame, never over a shown node box (:class:`NodeIndex` finds
  the few near it);
* a node's op type (``fitted``, beside nodes in open groups) sits inside its box, in a smaller font
  or cut at the end when the box is narrow, and is left out when the box is lower than the label.

Labels never overlap one another: collapsed boxes are placed first (their title is all they show), then
open frames, each kind largest on screen first; a label that would overlap one already placed is left
out (zooming in shows it), and so is the title of a group under :data:`MIN_BOX_PX` high on screen (a
whole expanded 20,000-node graph: thousands of specks; one title would cover many). The groups item hands
:func:`place_labels` the groups in and around what the view shows (``groups_item.REGION_PX``), so a zoom step
costs what is visible, and keeps the placement for that scale until the view leaves that region.
:class:`ScreenTitlesItem` draws them above the edges and nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

#: pixel size of a title drawn at screen size (bold)
LABEL_PX = 10
#: width (pixels) a screen-size title may take past a box narrower than that
LABEL_W = 150.0
#: a group less high than this on screen (pixels) gets no title: it would cover its neighbours
MIN_BOX_PX = 3.0
#: cells (pixels) the overlap test files labels under
_CELL_W, _CELL_H = 128.0, 16.0
#: width (pixels) of the first, short overlap test of a title: the picture's many groups left without one
#: are not measured
_STUB = 24.0


@dataclass(frozen=True)
class Label:
    """A placed title: group index ``k``, its rectangle in scene units at the scale it was placed for,
    its (elided) text and whether its group is a collapsed box; ``node`` >= 0: the label is that single
    node's op type (``k`` then indexes past the groups)."""

    k: int
    rect: QRectF
    text: str
    collapsed: bool
    node: int = -1
    px: int = LABEL_PX  # its font's pixel size (a node's op type inside its box may take a smaller one)


_FONTS: dict[int, QFont] = {}


def label_font(px: int = LABEL_PX) -> QFont:
    """The screen-size title font: ``px`` (default :data:`LABEL_PX`) pixels, bold (shared, made once per size)."""
    font = _FONTS.get(px)
    if font is None:
        font = _FONTS[px] = QFont()
        font.setPixelSize(px)
        font.setBold(True)
    return font


def label_height() -> float:
    """Height (pixels) of a title in :func:`label_font`: an open frame's title bar lower than this on screen puts
    its title outside the frame."""
    return QFontMetricsF(label_font()).height()


class _Grid:
    """Placed label rectangles (pixels, ``(left, top, right, bottom)``), filed by the cells they cover: an
    overlap test looks at a few."""

    def __init__(self) -> None:
        self._cells: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}

    @staticmethod
    def _keys(r: tuple[float, float, float, float]) -> list[tuple[int, int]]:
        return [(cx, cy) for cx in range(int(r[0] // _CELL_W), int(r[2] // _CELL_W) + 1)
                for cy in range(int(r[1] // _CELL_H), int(r[3] // _CELL_H) + 1)]

    def free(self, r: tuple[float, float, float, float]) -> bool:
        left, top, right, bottom = r
        cells = self._cells
        for cx in range(int(left // _CELL_W), int(right // _CELL_W) + 1):
            for cy in range(int(top // _CELL_H), int(bottom // _CELL_H) + 1):
                for o in cells.get((cx, cy), ()):
                    if o[0] < right and left < o[2] and o[1] < bottom and top < o[3]:
                        return False
        return True

    def add(self, r: tuple[float, float, float, float]) -> None:
        for key in self._keys(r):
            self._cells.setdefault(key, []).append(r)


def place_labels(boxes: np.ndarray, titles: list[str], collapsed: np.ndarray, scale: float, *,
                 title_bar: float, elide: Qt.TextElideMode, nodes: np.ndarray | NodeIndex | None = None,
                 fitted: np.ndarray | None = None) -> list[Label]:
    """The screen-size titles of the groups ``boxes`` (float, shape (n, 4): left, top, right, bottom in
    scene units; ``titles`` and ``collapsed`` (bool, shape (n,)) alike) at view scale ``scale`` (pixels per
    scene unit), as in the module docstring: none overlapping, each rectangle in scene units, ``Label.k``
    the group's row in ``boxes``. ``title_bar`` is an open frame's title bar height (scene units), ``elide``
    how a long title is cut. A group whose title is empty, or under :data:`MIN_BOX_PX` high on screen, gets
    none. ``nodes`` (float, shape (m, 4), scene units like ``boxes``): the shown node boxes an open frame's
    title placed outside its title bar must not cover (minilm_l6_v2: "bert" left of its frame covered the
    "Cast" node there); it is then placed above the frame, or left out. A :class:`NodeIndex` of them may be
    given instead (kept by the caller over zoom changes). ``fitted`` (bool, shape (n,)): the
    rows whose label stays inside their box (node boxes titled by their op type, beside nodes in open
    groups): centred in it, in a smaller font down to :data:`FITTED_MIN_PX` pixels where the whole text does
    not fit its width, else cut at the end ("AveragePool" -> "Averag…"), and left out where the box is lower
    on screen than the label or fewer than :data:`FITTED_MIN_CHARS` characters fit.

    Cost: one overlap test per group (a short one first, so the many groups of a dense picture left
    without a label are not measured); the text of the placed ones only is elided."""
    metrics = QFontMetricsF(label_font())
    h = metrics.height()
    px = np.asarray(boxes, dtype=float).reshape(-1, 4) * scale
    area = (px[:, 2] - px[:, 0]) * (px[:, 3] - px[:, 1])
    order = np.lexsort((-area, ~np.asarray(collapsed, dtype=bool)))  # boxes first, each kind largest first
    order = order[(px[order, 3] - px[order, 1]) >= MIN_BOX_PX]
    grid = _Grid()
    out: list[Label] = []
    inside = title_bar * scale >= h
    rows = px.tolist()
    obstacles = NodeIndex(np.zeros((0, 4))) if nodes is None or inside else \
        nodes if isinstance(nodes, NodeIndex) else NodeIndex(nodes)
    texts: dict[tuple[str, float], tuple[str, float]] = {}  # (title, room) -> (elided, width): nodes repeat op types
    fit = np.zeros(len(rows), dtype=bool) if fitted is None else np.asarray(fitted, dtype=bool)
    fitted_texts: dict[tuple[str, float, float], tuple[str, int, float, float] | None] = {}
    for k in order.tolist():
        if not titles[k]:
            continue
        left, top, right, bottom = rows[k]
        if fit[k]:
            label = _fitted_label(titles[k], rows[k], fitted_texts)
            if label is not None and grid.free(label[0]):
                r, text, size = label
                grid.add(r)
                out.append(Label(k, QRectF(r[0] / scale, r[1] / scale, (r[2] - r[0]) / scale, (r[3] - r[1]) / scale),
                                 text, True, px=size))
            continue
        if collapsed[k]:
            starts = [(left + 3.0, (top + bottom - h) / 2)]
        else:
            starts = [(left + 6.0, top + (title_bar * scale - h) / 2)] if inside else []
            starts += [(left - 3.0, top), (left + 3.0, top - h)]  # left of the frame (right-aligned), above
        text = None
        for n, (x, y) in enumerate(starts):
            right_aligned = not collapsed[k] and n == len(starts) - 2
            stub = (x - _STUB, y, x, y + h) if right_aligned else (x, y, x + _STUB, y + h)
            if not grid.free(stub):
                continue
            if text is None:
                key = (titles[k], max(right - left - 6.0, LABEL_W))
                if key not in texts:
                    shown = metrics.elidedText(titles[k], elide, key[1])
                    texts[key] = (shown, metrics.horizontalAdvance(shown) + 2.0)
                text, w = texts[key]
            r = (x - w, y, x, y + h) if right_aligned else (x, y, x + w, y + h)
            if grid.free(r) and (collapsed[k] or not obstacles.covers(r, scale)):
                grid.add(r)
                out.append(Label(k, QRectF(r[0] / scale, r[1] / scale, w / scale, h / scale), text,
                                 bool(collapsed[k])))
                break
    return out


#: fewest characters of a node's op type a label inside its box shows before "…" ("Av…" says little)
FITTED_MIN_CHARS = 3
#: smallest pixel size a node's op type inside its box is drawn at before it is cut ("Gemm" at 10 px is wider
#: than a node box at 26 %)
FITTED_MIN_PX = 8


def _fitted_text(title: str, room: float, height: float) -> tuple[str, int, float, float] | None:
    """(text, font pixel size, width, height) of ``title`` in a box ``room`` pixels wide and ``height`` high: whole
    in the largest bold font from :data:`LABEL_PX` down to :data:`FITTED_MIN_PX` it fits in, else cut at the
    end in the smallest; None when the box is lower than that font or fewer than :data:`FITTED_MIN_CHARS`
    characters fit."""
    for px in range(LABEL_PX, FITTED_MIN_PX - 1, -1):
        metrics = QFontMetricsF(label_font(px))
        if metrics.height() > height:  # too high for the box: a smaller size may fit
            continue
        w = metrics.horizontalAdvance(title)
        if w <= room:
            return title, px, w + 2.0, metrics.height()
    if metrics.height() > height:  # the smallest size (the last tried) is too high too
        return None
    shown = metrics.elidedText(title, Qt.TextElideMode.ElideRight, room)
    if shown == title or len(shown) - 1 < min(FITTED_MIN_CHARS, len(title)):
        return None
    return shown, FITTED_MIN_PX, metrics.horizontalAdvance(shown) + 2.0, metrics.height()


def _fitted_label(title: str, box: list[float], cache: dict) -> tuple[tuple[float, float, float, float], str, int] | None:
    """(rectangle in pixels, text, font pixel size) of ``title`` centred inside ``box`` (pixels: left, top, right,
    bottom), as :func:`_fitted_text` fits it to the box's width less 4 px; None where it does not fit. ``cache``
    keeps the fitted texts by (title, room, height): nodes repeat op types."""
    left, top, right, bottom = box
    key = (title, right - left - 4.0, bottom - top)
    if key not in cache:
        cache[key] = _fitted_text(*key) if key[1] > 0 else None
    fitted = cache[key]
    if fitted is None:
        return None
    text, px, w, h = fitted
    x, y = (left + right - w) / 2, (top + bottom - h) / 2
    return (x, y, x + w, y + h), text, px


class NodeIndex:
    """Rectangles (the shown node boxes, shape (m, 4): left, top, right, bottom; scene units) filed under every
    cell of a grid they overlap, cells twice as wide and as high as the largest rectangle (so each is filed under
    at most four), so that :meth:`covers` tests the few in the cells a title reaches, not all of them: an open
    frame's title was tested against all 20,000 nodes of an expanded graph, 3,132 tests, 225-713 ms per zoom
    change on this machine. Over the grid, coarser grids (each cell the union of 2 x 2 cells of the finer one)
    say which cells hold any rectangle: zoomed out, a title covers thousands of the fine cells (one test
    looked up 12,000 of them at 1/500), and :meth:`covers` goes down only into the coarse cells that hold
    rectangles and are cut by the title's edge. Built once for a picture (the groups item keeps it over zoom
    changes), in scene units; the test itself compares in pixels, as the brute-force test did, so its answers
    are the same."""

    def __init__(self, rects: np.ndarray) -> None:
        rects = np.asarray(rects, dtype=float).reshape(-1, 4)
        self._cells: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}
        w = rects[:, 2] - rects[:, 0] if len(rects) else np.ones(1)
        h = rects[:, 3] - rects[:, 1] if len(rects) else np.ones(1)
        #: cell width and height, scene units
        self.cell = (2.0 * max(float(w.max()), 1e-9), 2.0 * max(float(h.max()), 1e-9))
        cw, ch = self.cell
        x0 = np.floor(rects[:, 0] / cw).astype(np.int64).tolist()
        y0 = np.floor(rects[:, 1] / ch).astype(np.int64).tolist()
        x1 = np.floor(rects[:, 2] / cw).astype(np.int64).tolist()
        y1 = np.floor(rects[:, 3] / ch).astype(np.int64).tolist()
        cells = self._cells
        for row, a, b, c, d in zip(map(tuple, rects.tolist()), x0, y0, x1, y1, strict=True):
            for cx in range(a, c + 1):
                for cy in range(b, d + 1):
                    cells.setdefault((cx, cy), []).append(row)
        #: the cells holding a rectangle at each level: level k's cell (cx, cy) is the fine cells
        #: (cx << k .. (cx + 1 << k) - 1, likewise cy); the last level has at most four, or stopped shrinking
        self._levels: list[set[tuple[int, int]]] = [set(cells)]
        while len(self._levels[-1]) > 4:
            coarser = {(cx >> 1, cy >> 1) for cx, cy in self._levels[-1]}
            if len(coarser) == len(self._levels[-1]) and len(self._levels) > 64:
                break
            self._levels.append(coarser)

    def covers(self, r: tuple[float, float, float, float], scale: float = 1.0) -> bool:
        """Whether ``r`` (left, top, right, bottom; pixels at view scale ``scale``) overlaps any rectangle
        (touching edges do not overlap)."""
        if not self._cells:
            return False
        left, top, right, bottom = r
        cw, ch = self.cell[0] * scale, self.cell[1] * scale
        # the fine cells r reaches, a hair wider: a rectangle filed in scene units whose edge meets a cell's in
        # the last digit
        span = (math.floor(left / cw - 1e-9), math.floor(top / ch - 1e-9),
                math.floor(right / cw + 1e-9), math.floor(bottom / ch + 1e-9))
        k = min(max(span[2] - span[0], span[3] - span[1], 1).bit_length(), len(self._levels) - 1)
        top_cells = self._levels[k]
        xs, ys = range(span[0] >> k, (span[2] >> k) + 1), range(span[1] >> k, (span[3] >> k) + 1)
        if len(xs) * len(ys) > len(top_cells):
            starts = [c for c in top_cells if c[0] in xs and c[1] in ys]
        else:
            starts = [(cx, cy) for cx in xs for cy in ys if (cx, cy) in top_cells]
        return any(self._covers_in(k, cx, cy, r, span, scale) for cx, cy in starts)

    def _covers_in(self, k: int, cx: int, cy: int, r: tuple[float, float, float, float],
                   span: tuple[int, int, int, int], scale: float) -> bool:
        """:meth:`covers` within level ``k``'s cell (cx, cy), which holds a rectangle; ``span``: the fine cells
        ``r`` reaches (first x, first y, last x, last y)."""
        x_lo, y_lo, x_hi, y_hi = cx << k, cy << k, ((cx + 1) << k) - 1, ((cy + 1) << k) - 1
        if x_lo > span[0] + 1 and x_hi < span[2] - 1 and y_lo > span[1] + 1 and y_hi < span[3] - 1:
            # every fine cell in it lies a whole cell inside r: a rectangle filed under one overlaps r
            return True
        if k == 0:
            left, top, right, bottom = r
            for x0, y0, x1, y1 in self._cells[(cx, cy)]:
                if x0 * scale < right and left < x1 * scale and y0 * scale < bottom and top < y1 * scale:
                    return True
            return False
        finer = self._levels[k - 1]
        for fx in (2 * cx, 2 * cx + 1):
            if not (span[0] >> (k - 1)) <= fx <= (span[2] >> (k - 1)):
                continue
            for fy in (2 * cy, 2 * cy + 1):
                if (span[1] >> (k - 1)) <= fy <= (span[3] >> (k - 1)) and (fx, fy) in finer and \
                        self._covers_in(k - 1, fx, fy, r, span, scale):
                    return True
        return False


#: device pixels of the bar along a screen-size title's bottom (ScreenTitlesItem's ``marks``)
MARK_PX = 3.0


def mark_rect(rect: QRectF, glyphs_bottom: float) -> QRectF:
    """The bar along the bottom of a screen-size title's chip ``rect`` (device pixels) whose text's glyphs end at
    ``glyphs_bottom``: its last :data:`MARK_PX` rows, or, where the glyphs reach into them (a baseline or descender
    in the chip's last rows: 8 to 10 px op types), from one row below the glyphs, the chip then growing down to hold
    it."""
    top = max(float(round(rect.bottom()) - MARK_PX), float(math.ceil(glyphs_bottom)) + 1.0)
    return QRectF(rect.left(), top, rect.width(), MARK_PX)


class ScreenTitlesItem(QGraphicsItem):
    """Draws the screen-size titles ``labels(scale)`` gives, in device pixels, above edges and nodes; each
    on a chip of its group's colour (``colors(label) -> (chip, text)``), so what lies under a title that
    runs past its box does not strike through it; ``marks(label)`` (optional) gives the colour of a bar along the
    chip's bottom, or None (a node's op type on an integer kernel: the bar its box has under the chip). Nothing on the minimap's thumbnail (painted with no
    widget), except while :attr:`picture` is set (an SVG export renders the view with no widget either).
    The owner sets the bounds where the titles of the view's scale reach (:meth:`set_bounds`)."""

    def __init__(self, labels: Callable[[float], list[Label]], colors: Callable[[Label], tuple[QColor, QColor]],
                 bounds: QRectF, marks: Callable[[Label], QColor | None] | None = None):
        super().__init__()
        self._labels, self._colors, self._bounds = labels, colors, QRectF(bounds)
        self._marks = marks
        self.picture = False  # True while the view is drawn into a picture (painted with no widget)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(0.5)

    def boundingRect(self) -> QRectF:
        return self._bounds

    def set_bounds(self, bounds: QRectF) -> None:
        if bounds != self._bounds:
            self.prepareGeometryChange()
            self._bounds = QRectF(bounds)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        if widget is None and not self.picture:
            return
        to_device = painter.worldTransform()
        labels = self._labels(QStyleOptionGraphicsItem.levelOfDetailFromTransform(to_device))
        exposed = option.exposedRect
        painter.save()
        painter.resetTransform()
        for label in labels:
            if not label.rect.intersects(exposed):
                continue
            font = label_font(label.px)
            painter.setFont(font)
            metrics = QFontMetricsF(font)
            chip, text = self._colors(label)
            rect = to_device.mapRect(label.rect)
            # the baseline on a whole pixel row: from a fractional one the 1 px underscores of "Conv_0_quant"
            # were blended over two rows into the chip and the title read "Conv 0 quant"
            baseline = round(rect.center().y() - metrics.height() / 2 + metrics.ascent())
            mark = self._marks(label) if self._marks is not None else None
            bar = None if mark is None else mark_rect(rect, baseline + metrics.tightBoundingRect(label.text).bottom())
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(chip)
            below = 0.0 if bar is None else max(0.0, bar.bottom() - rect.bottom())  # the chip holds its bar
            painter.drawRoundedRect(rect.adjusted(-2, 0, 2, below), 3.0, 3.0)
            if bar is not None:
                painter.setBrush(mark)
                painter.drawRect(bar)
            painter.setPen(text)
            x = rect.center().x() - metrics.horizontalAdvance(label.text) / 2
            painter.drawText(QPointF(x, baseline), label.text)
        painter.restore()


__all__ = ["FITTED_MIN_CHARS", "FITTED_MIN_PX", "LABEL_PX", "LABEL_W", "MARK_PX", "Label", "NodeIndex", "ScreenTitlesItem",
           "label_font", "label_height", "mark_rect", "place_labels"]
