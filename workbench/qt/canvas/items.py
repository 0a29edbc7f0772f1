"""Detailed graphics items of the canvas: one NodeItem per visible node (created lazily) and one
EdgesItem that draws all edges from pre-built tiled paths."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontInfo, QFontMetricsF, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from workbench.qt.canvas.colors import FLOAT_MARK, KERNEL_BAND, KERNEL_MARK, NO_VALUE, SELECTION, badge_color
from workbench.qt.canvas.scene_data import ARROW, BOW, NODE_H, NODE_W, SceneData

#: Below this view scale, node items are hidden and the overview item draws the graph.
DETAIL_SCALE = 0.3
#: Below this scale a node item draws its op type only (no name, no badges).
TEXT_SCALE = 0.55
#: Smallest pixel size of badge text on screen (edge Q/DQ badges, node tags, INT marks): zoomed out
#: the badges grow in the scene to keep it, up to the op type's size; below that zoom they are hidden.
BADGE_MIN_PX = 8.0
#: Smallest point size an op type too wide for its node box is drawn at before it is elided (the op font
#: is 10 pt bold; the node name under it 7.5 pt)
OP_MIN_PT = 7.0
#: Scene pixels between a node tag's right end and the arrow head at its box's top centre
TAG_GAP = 3.0
#: The bar that marks an integer kernel where its "INT" pill is not drawn (zoomed out): scene pixels of its height,
#: and of its margin from the box's left, right and bottom edges (under the op type, which is centred in the box)
KERNEL_BAND_H = 14.0
KERNEL_BAND_MARGIN = 6.0
EDGE_COLOR = QColor("#7a7a7a")


@dataclass
class CanvasState:
    """What the items read when they paint; owned and updated by the view."""

    data: SceneData
    fills: list[QColor] = field(default_factory=list)
    fill_keys: list = field(default_factory=list)  # what each fill was made from (op, dtype, dB)
    texts: list[QColor] = field(default_factory=list)
    selected: set[int] = field(default_factory=set)
    badges: dict[int, str] = field(default_factory=dict)
    kernels: dict[int, str] = field(default_factory=dict)  # node -> integer kernel (an "INT" mark)
    compute: dict[int, str] = field(default_factory=dict)  # quantized compute node -> "uint8/int8" (a file's)
    floats: set[int] = field(default_factory=set)  # nodes the recipe keeps float (a dashed outline)
    float_mark: QColor = field(default_factory=lambda: QColor(FLOAT_MARK))  # that outline's colour (the theme's)
    group_fills: dict[int, QColor] = field(default_factory=dict)  # collapsed group -> fill (aggregate)
    group_texts: dict[int, str] = field(default_factory=dict)  # group -> aggregate text ("worst 12.0 dB")
    group_selected: set[int] = field(default_factory=set)  # collapsed groups holding a selected node
    op_colors: dict[str, QColor] = field(default_factory=dict)  # op type -> fill (colors.op_palette)
    #: view scale -> the nodes whose op type the groups item draws at screen size there (GroupsItem.labelled_nodes)
    screen_ops: Callable[[float], frozenset[int]] | None = None


def short_name(name: str, group_path: str | None = None) -> str:
    """A node's name without the scope its group frame already shows: ``"/model.9/m/MaxPool"``
    in group ``"model.9"`` -> ``"m/MaxPool"``; outside any group (or for another scope) the last
    ``/`` part."""
    if group_path:
        prefix = f"/{group_path}/"
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix):]
    tail = name.rstrip("/").rsplit("/", 1)[-1]
    return tail or name


def fit_shape(shape: str, metrics: QFontMetricsF, room: float) -> str:
    """A node's output shape text (``"p2o.DynamicDimension.0 x 480 x ? x ?"``) as it fits ``room`` pixels in the font
    of ``metrics``: whole when it fits, else its named dims cut at their end, the longest first, a character at a time
    (``"p2o.Dyna… x 480 x ? x ?"``), so every size and every " x " stays; elided in the middle only when one letter
    of each name is still too wide. Eliding the whole text in the middle read ``"p2o.Dynamic…480 x ? x ?"`` on every
    node of ppocrv4_rec: three dims, the first of them "p2o.Dynamic…480"."""
    if metrics.horizontalAdvance(shape) <= room:
        return shape
    dims = shape.split(" x ")
    keep = {k: len(d) for k, d in enumerate(dims) if not (d.isdigit() or d == "?")}  # named dims -> characters kept

    def text() -> str:
        return " x ".join(d[:keep[k]] + "\u2026" if keep.get(k, len(d)) < len(d) else d for k, d in enumerate(dims))

    while keep and max(keep.values()) > 1:
        longest = max(keep, key=keep.__getitem__)
        keep[longest] -= 1
        if metrics.horizontalAdvance(text()) <= room:
            return text()
    return metrics.elidedText(text(), Qt.TextElideMode.ElideMiddle, room)


class _Fonts:
    op: QFont | None = None
    name: QFont | None = None
    badge: QFont | None = None
    _op_text: dict[str, tuple[str, QFont]] = {}
    _shape_text: dict[str, str] = {}
    _badges: dict[float, QFont] = {}

    @classmethod
    def shape_label(cls, shape: str) -> str:
        """:func:`fit_shape` of ``shape`` in the name font on a node box, cached per shape text."""
        label = cls._shape_text.get(shape)
        if label is None:
            label = cls._shape_text[shape] = fit_shape(shape, QFontMetricsF(cls.name), NODE_W - 10)
        return label

    @classmethod
    def op_label(cls, op_type: str) -> tuple[str, QFont]:
        """(text, font) of ``op_type`` on a node box, cached per op type: the whole name in the op font, or
        in a smaller one (down to :data:`OP_MIN_PT`, 0.5 pt steps) when it is wider than the box's
        ``NODE_W - 10`` px ("QLinearAveragePool" at 9 pt in DejaVu Sans), elided in the middle only when it does not fit
        even then ("Simplified…Normalization"): two long op types that share their ends
        (QLinearAveragePool, QLinearGlobalAveragePool) stay told apart."""
        label = cls._op_text.get(op_type)
        if label is None:
            room, font = NODE_W - 10, cls.op
            while QFontMetricsF(font).horizontalAdvance(op_type) > room and font.pointSizeF() > OP_MIN_PT:
                font = QFont(font)
                font.setPointSizeF(max(OP_MIN_PT, font.pointSizeF() - 0.5))
            label = cls._op_text[op_type] = (
                QFontMetricsF(font).elidedText(op_type, Qt.TextElideMode.ElideMiddle, room), font)
        return label

    @classmethod
    def ensure(cls) -> None:
        if cls.op is None:
            cls.op = QFont()
            cls.op.setPointSizeF(10.0)
            cls.op.setBold(True)
            cls.name = QFont()
            cls.name.setPointSizeF(7.5)
            cls.badge = QFont()
            cls.badge.setPointSizeF(7.0)
            cls.badge.setBold(True)

    @classmethod
    def badge_at(cls, k: float) -> QFont:
        """The badge font ``k`` times as large (k rounded to 0.05; cached)."""
        k = round(k * 20) / 20
        font = cls._badges.get(k)
        if font is None:
            font = cls._badges[k] = QFont(cls.badge)
            font.setPointSizeF(cls.badge.pointSizeF() * k)
        return font


def _font_px(font: QFont) -> float:
    return float(font.pixelSize()) if font.pixelSize() > 0 else float(QFontInfo(font).pixelSize())


def op_text_px() -> float:
    """Pixel height of the op type a node box draws at scale 1 (its scene-sized font)."""
    _Fonts.ensure()
    return _font_px(_Fonts.op)


def badge_factor(lod: float) -> float | None:
    """How much larger than its own size badge text is drawn at view scale ``lod`` so that it is at
    least :data:`BADGE_MIN_PX` pixels on screen (1.0 when it is already); None (badges hidden) where
    that would make it larger than the op type's text."""
    _Fonts.ensure()
    need = BADGE_MIN_PX / max(lod, 1e-9)
    if need > _font_px(_Fonts.op):
        return None
    return max(1.0, need / _font_px(_Fonts.badge))


def max_badge_factor() -> float:
    """The largest ``k`` :func:`badge_factor` gives (badges as large as the op type's text, just before they hide)."""
    _Fonts.ensure()
    return max(1.0, _font_px(_Fonts.op) / _font_px(_Fonts.badge))


def _pill_width(text: str, k: float) -> float:
    font = _Fonts.badge_at(k) if k != 1.0 else _Fonts.badge
    return QFontMetricsF(font).horizontalAdvance(text) + 8.0 * k


def tag_rect(text: str, k: float) -> QRectF:
    """Where a node's tag pill (``"w:i8 b:i32"``) is drawn at size ``k``, in the node item's coordinates (origin at
    the box's centre, scene pixels): from 2 px left of the box, its bottom 5 px into the box, 13 ``k`` high; moved
    left, past the box's left end, when it would come within :data:`TAG_GAP` of the arrow head every incoming edge
    ends in at the box's top centre (``ARROW`` either side). Zoomed out the pill grows up to 1.43x (badge_factor):
    nudenet_320n's "w:i8 b:i32" reached 13 px over the arrow head on 58 of its 59 tagged Convs."""
    _Fonts.ensure()
    width = _pill_width(text, k)
    left = min(-NODE_W / 2 - 2.0, -ARROW - TAG_GAP - width)
    return QRectF(left, -NODE_H / 2 + 5.0 - 13.0 * k, width, 13.0 * k)


def kernel_band(x0: float, y0: float) -> QRectF:
    """The bar that marks an integer kernel zoomed out (:data:`KERNEL_BAND`), for a node box whose top-left corner is
    at (``x0``, ``y0``): across the box's lower part, under its op type."""
    m = KERNEL_BAND_MARGIN
    return QRectF(x0 + m, y0 + NODE_H - m - KERNEL_BAND_H, NODE_W - 2 * m, KERNEL_BAND_H)


def _pill(painter: QPainter, x: float, y: float, text: str, fill: QColor, right: bool = False, k: float = 1.0) -> None:
    """Small rounded label at (x, y) (top-left, or top-right when ``right``), ``k`` times its own size."""
    font = _Fonts.badge_at(k) if k != 1.0 else _Fonts.badge
    painter.setFont(font)
    w = _pill_width(text, k)
    rect = QRectF(x - w if right else x, y, w, 13.0 * k)
    painter.setPen(QPen(QColor("#555555"), 0.8))
    painter.setBrush(fill)
    painter.drawRoundedRect(rect, 5.0 * k, 5.0 * k)
    painter.setPen(QColor("#111111"))
    painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)


class NodeItem(QGraphicsItem):
    """A node drawn as a rounded box: op type, short name, output shape, user badge, Q/DQ tag ("in:u8 w:i8 b:i32"),
    subgraph marker. Below ``TEXT_SCALE`` only the op type is drawn."""

    def __init__(self, state: CanvasState, index: int, parent: QGraphicsItem | None = None):
        super().__init__(parent)
        self.state = state
        self.index = index
        data = state.data
        self.setPos((data.x0[index] + data.x1[index]) / 2, (data.y0[index] + data.y1[index]) / 2)
        self.setAcceptHoverEvents(False)
        tag = state.data.structure.node_tags.get(index)
        # pills grow to -14 and +8; a long tag reaches left of the box (tag_rect)
        left = min(-NODE_W / 2 - 3, tag_rect(tag, max_badge_factor()).left() - 1) if tag else -NODE_W / 2 - 3
        self._bounds = QRectF(left, -NODE_H / 2 - 15, NODE_W / 2 + 3 - left, NODE_H + 24)

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        _Fonts.ensure()
        s, i = self.state, self.index
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        box = QRectF(-NODE_W / 2, -NODE_H / 2, NODE_W, NODE_H)
        selected = i in s.selected
        painter.setPen(QPen(SELECTION, 3.0) if selected else QPen(QColor("#505050"), 1.0))
        painter.setBrush(s.fills[i] if i < len(s.fills) else NO_VALUE)
        painter.drawRoundedRect(box, 6.0, 6.0)
        if i in s.floats:  # kept float: a dashed outline around the box, readable at any zoom
            painter.setPen(QPen(s.float_mark, 2.5, Qt.PenStyle.DashLine))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(box.adjusted(-2.5, -2.5, 2.5, 2.5), 8.0, 8.0)
        st = s.data.structure
        if st.has_subgraph[i]:  # double border + marker: the node carries a body graph
            painter.setPen(QPen(QColor("#6a1b9a"), 1.2))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(box.adjusted(3, 3, -3, -3), 4.0, 4.0)
            painter.drawText(QRectF(box.left() + 6, box.top() + 2, 20, 14), Qt.AlignmentFlag.AlignLeft, "\u25a4")
        painter.setPen(s.texts[i] if i < len(s.texts) else QColor("#111111"))
        op, op_font = _Fonts.op_label(st.op_types[i])
        painter.setFont(op_font)
        if lod < TEXT_SCALE:
            if i in s.kernels:  # no "INT" pill at this zoom: the bar under the op type stands for it
                self._band(painter, box)
            if s.screen_ops is None or i not in s.screen_ops(lod):  # else drawn at screen size over the box
                painter.drawText(box, Qt.AlignmentFlag.AlignCenter, op)
            return
        third = NODE_H / 3
        painter.drawText(box.adjusted(4, 2, -4, -2 * third + 2), Qt.AlignmentFlag.AlignCenter, op)
        painter.setFont(_Fonts.name)
        metrics = QFontMetricsF(_Fonts.name)
        h = s.data.hierarchy
        group = h.paths[h.node_group[i]] if h is not None and h.node_group[i] >= 0 else None
        name = metrics.elidedText(short_name(st.names[i], group), Qt.TextElideMode.ElideMiddle, NODE_W - 10)
        painter.drawText(box.adjusted(5, third, -5, -third), Qt.AlignmentFlag.AlignCenter, name)
        shape = st.out_shapes[i] if i < len(st.out_shapes) else ""
        if shape:
            shape = _Fonts.shape_label(shape)
            painter.drawText(box.adjusted(5, 2 * third - 2, -5, -2), Qt.AlignmentFlag.AlignCenter, shape)
        k = badge_factor(lod)
        if k is None:  # badge text would be unreadable; the "INT" pill as large as the op type, as it is at its limit
            if i in s.kernels:
                k = max_badge_factor()
                _pill(painter, box.right() + 2, box.bottom() + 8 - 13.0 * k, "INT", KERNEL_MARK, right=True, k=k)
            return
        top = box.top() + 5 - 13.0 * k  # the pills above the box grow upward (their bottom at +5)
        if i in s.badges:
            _pill(painter, box.right() + 2, top, s.badges[i], QColor("#fff59d"), right=True, k=k)
        if i in st.node_tags:
            tag = st.node_tags[i]
            _pill(painter, tag_rect(tag, k).left(), top, tag, QColor("#ffe0b2"), k=k)
        if i in s.kernels:  # an integer kernel (or a QDQ unit onnxruntime fuses into one); bottom at +8
            _pill(painter, box.right() + 2, box.bottom() + 8 - 13.0 * k, "INT", KERNEL_MARK, right=True, k=k)


    def _band(self, painter: QPainter, box: QRectF) -> None:
        """The kernel bar (:func:`kernel_band`), leaving the painter's pen and font as they were."""
        pen = painter.pen()
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(KERNEL_BAND)
        painter.drawRect(kernel_band(box.left(), box.top()))
        painter.setPen(pen)


class EdgesItem(QGraphicsItem):
    """All edges: straight hairlines when zoomed out, curves with arrows and Q/DQ badges when zoomed in.

    Only the tiles intersecting the exposed rectangle are drawn, so panning a large graph stays cheap.
    """

    def __init__(self, data: SceneData, color: QColor = EDGE_COLOR):
        super().__init__()
        self.data = data
        self.color = QColor(color)  # the theme's edge colour (GraphCanvas.set_theme_colors)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(-1)
        self._bounds = data.bounds.adjusted(-20, -20, 20 + BOW, 20)  # long edges bow right
        self._highlight = QPainterPath()

    def boundingRect(self) -> QRectF:
        return self._bounds

    def set_highlight(self, nodes: set[int]) -> None:
        """Draw the edges of ``nodes`` in the selection colour (skipped for huge selections)."""
        self._highlight = self.data.edge_path(nodes)
        self.update()

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        painter.setBrush(Qt.BrushStyle.NoBrush)
        if lod < DETAIL_SCALE:
            painter.setPen(QPen(self.color, 0))  # cosmetic hairline
            painter.drawPath(self.data.straight_edges)
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(QPen(self.color, 1.4))
        exposed = option.exposedRect
        for tile in self.data.edge_tiles:
            if tile.rect.intersects(exposed):
                painter.drawPath(tile.path())
        if not self._highlight.isEmpty():
            painter.setPen(QPen(SELECTION, 2.2))
            painter.drawPath(self._highlight)


class EdgeBadgesItem(QGraphicsItem):
    """The Q/DQ badges of folded pairs ("u8", "i8") when zoomed in: above every edge, grey or
    coloured by dtype / SQNR (z -0.5), so no edge strikes through them; below the nodes."""

    def __init__(self, data: SceneData):
        super().__init__()
        self.data = data
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(-0.25)
        self._bounds = data.bounds.adjusted(-20, -20, 20 + BOW, 20)

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        k = badge_factor(lod)
        if lod < TEXT_SCALE or k is None or not self.data.badge_points:
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        _Fonts.ensure()
        exposed = option.exposedRect
        for point, text in self.data.badge_points:
            if exposed.contains(point):
                _pill(painter, point.x() - 12 * k, point.y() - 6 * k, text, badge_color(text), k=k)
