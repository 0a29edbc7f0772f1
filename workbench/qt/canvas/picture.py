"""Writing a picture of a widget as PNG or SVG, atomically."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QPainter, QPixmap
from PySide6.QtSvg import QSvgGenerator


def write_picture(path: str | Path, size: QSize, pixmap: Callable[[], QPixmap],
                  paint: Callable[[QPainter], None]) -> tuple[int, int]:
    """Write a picture of ``size`` pixels to ``path``: ``pixmap()`` saved as PNG, or ``paint(painter)``
    drawn into an SVG, by the suffix. A temporary file in the same folder is renamed over ``path``
    (with the usual file mode), so a failure leaves nothing behind. Returns (width, height).

    Raises
    ------
    ValueError
        The suffix is neither ``.png`` nor ``.svg``.
    OSError
        The folder cannot be written.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg"):
        raise ValueError(f"{path}: a picture must end in .png or .svg")
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=suffix)
    os.close(fd)
    try:
        if suffix == ".png":
            if not pixmap().save(tmp, "PNG"):
                raise OSError(f"{path}: could not write the PNG")
        else:
            generator = QSvgGenerator()
            generator.setFileName(tmp)
            generator.setSize(size)
            generator.setViewBox(QRect(0, 0, size.width(), size.height()))
            generator.setTitle(path.stem)
            painter = QPainter(generator)
            try:
                paint(painter)
            finally:
                painter.end()
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a picture gets the usual file mode
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return size.width(), size.height()
