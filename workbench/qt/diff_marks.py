"""Marks of the float-vs-quantized panes drawn over a canvas's nodes (one scene item per pane).

* ``"folded"`` (float pane): the node is greyed and struck through, with a note under it naming
  the quantized node it went into ("folded into /conv/Conv") — a BatchNormalization folded into its
  Conv, a Relu or Clip fused into the quantization of its producer's output;
* ``"removed"`` (float pane): struck through, "removed";
* ``"float"`` (quantized pane): an orange frame, "left float" — a compute op the file did not quantize;
* ``"added"`` (quantized pane): a green frame, "added" — a node without a float counterpart.

:data:`MARK_COLORS` are the colours the panes' legend strip explains.
"""

from __future__ import annotations

from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

#: kind -> colour of its frame / strike
MARK_COLORS = {"folded": QColor("#616161"), "removed": QColor("#c62828"), "float": QColor("#ef6c00"),
               "added": QColor("#2e7d32")}
_COVER = QColor(255, 255, 255, 170)  # greys a folded node's own fill
_NOTE_H = 14.0


class DiffMarksItem(QGraphicsItem):
    """Frames, strikes and notes over node rectangles: ``marks`` is a list of (rect, kind, note)."""

    def __init__(self, marks: list[tuple[QRectF, str, str]]):
        super().__init__()
        self.marks = marks
        self.setZValue(5)  # over the node items (children of the canvas's container, z 0)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)  # clicks go to the canvas
        bounds = QRectF()
        for rect, _kind, _note in marks:
            bounds = bounds.united(rect.adjusted(-6, -6, 6, _NOTE_H + 6))
        self._bounds = bounds
        self._font = QFont()
        self._font.setPointSizeF(7.5)

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        painter.setFont(self._font)
        exposed = option.exposedRect
        for rect, kind, note in self.marks:
            if not rect.adjusted(-6, -6, 6, _NOTE_H + 6).intersects(exposed):
                continue
            color = MARK_COLORS[kind]
            if kind in ("folded", "removed"):
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(_COVER)
                painter.drawRoundedRect(rect, 6.0, 6.0)
                painter.setPen(QPen(color, 2.0))
                painter.drawLine(QLineF(rect.left() + 4, rect.center().y(), rect.right() - 4, rect.center().y()))
                painter.drawLine(QLineF(rect.topLeft(), rect.bottomRight()))
            else:
                pen = QPen(color, 3.0)
                pen.setStyle(Qt.PenStyle.DashLine if kind == "float" else Qt.PenStyle.SolidLine)
                painter.setPen(pen)
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.drawRoundedRect(rect.adjusted(-4, -4, 4, 4), 8.0, 8.0)
            if note and lod >= 0.55:  # the canvas's TEXT_SCALE: names are readable from here on
                painter.setPen(color)
                painter.drawText(QRectF(rect.left() - 40, rect.bottom() + 4, rect.width() + 80, _NOTE_H),
                                 Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextSingleLine, note)
