"""How wide a collapsed group's box is: as wide as its title needs, between two bounds.

The core cannot measure text (it never imports Qt), so the app measures the font a box's title is
drawn in once, as the advance of each character it may meet (:class:`TitleMetrics`), and hands
that to the layout; a title's width is then the sum of its characters' advances. Kerning only
draws a string narrower than that sum in the fonts measured (a bold 20 px sans: 0 to 3.8 px less
on ppocrv4_rec's titles), so a box sized by it holds its title whole.

Pure Python; never imports Qt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TitleMetrics:
    """The title font of a collapsed box, as the app measures it (scene pixels).

    Attributes
    ----------
    advances : dict of str to float
        Advance of each character measured.
    fallback : float
        Advance taken for a character not in ``advances`` (the font's widest glyph).
    chrome : float
        Width of a box its title's text does not get (the chevron, the margins).
    """

    advances: dict[str, float] = field(default_factory=dict)
    fallback: float = 0.0
    chrome: float = 0.0

    def text_width(self, text: str) -> float:
        """Width of ``text`` drawn in the font: the sum of its characters' advances."""
        get, fallback = self.advances.get, self.fallback
        return sum(get(ch, fallback) for ch in text)


def collapsed_widths(titles: list[str], metrics: TitleMetrics | None, least: float, most: float
                     ) -> dict[int, float]:
    """Group -> width of its collapsed box, for the groups whose title needs more than ``least``: the
    title's width and ``metrics.chrome``, rounded up to a whole pixel, at most ``most`` (a longer title is
    still cut). Groups left out are ``least`` wide; none without ``metrics``."""
    if metrics is None:
        return {}
    out = {}
    for g, title in enumerate(titles):
        need = math.ceil(metrics.chrome + metrics.text_width(title))
        if need > least:
            out[g] = float(min(need, most))
    return out
