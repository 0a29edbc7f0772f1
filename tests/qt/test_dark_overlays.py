"""In the dark theme the canvas legend and the minimap take dark colours: both stayed white frames on the
dark canvas (#1e1e20). The legend's swatch outlines keep a 3:1 contrast (WCAG 2.1, non-text) on its
background in both themes, so near-white fills (Constant's #eeeeee) and dark ones keep an edge."""

from __future__ import annotations

import base64
import re

import pytest

pytest.importorskip("PySide6")

from graph_models import constant_add_model  # noqa: E402
from PySide6.QtGui import QColor, QImage  # noqa: E402

from workbench.qt.theme import DARK, LIGHT  # noqa: E402


def _luminance(c: QColor) -> float:
    """WCAG 2.1 relative luminance of an sRGB colour."""
    def lin(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * lin(c.red()) + 0.7152 * lin(c.green()) + 0.0722 * lin(c.blue())


def _contrast(a: QColor, b: QColor) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _swatch_outlines(legend) -> list[QColor]:
    uris = re.findall(r'src="data:image/png;base64,([^"]+)"', legend.label.text())
    images = [QImage.fromData(base64.b64decode(u)) for u in uris]
    return [img.pixelColor(0, img.height() // 2) for img in images]


def test_legend_and_minimap_follow_the_theme(qtbot, make_canvas):
    view = make_canvas(700, 500, groups=False)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(constant_add_model(("Relu", "relu")))
    legend, minimap = view.legend_overlay, view.minimap()
    assert minimap.isVisible() and not minimap.collapsed
    shades = {}
    for name, theme in (("dark", DARK), ("light", LIGHT), ("dark again", DARK)):
        view.set_theme_colors(theme.canvas_background, theme.canvas_edge)
        qtbot.wait(10)
        image = legend.grab().toImage()
        background = image.pixelColor(image.width() // 2, image.height() - 3)  # inside the frame, under the rows
        strip = minimap.grab().toImage().pixelColor(4, 4)  # the strip above the thumbnail, left of its close box
        shades[name] = (background.lightness(), strip.lightness())
        outlines = _swatch_outlines(legend)
        assert len(outlines) == 3  # Add, Constant, Relu
        assert all(_contrast(o, background) >= 3.0 for o in outlines), (name, [o.name() for o in outlines])
        text = QColor(legend.colors.text)
        assert _contrast(text, background) >= 4.5  # the rows' text
        assert _contrast(QColor(legend.colors.muted), background) >= 4.5  # the notes
    # the dark canvas's legend and minimap were white (lightness 250 and more)
    assert shades["dark"][0] < 60 and shades["dark"][1] < 60, shades
    assert shades["light"][0] > 240 and shades["light"][1] > 240, shades
    assert shades["dark again"] == shades["dark"]
