"""A node's op type drawn at screen size on an integer kernel (zoomed out, ScreenTitlesItem) has a dark green bar
along its chip's bottom, standing for the kernel bar its box has under the chip. The bar was drawn inside the chip's
last 3 px, where the text's bottom row (and its descenders) sits: ddddocr_common_old_int8 rendered with --expand 9
drew "ConvInte…" at 8 px with its baseline row on the bar, dark on dark green. The bar now lies below the glyphs.
Pixels of a picture of the item, offscreen."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF  # noqa: E402
from PySide6.QtGui import QColor, QFontMetricsF, QImage, QPainter  # noqa: E402
from PySide6.QtWidgets import QGraphicsScene  # noqa: E402

from workbench.qt.canvas.colors import KERNEL_BAND  # noqa: E402
from workbench.qt.canvas.group_labels import (  # noqa: E402
    FITTED_MIN_PX,
    LABEL_PX,
    MARK_PX,
    Label,
    ScreenTitlesItem,
    label_font,
)

CHIP, TEXT = QColor("#ffd54f"), QColor("#000000")


def _rows(text: str, px: int, marked: bool) -> tuple[set[int], set[int]]:
    """(rows holding text pixels, rows holding bar pixels) of ``text`` drawn in its chip at ``px`` pixels, at scene
    scale 1, with or without the kernel bar."""
    m = QFontMetricsF(label_font(px))
    rect = QRectF(10.0, 10.0, m.horizontalAdvance(text) + 2.0, m.height())
    label = Label(0, rect, text, True, node=0, px=px)
    item = ScreenTitlesItem(lambda _scale: [label], lambda _label: (CHIP, TEXT), QRectF(0, 0, 200, 60),
                            (lambda _label: KERNEL_BAND) if marked else None)
    item.picture = True
    scene = QGraphicsScene(0, 0, 200, 60)
    scene.addItem(item)
    image = QImage(200, 60, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    scene.render(painter, QRectF(0, 0, 200, 60), QRectF(0, 0, 200, 60))
    painter.end()
    a = np.frombuffer(image.constBits(), dtype=np.uint8).reshape(60, 200, 4)[:, :, :3].astype(int)  # BGR
    bar = np.array([KERNEL_BAND.blue(), KERNEL_BAND.green(), KERNEL_BAND.red()])
    is_bar = np.abs(a - bar).sum(axis=2) < 24
    is_text = (a.sum(axis=2) < 200) & ~is_bar  # dark, not the bar: glyph pixels (on the chip, or over the bar)
    return set(np.flatnonzero(is_text.any(axis=1)).tolist()), set(np.flatnonzero(is_bar.any(axis=1)).tolist())


@pytest.mark.parametrize("px", range(FITTED_MIN_PX, LABEL_PX + 1))
@pytest.mark.parametrize("text", ["ConvInte…", "ConvInteger", "MatMulInteger", "QLinearConv"])
def test_kernel_bar_under_the_op_type(qtbot, text, px):
    plain, none = _rows(text, px, marked=False)
    assert plain and not none
    glyphs, bar = _rows(text, px, marked=True)
    assert len(bar) == MARK_PX  # the whole bar is drawn, 3 rows
    assert min(bar) > max(plain)  # below the text's last row (failed before: the bar's rows held its bottom row)
    assert glyphs == plain  # the text is drawn where it was, whole
