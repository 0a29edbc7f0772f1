"""Render workbench/resources/icons/workbench.svg to PNGs (16-256 px) with Qt's SVG renderer.

    .venv/bin/python packaging/render_icons.py

Re-run after editing the SVG and commit the PNGs (the app and the desktop integration use them).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SIZES = (16, 32, 48, 64, 128, 256)
ICONS = Path(__file__).resolve().parent.parent / "workbench" / "resources" / "icons"


def render(svg: Path, out_dir: Path, sizes=SIZES) -> list[Path]:
    """Write ``workbench-<size>.png`` (ARGB, transparent outside the shape) for each size."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication([])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg}: Qt cannot parse this SVG; fix it and run again.")
    written = []
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        path = out_dir / f"workbench-{size}.png"
        if not image.save(str(path), "PNG"):
            raise SystemExit(f"{path}: could not write the PNG; check the folder is writable.")
        written.append(path)
    return written


if __name__ == "__main__":
    for p in render(ICONS / "workbench.svg", ICONS):
        print(p.relative_to(ICONS.parent.parent.parent))
    sys.exit(0)
