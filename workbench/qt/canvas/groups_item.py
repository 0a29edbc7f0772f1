"""One item that draws the shown node groups: frames of open groups and boxes of collapsed ones.

A collapsed box shows a chevron (click it, or double-click the box, to open), the group's title,
its node count and the aggregate of the active colour figure (worst SQNR inside, fraction
quantized, or the most common op); an open group is a tinted frame with the same title bar.
Titles use pixel-sized fonts scaled with the scene, so they stay readable at "Fit graph" where
node text is too small.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from workbench.qt.canvas.colors import SELECTION, text_color
from workbench.qt.canvas.items import CanvasState

#: Height of an open group's title bar and width of the chevron hit area (scene pixels).
TITLE_BAR, CHEVRON_W = 30.0, 30.0
_FRAME_TINTS = (QColor("#eef3fb"), QColor("#f6f1e7"), QColor("#eef6ee"), QColor("#f4eef6"))
_BOX_FILL = QColor("#dfe7f3")


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


class GroupsItem(QGraphicsItem):
    """Draws ``state.data``'s shown groups; the view refreshes it when colours or selection change."""

    def __init__(self, state: CanvasState):
        super().__init__()
        self.state = state
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(-2)
        d = state.data
        self._bounds = d.bounds.adjusted(-4, -4, 4, 4)
        h = d.hierarchy
        # open frames outermost first, then the boxes on top
        self._order = sorted(range(len(d.group_ids)), key=lambda k: (d.group_ids[k] in d.placement.collapsed,
                                                                      h.depth[d.group_ids[k]]))

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        _Fonts.ensure()
        d, s = self.state.data, self.state
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        exposed = option.exposedRect
        h = d.hierarchy
        for k in self._order:
            g = d.group_ids[k]
            box = QRectF(d.gx0[k], d.gy0[k], d.gx1[k] - d.gx0[k], d.gy1[k] - d.gy0[k])
            if not box.intersects(exposed):
                continue
            collapsed = g in d.placement.collapsed
            selected = g in s.group_selected
            fill = s.group_fills.get(g, _BOX_FILL) if collapsed else _FRAME_TINTS[(h.depth[g] - 1) % 4]
            pen = QPen(SELECTION, 3.0) if selected else QPen(QColor("#5a6b85" if collapsed else "#9aa8bd"),
                                                               1.6 if collapsed else 1.0)
            painter.setPen(pen)
            painter.setBrush(fill)
            painter.drawRoundedRect(box, 10.0, 10.0)
            if lod * 17 < 3.5:  # text would be under ~3.5 px: boxes only
                continue
            if collapsed:
                self._paint_box_text(painter, box, g, fill)
            else:
                self._paint_frame_title(painter, box, g)

    def box_texts(self, g: int, width: float) -> tuple[str, str]:
        """The title and second line collapsed group ``g`` shows in a box ``width`` scene pixels wide."""
        _Fonts.ensure()
        h = self.state.data.hierarchy
        title = QFontMetricsF(_Fonts.title).elidedText(h.titles[g], title_elide(h), width - CHEVRON_W - 10)
        return title, box_info(QFontMetricsF(_Fonts.info), len(h.members(g)), self.state.group_texts.get(g), width - 16)

    def _paint_box_text(self, painter: QPainter, box: QRectF, g: int, fill: QColor) -> None:
        painter.setPen(text_color(fill))
        painter.setFont(_Fonts.title)
        painter.drawText(chevron_rect(box).adjusted(4, 4, 0, 0), Qt.AlignmentFlag.AlignCenter, "\u25b8")
        title, info = self.box_texts(g, box.width())
        painter.drawText(box.adjusted(CHEVRON_W, 6, -8, -box.height() / 2),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title)
        painter.setFont(_Fonts.info)
        painter.drawText(box.adjusted(10, box.height() / 2, -8, -6),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, info)

    def _paint_frame_title(self, painter: QPainter, box: QRectF, g: int) -> None:
        s = self.state
        h = s.data.hierarchy
        painter.setPen(QColor("#2b3a52"))
        painter.setFont(_Fonts.frame)
        text = frame_title(QFontMetricsF(_Fonts.frame), h.titles[g], len(h.members(g)), s.group_texts.get(g),
                           box.width() - 16, title_elide(h))
        painter.drawText(QRectF(box.left() + 8, box.top() + 2, box.width() - 16, TITLE_BAR),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, text)


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
    when too long, the aggregate goes first (the tooltip has it), then the title is elided (``elide``,
    :func:`title_elide`: a scope path in the middle, a block's at the end), keeping the node count."""
    full = f"\u25be  {title}  ({count} nodes" + (f" \u00b7 {aggregate})" if aggregate else ")")
    if metrics.horizontalAdvance(full) <= width:
        return full
    head, tail = "\u25be  ", f"  ({count} nodes)"
    room = width - metrics.horizontalAdvance(head) - metrics.horizontalAdvance(tail)
    if metrics.horizontalAdvance(title) <= room:
        return head + title + tail
    if room >= metrics.horizontalAdvance("m\u2026m"):
        return head + metrics.elidedText(title, elide, room) + tail
    return metrics.elidedText(head + title, elide, width)
