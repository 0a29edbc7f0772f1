"""The 'already quantized' banner takes the theme's colours: in the dark theme it stayed a light amber box
(#fff4e0) above the dark canvas. Its text keeps a high contrast on its background in both themes."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QColor  # noqa: E402


def _shades(banner) -> tuple[int, int, int]:
    """(background lightness inside the frame, darkest and lightest pixel lightness) of the banner as drawn."""
    image = banner.grab().toImage()
    values = [image.pixelColor(x, y).lightness() for x in range(2, image.width() - 2, 2)
              for y in range(2, image.height() - 2)]
    return image.pixelColor(image.width() - 4, image.height() // 2).lightness(), min(values), max(values)


def test_banner_follows_the_theme(window, qtbot):
    banner = window.banner
    banner.label.setText("<b>x.onnx is already quantized</b> - QDQ: 3 Conv int8/uint8.")
    banner.setVisible(True)
    banner.resize(600, banner.sizeHint().height())
    seen = {}
    for shown in ("dark", "light", "dark"):
        window.apply_view_theme(shown)
        qtbot.wait(10)
        seen[shown] = _shades(banner)
    dark_bg, dark_min, dark_max = seen["dark"]
    light_bg, light_min, light_max = seen["light"]
    assert dark_bg < 60 and dark_max > 180  # a dark box with light text
    assert light_bg > 220 and light_min < 110  # a light box with dark text
    assert QColor("#3a2c10").lightness() == dark_bg and QColor("#fff4e0").lightness() == light_bg
