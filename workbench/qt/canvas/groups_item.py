"""One item that draws the shown node groups: frames of open groups and boxes of collapsed ones.

A collapsed box shows a chevron (click it, or double-click the box, to open), the group's title,
its node count and the aggregate of the active colour figure (worst SQNR inside, fraction
quantized, or the most common op); an open group is a tinted frame with the same title bar.
Titles use pixel-sized fonts scaled with the scene; zoomed out to where those would be under
``group_labels.LABEL_PX`` pixels (at "Fit graph"), the titles are drawn at that screen size instead
(:mod:`workbench.qt.canvas.group_labels`), so no box is left blank; so is the op type of each node outside
every group (nudenet_320n's Resize and Concat nodes between its boxes), where no node inside an open group is
shown. Where nodes inside open groups are shown too (digits_cnn's ``f`` open, minilm_l6_v2 at depth 2, a
whole 20,000-node graph expanded), every shown node's op type is drawn at that screen size inside its box (in a
smaller font down to ``group_labels.FITTED_MIN_PX``, else cut at the end to the box's width), and none where the
box is lower than that font: their boxes were blank, or carried 3-7 px text, in pictures at small sizes and
zoomed out. Only the groups and nodes in and around the view are placed (:data:`REGION_PX`), so the number of
nodes does not matter.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from workbench.core.api import TitleMetrics
from workbench.qt.canvas.colors import KERNEL_BAND, NO_VALUE, SELECTION, text_color
from workbench.qt.canvas.group_labels import (
    FITTED_MIN_PX,
    LABEL_PX,
    LABEL_W,
    MIN_BOX_PX,
    Label,
    NodeIndex,
    ScreenTitlesItem,
    label_font,
    label_height,
    place_labels,
)
from workbench.qt.canvas.items import TEXT_SCALE, CanvasState, op_text_px
from workbench.qt.canvas.scene_data import CHEVRON_W, TITLE_BAR

#: pixels around the view within which the screen-size titles are placed (:meth:`GroupsItem.screen_labels`): a
#: pan of up to this much keeps them; a title of a group just out of view that runs into it is placed
REGION_PX = 300.0
_FRAME_TINTS = (QColor("#eef3fb"), QColor("#f6f1e7"), QColor("#eef6ee"), QColor("#f4eef6"))
#: the same four hues a little lighter than the dark theme's canvas (#1e1e20): the light tints drew bright white
#: frames on the dark canvas; the frame titles are then light text (:data:`FRAME_TITLE`)
_FRAME_TINTS_DARK = (QColor("#28303c"), QColor("#353027"), QColor("#283429"), QColor("#322a36"))
#: colour of an open frame's title, on the light tints and on the dark ones
FRAME_TITLE = {False: QColor("#2b3a52"), True: QColor("#dfe6f0")}
_BOX_FILL = QColor("#dfe7f3")
#: width (scene pixels) of a collapsed box its title's text does not get: the chevron left of it, margins
TITLE_CHROME = CHEVRON_W + 10.0
#: characters whose advance :func:`title_metrics` measures (others count as the font's widest glyph):
#: Latin-1 and the dash, times, ellipsis and arrow block titles use
_MEASURED = "".join(map(chr, range(32, 127))) + "".join(map(chr, range(160, 256))) + "\u2013\u2014\u00d7\u2026\u2192"
_title_metrics: TitleMetrics | None = None


def chevron_rect(box: QRectF) -> QRectF:
    """Where a click toggles the group: the left end of the title line."""
    return QRectF(box.left(), box.top(), CHEVRON_W, TITLE_BAR)


class _Fonts:
    title: QFont | None = None
    info: QFont | None = None
    frame: QFont | None = None

    @classmethod
    def ensure(cls) -> None:
        if cls.title is None:
            cls.title = QFont()
            cls.title.setPixelSize(20)
            cls.title.setBold(True)
            cls.info = QFont()
            cls.info.setPixelSize(17)
            cls.frame = QFont()
            cls.frame.setPixelSize(17)
            cls.frame.setBold(True)


def title_metrics() -> TitleMetrics:
    """The collapsed boxes' title font measured for the layout (which cannot measure text), so a box is
    made as wide as its title needs (``plan_group_layout``); measured once."""
    global _title_metrics
    if _title_metrics is None:
        _Fonts.ensure()
        m = QFontMetricsF(_Fonts.title)
        _title_metrics = TitleMetrics({ch: m.horizontalAdvance(ch) for ch in _MEASURED}, m.maxWidth(), TITLE_CHROME)
    return _title_metrics


def same_scale(a: float, b: float) -> bool:
    """Whether view scales ``a`` and ``b`` are the same but for their last digits (the painter's level of detail
    and the view's ``m11`` differ there)."""
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b))


def _candidates(boxes: np.ndarray, scale: float, region: QRectF | None) -> np.ndarray:
    """Which ``boxes`` (float, shape (n, 4): left, top, right, bottom; scene units) may get a screen-size label at
    view scale ``scale``: at least :data:`~group_labels.MIN_BOX_PX` pixels high and meeting scene ``region``
    (None: anywhere). Bool, shape (n,)."""
    keep = (boxes[:, 3] - boxes[:, 1]) * scale >= MIN_BOX_PX
    if region is not None:
        keep &= (boxes[:, 2] >= region.left()) & (boxes[:, 0] <= region.right()) & \
            (boxes[:, 3] >= region.top()) & (boxes[:, 1] <= region.bottom())
    return keep


class GroupsItem(QGraphicsItem):
    """Draws ``state.data``'s shown groups; the view refreshes it when colours or selection change."""

    def __init__(self, state: CanvasState):
        super().__init__()
        self.state = state
        #: open frames in the dark theme's tints (:meth:`set_dark`; the view sets it with its theme colours)
        self.dark = False
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(-2)
        d = state.data
        self._bounds = d.bounds.adjusted(-6, -6, 6, 6)  # the dashed outline of a box kept float reaches -4.75
        h = d.hierarchy
        # open frames outermost first, then the boxes on top
        self._order = np.array(sorted(range(len(d.group_ids)), key=lambda k: (d.group_ids[k] in d.placement.collapsed,
                                                                               h.depth[d.group_ids[k]])), dtype=np.int64)
        #: screen-size titles placed for one scale: (scale, the scene region placed for (None: everything), labels)
        self._labels: tuple[float, QRectF | None, list[Label]] | None = None
        self._labelled: tuple[float | None, frozenset[int]] = (None, frozenset())  # their nodes, at that scale
        #: the view's (scale, visible scene rectangle), set by the view: titles are placed for what it shows
        self.view: Callable[[], tuple[float, QRectF]] | None = None
        g = d.group_ids
        self._boxes = np.stack([d.gx0, d.gy0, d.gx1, d.gy1], axis=1).astype(float) if g else np.zeros((0, 4))
        self._collapsed = np.array([k in d.placement.collapsed for k in g], dtype=bool)
        self._node_index: NodeIndex | None = None  # the shown node boxes for the titles' overlap test (node_index)
        # the shown nodes outside every group (nudenet_320n: its 6 top-level Resize / Concat nodes): their op
        # type gets a screen-size label too where the node's own text is unreadable
        singles = np.flatnonzero((np.asarray(h.node_group) < 0) & ~np.isnan(d.x0)) if len(d) else np.zeros(0, int)
        # only where they are the only nodes shown: beside nodes in open groups, whose op type keeps its
        # scene size, they drew larger than the rest (minilm_l6_v2 at depth 2: "Cast" at 10 px, its
        # neighbours in "bert" at 4 px)
        shown = np.flatnonzero(~np.isnan(np.asarray(d.x0, dtype=float))) if len(d) else np.zeros(0, int)
        grouped = len(shown) - len(singles)
        self._singles = singles if grouped == 0 else singles[:0]
        #: with nodes of open groups shown, every shown node's op type is labelled inside its box (those in and
        #: around the view are placed: any number of nodes; above 300 they kept their scene-sized op type, 4-7 px
        #: from 0.3 to 0.55 and none in the overview below)
        self._fitted = shown if grouped > 0 else shown[:0]
        self._bounds_scale: float | None = None  # the scale the titles item's bounds were set for
        self._reach: tuple[float, float] | None = None  # _reach_px, measured once
        self._floats_cache: tuple | None = None  # (key, float_boxes())
        #: draws those titles above the edges and nodes; the view adds it to the scene with this item
        self.titles = ScreenTitlesItem(self.screen_labels, self.titles_colors, self._bounds, self.title_mark)
        state.screen_ops = self.labelled_nodes

    def boundingRect(self) -> QRectF:
        return self._bounds

    def set_dark(self, dark: bool) -> None:
        """Draw open frames in the dark theme's tints with light titles (``True``) or the light ones."""
        if dark != self.dark:
            self.dark = dark
            self.update()
            self.titles.update()

    def frame_tint(self, depth: int) -> QColor:
        """Fill of an open frame at nesting ``depth`` (1: top level) in the current theme."""
        return (_FRAME_TINTS_DARK if self.dark else _FRAME_TINTS)[(depth - 1) % 4]

    def set_scale(self, scale: float) -> None:
        """The view's scale changed: take in where the screen-size titles may run past the graph at it (the
        view calls this after every zoom and scroll; cheap, and it places no title: :meth:`screen_labels` does,
        once, when the titles or the nodes are painted)."""
        if self._bounds_scale == scale:
            return
        self._bounds_scale = scale
        across, down = self._reach_px()
        self.titles.set_bounds(self._bounds.adjusted(-across / scale, -down / scale, across / scale, down / scale))

    def _reach_px(self) -> tuple[float, float]:
        """How far (pixels, across and down) a screen-size title may run past its group's box at most: the
        longest title's characters at the font's widest glyph (left of a frame), :data:`LABEL_W` (past a
        narrow box's right edge); a label's height (above a frame)."""
        if self._reach is None:
            metrics = QFontMetricsF(label_font())
            h = self.state.data.hierarchy
            chars = max((len(h.titles[g]) for g in self.state.data.group_ids), default=0)
            self._reach = (max(LABEL_W, chars * metrics.maxWidth()) + 8.0, metrics.height() + 4.0)
        return self._reach

    def _visible(self, scale: float) -> QRectF | None:
        """The scene rectangle the view shows when ``scale`` is its scale (None: no view, or another scale, as
        the minimap's thumbnail or a caller asking for a scale of its own)."""
        if self.view is None:
            return None
        view_scale, rect = self.view()
        return rect if same_scale(view_scale, scale) else None

    def screen_labels(self, scale: float) -> list[Label]:
        """The titles drawn at screen size at view scale ``scale`` (:func:`group_labels.place_labels`;
        none where the scene-sized titles are :data:`LABEL_PX` pixels or more), of the groups and nodes in and
        around what the view shows (:data:`REGION_PX` pixels around it; every group at a scale the view is not
        at), so that a zoom step's work follows what is visible, not the size of the graph. Cached: placed
        again only at another scale or when the view leaves the region placed for (a pan of more than
        :data:`REGION_PX` pixels); the scale compared to a millionth, as the painter's level of detail
        differs from the view's scale in its last digits."""
        _Fonts.ensure()
        visible = self._visible(scale)
        cached = self._labels
        if cached is not None and same_scale(cached[0], scale) and \
                (cached[1] is None or (visible is not None and cached[1].contains(visible))):
            return cached[2]
        margin = REGION_PX / scale
        region = None if visible is None else visible.adjusted(-margin, -margin, margin, margin)
        labels = self._place(scale, region)
        self._labels = (scale, region, labels)
        self._labelled = (scale, frozenset(lab.node for lab in labels if lab.node >= 0))
        return labels

    def _place(self, scale: float, region: QRectF | None) -> list[Label]:
        """:meth:`screen_labels` placed anew: the groups and labelled nodes meeting scene ``region`` (None:
        all of them) whose title is due at ``scale``, handed to :func:`place_labels` (which leaves out those
        under :data:`~group_labels.MIN_BOX_PX` high on screen: they are not even listed here)."""
        # a node box draws its op type alone below TEXT_SCALE, in a scene-sized font: under LABEL_PX px there
        ops_small = scale < TEXT_SCALE and scale * op_text_px() < LABEL_PX
        labelled = self._singles if len(self._singles) else self._fitted
        nodes_small = len(labelled) > 0 and ops_small
        if scale * min(_Fonts.title.pixelSize(), _Fonts.frame.pixelSize()) >= LABEL_PX and not nodes_small:
            return []
        d, h = self.state.data, self.state.data.hierarchy
        due = np.where(self._collapsed, scale * _Fonts.title.pixelSize() < LABEL_PX,
                       scale * _Fonts.frame.pixelSize() < LABEL_PX)
        rows = np.flatnonzero(due & _candidates(self._boxes, scale, region))
        titles = [h.titles[d.group_ids[k]] for k in rows.tolist()]
        boxes, collapsed = self._boxes[rows], self._collapsed[rows]
        fitted = np.zeros(len(rows), dtype=bool)
        nodes = labelled[:0]
        if nodes_small:  # the nodes, placed as boxes titled by their op type (inside them beside open groups)
            rects = np.stack([d.x0[labelled], d.y0[labelled], d.x1[labelled], d.y1[labelled]], axis=1)
            keep = _candidates(rects, scale, region)
            if not len(self._singles):  # inside its box: none where the box is lower than the smallest font
                keep &= (rects[:, 3] - rects[:, 1]) * scale >= QFontMetricsF(label_font(FITTED_MIN_PX)).height()
            nodes = labelled[keep]
            ops = d.structure.op_types
            titles += [ops[n] for n in nodes.tolist()]
            boxes = np.concatenate([boxes, np.stack([d.x0[nodes], d.y0[nodes], d.x1[nodes], d.y1[nodes]], axis=1)])
            collapsed = np.concatenate([collapsed, np.ones(len(nodes), dtype=bool)])
            fitted = np.concatenate([fitted, np.full(len(nodes), not len(self._singles), dtype=bool)])
        placed = place_labels(boxes, titles, collapsed, scale, title_bar=TITLE_BAR, elide=title_elide(h),
                              nodes=self.node_index() if TITLE_BAR * scale < label_height() else None, fitted=fitted)
        groups, n = len(d.group_ids), len(rows)
        return [Label(int(rows[lab.k]), lab.rect, lab.text, lab.collapsed, px=lab.px) if lab.k < n else
                Label(groups + lab.k - n, lab.rect, lab.text, True, int(nodes[lab.k - n]), lab.px) for lab in placed]

    def labels_bounds(self) -> QRectF:
        """The graph's bounds (scene units) with the screen-size titles placed at the view's scale: where a title
        left of its frame reaches past the graph's left edge."""
        bounds = QRectF(self._bounds)
        if self.view is not None:
            for label in self.screen_labels(self.view()[0]):
                bounds = bounds.united(label.rect)
        return bounds

    def node_index(self) -> NodeIndex:
        """The shown node boxes (scene units) filed for the frame titles' overlap test, built once (when a title
        bar is first too low for its title: the titles placed outside their frames are kept off the nodes)."""
        if self._node_index is None:
            d = self.state.data
            shown = ~np.isnan(np.asarray(d.x0, dtype=float))
            boxes = np.stack([d.x0[shown], d.y0[shown], d.x1[shown], d.y1[shown]], axis=1) if len(d) else np.zeros((0, 4))
            self._node_index = NodeIndex(boxes)
        return self._node_index

    def labelled_nodes(self, scale: float) -> frozenset[int]:
        """The nodes whose op type is drawn at screen size at view scale ``scale`` (their own scene-sized op
        type is then not drawn under it): placed for it first when it is the view's scale (the nodes paint
        before the titles); none at another scale (the minimap's thumbnail, which draws no screen-size label)."""
        if self._visible(scale) is not None:
            self.screen_labels(scale)
        placed = self._labelled[0]
        return self._labelled[1] if placed is not None and same_scale(placed, scale) else frozenset()

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        _Fonts.ensure()
        d, s = self.state.data, self.state
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        exposed = option.exposedRect
        h = d.hierarchy
        title_px, frame_px = lod * _Fonts.title.pixelSize(), lod * _Fonts.frame.pixelSize()
        floats = self.float_boxes()
        b = self._boxes[self._order]  # the exposed ones only are visited: a zoomed-in view of 5,400 frames
        hit = (b[:, 2] >= exposed.left()) & (b[:, 0] <= exposed.right()) & \
            (b[:, 3] >= exposed.top()) & (b[:, 1] <= exposed.bottom())
        for k in self._order[hit].tolist():
            g = d.group_ids[k]
            box = QRectF(d.gx0[k], d.gy0[k], d.gx1[k] - d.gx0[k], d.gy1[k] - d.gy0[k])
            collapsed = g in d.placement.collapsed
            selected = g in s.group_selected
            fill = s.group_fills.get(g, _BOX_FILL) if collapsed else self.frame_tint(h.depth[g])
            pen = QPen(SELECTION, 3.0) if selected else QPen(QColor("#5a6b85" if collapsed else "#9aa8bd"),
                                                               1.6 if collapsed else 1.0)
            painter.setPen(pen)
            painter.setBrush(fill)
            painter.drawRoundedRect(box, 10.0, 10.0)
            if collapsed and g in floats:  # as a node kept float: a dashed outline around the box
                painter.setPen(QPen(s.float_mark, 2.5, Qt.PenStyle.DashLine))
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.drawRoundedRect(box.adjusted(-3.5, -3.5, 3.5, 3.5), 12.0, 12.0)
            if (title_px if collapsed else frame_px) < LABEL_PX:  # its title is drawn at screen size (titles)
                continue
            if collapsed:
                self._paint_box_text(painter, box, g, fill)
            else:
                self._paint_frame_title(painter, box, g)

    def kernels_drawn(self, scale: float) -> bool:
        """Whether at view scale ``scale`` some shown group's title draws its figure (the quantized kernels
        inside, of a file quantized elsewhere: ``CanvasState.group_texts``): in its scene-sized font (the
        screen-size titles carry the name only), and not left out of a frame's title line for want of room."""
        _Fonts.ensure()
        d, s = self.state.data, self.state
        for k, g in enumerate(d.group_ids):
            figure = s.group_texts.get(g)
            if not figure:
                continue
            if g in d.placement.collapsed:
                if scale * _Fonts.title.pixelSize() >= LABEL_PX and \
                        "\u00b7" in self.box_texts(g, float(d.gx1[k] - d.gx0[k]))[1]:
                    return True
            elif scale * _Fonts.frame.pixelSize() >= LABEL_PX and "\u00b7" in self.frame_title_text(g)[0]:
                return True
        return False

    def kernel_boxes_shown(self) -> bool:
        """Whether a collapsed group coloured by its figure (``CanvasState.group_fills``) is shown."""
        d = self.state.data
        return any(g in d.placement.collapsed and g in self.state.group_fills for g in d.group_ids)

    def float_boxes(self) -> set[int]:
        """The collapsed groups holding a node kept float (``CanvasState.floats``): drawn with the dashed outline
        such a node has, which the op legend's "kept float" note names (cached for the set of nodes marked)."""
        s, d = self.state, self.state.data
        key = (frozenset(s.floats), frozenset(d.placement.collapsed))
        if self._floats_cache is None or self._floats_cache[0] != key:
            marked = np.zeros(len(d.structure.names), dtype=bool)
            marked[list(s.floats)] = True
            boxes = {g for g in d.placement.collapsed if marked[d.hierarchy.members(g)].any()} if s.floats else set()
            self._floats_cache = (key, boxes)
        return self._floats_cache[1]

    def titles_colors(self, label: Label) -> tuple[QColor, QColor]:
        """The chip and text colours of a screen-size title: its group's fill (a collapsed box's aggregate,
        an open frame's tint), nearly opaque, and the text colour the box or title bar uses."""
        s, d = self.state, self.state.data
        if label.node >= 0:  # a single node's op type: on the node's own fill
            fill = s.fills[label.node] if label.node < len(s.fills) else NO_VALUE
            chip = QColor(fill)
            chip.setAlpha(230)
            return chip, text_color(fill)
        g = d.group_ids[label.k]
        fill = s.group_fills.get(g, _BOX_FILL) if label.collapsed else self.frame_tint(d.hierarchy.depth[g])
        chip = QColor(fill)
        chip.setAlpha(230)
        return chip, text_color(fill) if label.collapsed else FRAME_TITLE[self.dark]

    def title_mark(self, label: Label) -> QColor | None:
        """The bar under a screen-size title: a node's op type on an integer kernel gets the kernel bar its box
        draws under it (``items.kernel_band``, which the chip covers); None for any other title."""
        return KERNEL_BAND if label.node >= 0 and label.node in self.state.kernels else None

    def box_texts(self, g: int, width: float) -> tuple[str, str]:
        """The title and second line collapsed group ``g`` shows in a box ``width`` scene pixels wide."""
        _Fonts.ensure()
        h = self.state.data.hierarchy
        title = QFontMetricsF(_Fonts.title).elidedText(h.titles[g], title_elide(h), width - TITLE_CHROME)
        return title, box_info(QFontMetricsF(_Fonts.info), len(h.members(g)), self.state.group_texts.get(g),
                               info_room(width))

    def _paint_box_text(self, painter: QPainter, box: QRectF, g: int, fill: QColor) -> None:
        painter.setPen(text_color(fill))
        painter.setFont(_Fonts.title)
        painter.drawText(chevron_rect(box).adjusted(4, 4, 0, 0), Qt.AlignmentFlag.AlignCenter, "\u25b8")
        title, info = self.box_texts(g, box.width())
        painter.drawText(box.adjusted(CHEVRON_W, 6, -8, -box.height() / 2),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title)
        painter.setFont(_Fonts.info)
        painter.drawText(box.adjusted(INFO_LEFT, box.height() / 2, -INFO_RIGHT, -6),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, info)

    def frame_title_text(self, g: int) -> tuple[str, QRectF]:
        """The title line open group ``g`` shows (:func:`frame_title`) and the scene rectangle its text takes
        in the title bar (as wide as the text, as high as the bar; drawn at the scene-sized font)."""
        _Fonts.ensure()
        s = self.state
        h = s.data.hierarchy
        box = s.data.group_rect(g)
        metrics = QFontMetricsF(_Fonts.frame)
        text = frame_title(metrics, h.titles[g], len(h.members(g)), s.group_texts.get(g), box.width() - 16,
                           title_elide(h))
        return text, QRectF(box.left() + 8, box.top() + 2, min(metrics.horizontalAdvance(text), box.width() - 16),
                            TITLE_BAR)

    def _paint_frame_title(self, painter: QPainter, box: QRectF, g: int) -> None:
        painter.setPen(FRAME_TITLE[self.dark])
        painter.setFont(_Fonts.frame)
        text, _rect = self.frame_title_text(g)
        painter.drawText(QRectF(box.left() + 8, box.top() + 2, box.width() - 16, TITLE_BAR),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, text)


#: margins (scene pixels) of a collapsed box's second line, left and right
INFO_LEFT, INFO_RIGHT = 10.0, 8.0
#: room (scene pixels) the second line keeps spare for glyphs drawn wider at a zoom than the font measures
INFO_SPARE = 3.0


def info_room(width: float) -> float:
    """Width (scene pixels) a collapsed box ``width`` wide gives its second line's text: the rectangle it is
    drawn in, less :data:`INFO_SPARE` (the line was elided to 2 px more than that rectangle, which cut its
    last glyph, "ConvInteger u8/u" at the box's edge); a line cut shorter ends in "…", whole in the box's
    tooltip."""
    return width - INFO_LEFT - INFO_RIGHT - INFO_SPARE


def box_info(metrics: QFontMetricsF, count: int, aggregate: str | None, width: float) -> str:
    """The second line of a collapsed box that fits ``width`` pixels: ``"13 nodes · aggregate"``; when
    too long, ``"13 · aggregate"`` (the aggregate, e.g. ``"ConvInteger u8/u8"``, says more than the
    word; the tooltip and the open frame give the count in full), cut at the end if still too long."""
    if not aggregate:
        return metrics.elidedText(f"{count} nodes", Qt.TextElideMode.ElideRight, width)
    full = f"{count} nodes \u00b7 {aggregate}"
    if metrics.horizontalAdvance(full) <= width:
        return full
    return metrics.elidedText(f"{count} \u00b7 {aggregate}", Qt.TextElideMode.ElideRight, width)


def title_elide(h) -> Qt.TextElideMode:
    """How a group title too long for its box is cut: a scope path in the middle (its start and its last
    scope part, ``"model.22/…/cv3.2"``, tell it apart); a flat-name block at the end, since its start is
    what differs between neighbours (``"Conv_12_quant – Mu…"``; in the middle every box read
    ``"Conv_1…d_node"``)."""
    return Qt.TextElideMode.ElideRight if h.source == "blocks" else Qt.TextElideMode.ElideMiddle


def frame_title(metrics: QFontMetricsF, title: str, count: int, aggregate: str | None, width: float,
                elide: Qt.TextElideMode = Qt.TextElideMode.ElideMiddle) -> str:
    """The title line of an open group that fits ``width`` pixels: ``"▾  title  (n nodes · aggregate)"``;
    when too long, the aggregate goes first, then the node count (the group's tooltip gives both, and its
    collapsed box the count), and only then is the title elided (``elide``, :func:`title_elide`: a scope path in
    the middle, a block's at the end) to the whole width. A frame one node wide (224 px of title line) kept the
    count and cut its name to "atte…on_0  (3 nodes)" for ``attention_output_dense_projection_0``."""
    full = f"\u25be  {title}  ({count} nodes" + (f" \u00b7 {aggregate})" if aggregate else ")")
    if metrics.horizontalAdvance(full) <= width:
        return full
    head, tail = "\u25be  ", f"  ({count} nodes)"
    if metrics.horizontalAdvance(head + title + tail) <= width:
        return head + title + tail
    room = width - metrics.horizontalAdvance(head)
    if metrics.horizontalAdvance(title) <= room:
        return head + title
    if room >= metrics.horizontalAdvance("m\u2026m"):
        return head + metrics.elidedText(title, elide, room)
    return metrics.elidedText(head + title, elide, width)
