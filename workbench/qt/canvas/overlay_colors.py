"""Colours of the widgets drawn over the canvas (the legend and the minimap) in the light and dark themes.

They are widgets of their own over the viewport, painted in fixed colours, so the Qt palette does not reach them:
in the dark theme they stayed white frames on the dark canvas (#1e1e20, ``workbench.qt.theme.DARK``). The view
picks the dark set when its theme background is dark (``GraphCanvas.set_theme_colors``, as for group frames).
Text and outline colours meet WCAG 2 contrast on their background: 4.5:1 for text, 3:1 for the swatch outline
and frames (relative luminance as WCAG 2.1 defines it).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor


@dataclass(frozen=True)
class OverlayColors:
    """``#rrggbb`` strings; ``background`` and ``button`` are ``(r, g, b, alpha)`` (a little of the graph shows
    through)."""

    background: tuple[int, int, int, int]  # legend and minimap
    border: str  # their frame
    text: str  # legend rows and title
    muted: str  # legend notes
    link: str  # the legend's "N more op types" line
    button: tuple[int, int, int, int]  # the minimap's close box and collapsed button
    glyph: str  # the x of the close box, the collapsed button's thumbnail glyph
    swatch_outline: str  # the legend's colour swatches

    def qcolor(self, name: str) -> QColor:
        """Field ``name`` as a QColor (alpha kept)."""
        value = getattr(self, name)
        return QColor(*value) if isinstance(value, tuple) else QColor(value)


LIGHT_OVERLAY = OverlayColors(background=(255, 255, 255, 225), border="#8a8a8a", text="#111111", muted="#555555",
                              link="#2b5797", button=(255, 255, 255, 235), glyph="#444444", swatch_outline="#767676")
#: background: the dark palette's window colour (45, 45, 48) a step darker, lighter than the canvas (#1e1e20)
DARK_OVERLAY = OverlayColors(background=(40, 40, 43, 235), border="#6e6e74", text="#e1e1e1", muted="#a8a8a8",
                             link="#8ab8ff", button=(62, 62, 66, 240), glyph="#d0d0d0", swatch_outline="#9a9a9a")


def overlay_colors(dark: bool) -> OverlayColors:
    """:data:`DARK_OVERLAY` when ``dark``, else :data:`LIGHT_OVERLAY`."""
    return DARK_OVERLAY if dark else LIGHT_OVERLAY
