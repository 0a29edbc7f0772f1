"""Writing a picture of a widget as PNG or SVG, atomically."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRect, QSize
from PySide6.QtGui import QPainter, QPixmap
from PySide6.QtSvg import QSvgGenerator

from workbench.core import api


def picture_bytes(suffix: str, size: QSize, title: str, pixmap: Callable[[], QPixmap],
                  paint: Callable[[QPainter], None]) -> bytes:
    """The picture's file bytes: ``pixmap()`` encoded as PNG (``suffix`` ".png"), or ``paint(painter)`` drawn into
    an SVG of ``size`` pixels titled ``title`` (".svg"). Drawn in memory: Qt's file writers ignore a failed
    write (a full disk left a truncated SVG reported as written).

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
    return bytes(data.data())


def write_picture(path: str | Path, size: QSize, pixmap: Callable[[], QPixmap],
                  paint: Callable[[QPainter], None]) -> tuple[int, int]:
    """Write a picture of ``size`` pixels to ``path``: ``pixmap()`` saved as PNG, or ``paint(painter)``
    drawn into an SVG, by the suffix (:func:`picture_bytes`). A temporary file in the same folder, written and
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
    data = picture_bytes(suffix, size, path.stem, pixmap, paint)
    api.atomic_write_bytes(path, data)
    return size.width(), size.height()
