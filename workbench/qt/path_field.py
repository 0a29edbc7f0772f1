"""A line edit for a file path whose end shows whole while it is not being edited.

A QLineEdit scrolled to the end of a path longer than the field starts its text at a pixel, not at a letter:
the Calibration panel's Path field in a 1024 x 700 window read "n_calib.npz" with a sliver of the "n" before it
at the left edge. :class:`PathField` draws such a path elided at its start instead ("…n_calib.npz", whole
letters); with the keyboard focus it is the plain line edit (the whole path to edit).
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QLineEdit, QStyle, QStyleOptionFrame

#: QLineEdit's own margin between its contents rectangle and its text, px (Qt's ``horizontalMargin``)
HORIZONTAL_MARGIN = 2


class PathField(QLineEdit):
    """A QLineEdit that shows a path too long for it as "…" and its end (:meth:`shown_text`) while it has no
    keyboard focus; ``text()`` is always the whole path."""

    def text_room(self) -> QRect:
        """Where the field draws its text, widget pixels (the style's contents rectangle less the text margins
        and the line edit's own margin)."""
        opt = QStyleOptionFrame()
        self.initStyleOption(opt)
        room = self.style().subElementRect(QStyle.SubElement.SE_LineEditContents, opt, self)
        room = room.marginsRemoved(self.textMargins())
        return room.adjusted(HORIZONTAL_MARGIN, 0, -HORIZONTAL_MARGIN, 0)

    def shown_text(self) -> str:
        """The text as drawn: the whole path while focused or when it fits, else elided at its start to
        :meth:`text_room`'s width in whole characters ("…n_calib.npz")."""
        text = self.text()
        if self.hasFocus() or not text or self.echoMode() != QLineEdit.EchoMode.Normal:
            return text
        width = self.text_room().width()
        if self.fontMetrics().horizontalAdvance(text) <= width:
            return text
        return self.fontMetrics().elidedText(text, Qt.TextElideMode.ElideLeft, width)

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        shown = self.shown_text()
        if shown == self.text():
            super().paintEvent(event)
            return
        painter = QPainter(self)
        opt = QStyleOptionFrame()
        self.initStyleOption(opt)
        self.style().drawPrimitive(QStyle.PrimitiveElement.PE_PanelLineEdit, opt, painter, self)
        group = QPalette.ColorGroup.Active if self.isEnabled() else QPalette.ColorGroup.Disabled
        painter.setPen(self.palette().color(group, QPalette.ColorRole.Text))
        painter.drawText(self.text_room(), int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), shown)
        painter.end()
