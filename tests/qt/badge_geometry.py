"""Where the canvas draws a Q/DQ badge pill, and the badge sizes it draws, for tests of what badges keep off."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QFontMetricsF

from workbench.qt.canvas.items import _Fonts, max_badge_factor


def drawn_badge(point: QPointF, text: str, k: float) -> QRectF:
    """The rectangle ``items._pill`` draws a badge in at size ``k`` (the real font's advance)."""
    _Fonts.ensure()
    font = _Fonts.badge_at(k) if k != 1.0 else _Fonts.badge
    width = QFontMetricsF(font).horizontalAdvance(text) + 8.0 * k
    return QRectF(point.x() - 12 * k, point.y() - 6 * k, width, 13.0 * k)


def badge_sizes() -> list[float]:
    """The badge sizes drawn: 1.0 zoomed in, and the largest, zoomed out to just before badges hide."""
    return [1.0, max_badge_factor()]
