"""Colour swatches of the canvas legend: a filled box with a grey outline, as rich text.

A swatch drawn as a span's background had no edge, so the near-white fills (Constant / Identity
``#eeeeee``, the dtype ``float`` ``#eceff1``, "no value" ``#d9d9d9``) vanished on the legend's white
background. Qt's rich text draws no border around a span, so each swatch is a small PNG (fill, 1 px
outline) inlined as a ``data:`` URI image, one per colour and size, cached.
"""

from __future__ import annotations

import base64
import html
from functools import lru_cache

from PySide6.QtCore import QBuffer, QByteArray, QIODevice
from PySide6.QtGui import QColor, QFontMetrics, QGuiApplication, QImage, QPainter

#: the swatches' outline: mid grey, at least 4.5:1 against the legend's white background (WCAG contrast)
OUTLINE = QColor("#767676")


def swatch_size() -> tuple[int, int]:
    """(width, height) of a swatch in px for the application font: the font's ascent high (a capital
    letter's height and a little more), 1.6x as wide, at least 12 x 8."""
    metrics = QFontMetrics(QGuiApplication.font())
    height = max(8, metrics.ascent())
    return max(12, round(1.6 * height)), height


@lru_cache(maxsize=256)
def _png_uri(fill: str, width: int, height: int, outline: str) -> str:
    """``data:image/png;base64,...`` of a ``width`` x ``height`` box of ``fill`` (#rrggbb) with a 1 px
    ``outline`` (#rrggbb) edge."""
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor(fill))
    painter = QPainter(image)
    painter.setPen(QColor(outline))
    painter.drawRect(0, 0, width - 1, height - 1)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(bytes(data)).decode("ascii")


def swatch_html(color: QColor, label: str, outline: QColor | str = OUTLINE) -> str:
    """Rich text of one legend row: the swatch of ``color`` outlined in ``outline`` (:data:`OUTLINE` on a light
    background; the dark legend's lighter grey on its dark one), a space, ``label`` (escaped)."""
    width, height = swatch_size()
    uri = _png_uri(color.name(), width, height, QColor(outline).name())
    return f'<img src="{uri}" width="{width}" height="{height}">&nbsp;{html.escape(label)}'
