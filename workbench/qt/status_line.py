"""The status bar's message line: a long message is cut at a word and ends with an ellipsis, never in the
middle of a word ("... Details: Calibration pan"); the whole message is in its tooltip (the window sets it).

:class:`StatusLine` keeps the whole text: :meth:`StatusLine.text` returns it, :meth:`StatusLine.shown_text`
the part drawn. :func:`word_elide` is the cut.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

ELLIPSIS = "\u2026"


def word_elide(text: str, metrics: QFontMetrics, width: int) -> str:
    """``text`` as it fits in ``width`` pixels: whole, else its longest start that ends at a word (a space)
    followed by an ellipsis; a first word wider than ``width`` is cut with Qt's right elision.

    The cut is a binary search over the spaces (a longer start is never narrower), so a message of thousands
    of words measures about log2(words) starts, not one per word (5,000 node names took 42 s)."""
    if metrics.horizontalAdvance(text) <= width:
        return text
    spaces = [i for i, c in enumerate(text) if c == " " and text[:i].strip()]
    best, lo, hi = None, 0, len(spaces) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        shown = f"{text[:spaces[mid]].rstrip()} {ELLIPSIS}"
        if metrics.horizontalAdvance(shown) <= width:
            best, lo = shown, mid + 1
        else:
            hi = mid - 1
    if best is not None:
        return best
    return metrics.elidedText(text, Qt.TextElideMode.ElideRight, max(width, 0))


class StatusLine(QLabel):
    """A one-line label that shows as much of its text as fits, cut at a word (:func:`word_elide`). It takes
    the width the status bar gives it (its text's width is not asked for: a long message never widens the
    window)."""

    def __init__(self, text: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self._full = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        self._full = str(text)
        self._fit()

    def text(self) -> str:
        """The whole text (what was set), not only the part drawn."""
        return self._full

    def shown_text(self) -> str:
        """The part of :meth:`text` drawn at the label's width."""
        return QLabel.text(self)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        width = self.contentsRect().width() - 2 * self.margin()
        QLabel.setText(self, word_elide(self._full, self.fontMetrics(), width) if width > 0 else self._full)


__all__ = ["ELLIPSIS", "StatusLine", "word_elide"]
