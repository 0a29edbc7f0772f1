"""Every legend swatch has an edge that reads on the legend's white background: Constant / Identity
(#eeeeee), the dtype legend's float (#eceff1) and "no value" (#d9d9d9) were spans of background colour
with no outline, all but invisible (pytest-qt, offscreen)."""

from __future__ import annotations

import base64
import re

import pytest

pytest.importorskip("PySide6")

from graph_models import constant_add_model  # noqa: E402
from PySide6.QtGui import QColor, QImage  # noqa: E402


def _luminance(colour: QColor) -> float:
    """WCAG 2 relative luminance of an sRGB colour."""
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * lin(colour.redF()) + 0.7152 * lin(colour.greenF()) + 0.0722 * lin(colour.blueF())


def _contrast(a: QColor, b: QColor) -> float:
    """WCAG 2 contrast ratio (1 to 21)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _swatch_images(rich: str) -> list[QImage]:
    return [QImage.fromData(base64.b64decode(d)) for d in re.findall(r'src="data:image/png;base64,([^"]+)"', rich)]


def test_near_white_op_colours_have_a_visible_outline(qtbot, make_canvas):
    view = make_canvas(800, 600, groups=False)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(constant_add_model(("Identity", "ident"), ("Relu", "relu")))
    legend = view.legend_overlay
    rows = legend.label.text().split("<br>")
    assert len(rows) == 4 and all("<img" in row for row in rows)
    images = _swatch_images(legend.label.text())
    white = QColor("#ffffff")
    for row, image in zip(rows, images, strict=True):
        fill = image.pixelColor(image.width() // 2, image.height() // 2)
        op = re.search(r"&nbsp;(\w+) \(1\)$", row).group(1)
        assert fill.name() == view.op_colors()[op].name()
        edges = [image.pixelColor(0, image.height() // 2), image.pixelColor(image.width() - 1, 0),
                 image.pixelColor(image.width() // 2, image.height() - 1)]
        # the outline stands out from the white legend (WCAG non-text contrast >= 3:1) whatever the fill
        assert all(_contrast(e, white) >= 3.0 for e in edges), (op, [e.name() for e in edges])
    const = next(img for row, img in zip(rows, images, strict=True) if "Constant" in row)  # white: the fill alone does not read
    assert _contrast(const.pixelColor(const.width() // 2, const.height() // 2), white) < 1.2
