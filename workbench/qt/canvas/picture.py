"""Writing a picture of a widget as PNG or SVG, atomically."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from xml.sax.saxutils import escape

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRect, QRectF, QSize
from PySide6.QtGui import QPainter, QPixmap
from PySide6.QtSvg import QSvgGenerator

from workbench.core import api

#: a hover area of an SVG picture: (rectangle in the picture's pixels, the text its <title> shows)
Hover = tuple[QRectF, str]


def picture_bytes(suffix: str, size: QSize, title: str, pixmap: Callable[[], QPixmap],
                  paint: Callable[[QPainter], None], hover: Sequence[Hover] = ()) -> bytes:
    """The picture's file bytes: ``pixmap()`` encoded as PNG (``suffix`` ".png"), or ``paint(painter)`` drawn into
    an SVG of ``size`` pixels titled ``title`` (".svg"). Drawn in memory: Qt's file writers ignore a failed
    write (a full disk left a truncated SVG reported as written). An SVG also gets, last (on top, in the
    order given), one invisible rectangle per ``hover`` area with an SVG ``<title>`` holding its text, which
    viewers show on hover (a group's full name where its drawn title is elided); a PNG has no such thing.

    Raises
    ------
    OSError
        Qt could not encode the PNG.
    """
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if suffix == ".png":
        if not pixmap().save(buffer, "PNG"):
            raise OSError("could not encode the PNG")
    else:
        generator = QSvgGenerator()
        generator.setOutputDevice(buffer)
        generator.setSize(size)
        generator.setViewBox(QRect(0, 0, size.width(), size.height()))
        generator.setTitle(title)
        painter = QPainter(generator)
        try:
            paint(painter)
        finally:
            painter.end()
    buffer.close()
    out = bytes(data.data())
    if suffix == ".svg" and hover:
        out = _with_hover(out, hover)
    return out


def _with_hover(svg: bytes, hover: Sequence[Hover]) -> bytes:
    """``svg`` with a ``<g><title>text</title><rect .../></g>`` per hover area before its closing tag."""
    parts = []
    for rect, text in hover:
        parts.append(f'<g><title>{escape(text)}</title><rect x="{rect.x():.1f}" y="{rect.y():.1f}" '
                     f'width="{rect.width():.1f}" height="{rect.height():.1f}" fill="none" stroke="none" '
                     f'pointer-events="all"/></g>\n')
    end = svg.rindex(b"</svg>")
    return svg[:end] + "".join(parts).encode("utf-8") + svg[end:]


def write_picture(path: str | Path, size: QSize, pixmap: Callable[[], QPixmap],
                  paint: Callable[[QPainter], None], hover: Sequence[Hover] = ()) -> tuple[int, int]:
    """Write a picture of ``size`` pixels to ``path``: ``pixmap()`` saved as PNG, or ``paint(painter)``
    drawn into an SVG with the ``hover`` areas, by the suffix (:func:`picture_bytes`). A temporary file in the same folder, written and
    fsynced, is renamed over ``path`` (with the usual file mode), so a failure leaves nothing behind.
    Returns (width, height).

    Raises
    ------
    ValueError
        The suffix is neither ``.png`` nor ``.svg``.
    OSError
        Qt could not encode the PNG.
    ExportError
        The folder is missing or cannot be written, or the disk is full (one line naming ``path``).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg"):
        raise ValueError(f"{path}: a picture must end in .png or .svg")
    data = picture_bytes(suffix, size, path.stem, pixmap, paint, hover)
    api.atomic_write_bytes(path, data)
    return size.width(), size.height()
