"""The SQNR colour scale shared by the app (canvas, Errors bars, legends) and the HTML report.

Five stops, red (bad) to green (good): :data:`SQNR_STOPS`, ``(dB, "#rrggbb")``. A value at or below
the first stop takes its colour, at or above the last the last one's, in between the colour is
interpolated linearly in RGB between the two stops around it. ``+inf`` (bit-exact) is the last colour,
NaN / None (not measured) :data:`SQNR_NO_VALUE`. The same stops, the same interpolation and the same legend
words (:func:`stop_labels`) in both places, so a colour means the same number in the app and in the report.
"""

from __future__ import annotations

import math

#: SQNR (dB) -> colour stops, red (bad) to green (good)
SQNR_STOPS: tuple[tuple[float, str], ...] = (
    (5.0, "#d73027"), (15.0, "#fc8d59"), (25.0, "#fee08b"), (35.0, "#91cf60"), (45.0, "#1a9850"),
)
#: fill of a figure that was not measured
SQNR_NO_VALUE = "#d9d9d9"


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def sqnr_rgb(sqnr_db: float | None) -> tuple[int, int, int] | None:
    """RGB (0-255 ints) of an SQNR in dB on :data:`SQNR_STOPS`; None for NaN / None (not measured)."""
    if sqnr_db is None or math.isnan(sqnr_db):
        return None
    if sqnr_db <= SQNR_STOPS[0][0]:
        return _rgb(SQNR_STOPS[0][1])
    for (x0, c0), (x1, c1) in zip(SQNR_STOPS, SQNR_STOPS[1:], strict=False):
        if sqnr_db <= x1:
            t = (sqnr_db - x0) / (x1 - x0)
            a, b = _rgb(c0), _rgb(c1)
            return (round(a[0] + t * (b[0] - a[0])), round(a[1] + t * (b[1] - a[1])), round(a[2] + t * (b[2] - a[2])))
    return _rgb(SQNR_STOPS[-1][1])


def sqnr_hex(sqnr_db: float | None) -> str:
    """``"#rrggbb"`` of an SQNR in dB (:func:`sqnr_rgb`); :data:`SQNR_NO_VALUE` when not measured."""
    rgb = sqnr_rgb(sqnr_db)
    return SQNR_NO_VALUE if rgb is None else "#{:02x}{:02x}{:02x}".format(*rgb)


def stop_labels() -> list[tuple[str, str]]:
    """The legend: ``(label, "#rrggbb")`` per stop, ``"<= 5 dB"`` ... ``">= 45 dB"``."""
    last = len(SQNR_STOPS) - 1
    return [(("<= " if i == 0 else ">= " if i == last else "") + f"{db:.0f} dB", colour)
            for i, (db, colour) in enumerate(SQNR_STOPS)]
