"""A dock's widget keeps the height its word-wrapped labels need at its width.

QMainWindow sizes a dock from its widget's minimum size hint, which counts a word-wrapped QLabel as one line;
the layout then gives each label the lines it needs at the dock's width (height for width) and takes them
from the other parts, squeezing them below their own minimum. In the Errors dock of a 1024 x 700 window
that left the unit histogram 119 px of its 195 px minimum and its legend out of view.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget

_WATCHED = (QEvent.Type.Resize, QEvent.Type.LayoutRequest)


class WrappedHeight(QObject):
    """Event filter: on every resize and layout request of ``widget`` its minimum height becomes what its
    layout needs at its current width (``QLayout.totalMinimumHeightForWidth``, pixels), wrapped lines counted."""

    def __init__(self, widget: QWidget):
        super().__init__(widget)
        self.widget = widget
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.widget and event.type() in _WATCHED:
            self.hold()
        return False

    def hold(self) -> int:
        """Set and return the widget's minimum height (0: no layout)."""
        lay = self.widget.layout()
        need = max(0, lay.totalMinimumHeightForWidth(self.widget.width())) if lay is not None else 0
        if need != self.widget.minimumHeight():
            self.widget.setMinimumHeight(need)
        return need
