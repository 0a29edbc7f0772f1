"""The dashed outline of nodes kept float reads on the dark theme's canvas: it was the light theme's dark blue
(#0d47a1) there too, barely seen on the dark group frames (scripts/screenshot.sh --theme dark, digits_cnn with
every unit kept float by the latency check); it is light blue (#90caf9) on a dark canvas, and the op legend says
so. The outline is drawn by the node items from the canvas state's colour."""

from __future__ import annotations

from bundled_example import EXAMPLE
from PySide6.QtGui import QColor

from workbench.qt.canvas.legend import legend_entries


def _contrast(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio of two colours (1: none, 21: black on white)."""
    def lum(c: QColor) -> float:
        ch = [(v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4) for v in (c.redF(), c.greenF(), c.blueF())]
        return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_kept_float_outline_light_blue_on_the_dark_theme(qtbot, window, open_file):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    canvas = window.canvas
    canvas.set_float_nodes(["/f/f.0/Conv", "/f/f.3/Conv"])
    light = canvas._state.float_mark
    assert light.name() == "#0d47a1"
    assert legend_entries(canvas)[2] == ["dashed dark blue outline: kept float (2 nodes)"]

    window.set_theme("dark")
    dark_bg = canvas.backgroundBrush().color()
    mark = canvas._state.float_mark
    assert mark.name() == "#90caf9"
    assert _contrast(mark, dark_bg) >= 4.5 > _contrast(light, dark_bg)  # about 2 for the dark blue
    assert legend_entries(canvas)[2] == ["dashed light blue outline: kept float (2 nodes)"]
    assert "light blue outline" in canvas.legend_overlay.label.text()

    open_file(window, EXAMPLE / "digits_cnn.onnx")  # a new scene keeps the theme's colour
    canvas.set_float_nodes(["/f/f.0/Conv"])
    assert canvas._state.float_mark.name() == "#90caf9"
    window.set_theme("light")
    assert canvas._state.float_mark.name() == "#0d47a1"
    assert legend_entries(canvas)[2] == ["dashed dark blue outline: kept float (1 node)"]
