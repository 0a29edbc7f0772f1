"""Screen-size group titles keep their underscores (offscreen).

ddddocr_common_old_int8's boxes are titled "Conv_0_quant – Mul_2": at the default zoom every other one read
"Conv 0 quant – Mul 2". A title placed at a fractional pixel row drew its 1 px underscores blended over two
rows into the chip, too pale to see. Titles are now drawn on whole pixels.
"""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QColor, QFontMetricsF  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.qt.canvas.group_labels import label_font  # noqa: E402


def _longest_dark_run(image, left: int, right: int, top: int, bottom: int) -> int:
    """The longest run of dark pixels (lightness < 64) along one row of the rectangle."""
    best = 0
    for y in range(max(top, 0), min(bottom, image.height())):
        run = 0
        for x in range(max(left, 0), min(right, image.width())):
            run = run + 1 if QColor(image.pixel(x, y)).lightness() < 64 else 0
            best = max(best, run)
    return best


def test_titles_show_their_underscores(qtbot, window, open_file, corpus):
    open_file(window, corpus / "ddddocr_common_old_int8/model.onnx")  # as opened in the app, default size
    canvas = window.canvas
    for _ in range(10):
        QApplication.processEvents()
    image = canvas.viewport().grab().toImage()
    metrics = QFontMetricsF(label_font())
    underscore = int(metrics.horizontalAdvance("_"))
    scale = canvas.transform().m11()
    labels = [lab for lab in canvas._groups_item.screen_labels(scale) if "_" in lab.text]
    port = canvas.viewport().rect()
    shown = 0
    for label in labels:
        rect = canvas.mapFromScene(label.rect).boundingRect()
        if not port.contains(rect):
            continue
        shown += 1
        base = rect.top() + round((rect.height() - metrics.height()) / 2 + metrics.ascent())
        # below the baseline only the underscores draw a dark line wider than a stroke ("q" is 2 px wide)
        run = _longest_dark_run(image, rect.left(), rect.right(), base + 1, rect.bottom() + 3)
        assert run >= underscore - 2, (label.text, run, underscore, rect)
    assert shown >= 8, shown
