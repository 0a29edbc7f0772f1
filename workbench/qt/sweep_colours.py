"""How the canvas colours a sensitivity sweep's figure: by its value, on the bands the rest of the app uses.

The SQNR figures (*only quantized*, *only float*, *own output*, dB) are drawn on the SQNR colour stops
(:data:`workbench.core.report.sqnr_bands.SQNR_STOPS`: <= 5 dB red ... >= 45 dB green), so a sweep where
every unit leaves the output above 45 dB is all green; the colours used to rank the units (the least bad
unit drawn red even when it was harmless). *Gain if float* (dB, higher is worse) has bands of its own
on the same colours: 0 dB (or less) green up to :data:`GAIN_WORST_DB` or more red, linear between.
"""

from __future__ import annotations

import math

from workbench.core.api import SQNR_STOPS

#: the colour value of the worst (red) and best (green) stop, dB
WORST_DB, BEST_DB = SQNR_STOPS[0][0], SQNR_STOPS[-1][0]
#: colour value of a bit-exact figure (+inf dB), as the Errors colours draw it
INF_DB = 100.0
#: a gain if float this large (dB) or larger is drawn red: keeping the unit float cuts the output noise 10x
GAIN_WORST_DB = 10.0
#: the figure whose values are gains (higher: more sensitive), not SQNR
GAIN = "gain_db"


def colour_value(figure: str, value: float) -> float | None:
    """Where ``value`` (dB) of ``figure`` (a sweep column key) sits on the SQNR colour stops; None for NaN
    (not measured). SQNR figures: the value itself (+inf: :data:`INF_DB`); the gain: 0 dB at
    :data:`BEST_DB`, :data:`GAIN_WORST_DB` at :data:`WORST_DB`, clamped."""
    if math.isnan(value):
        return None
    if figure == GAIN:
        share = min(max(value, 0.0), GAIN_WORST_DB) / GAIN_WORST_DB
        return BEST_DB - share * (BEST_DB - WORST_DB)
    return INF_DB if value == math.inf else max(value, 0.0)


def colour_scale(figure: str) -> tuple[float, float, bool] | None:
    """For the canvas legend: (lowest, highest, higher_is_worse) of the gain's bands, whose stops it labels
    with gains; None for an SQNR figure (the legend shows the SQNR stops themselves)."""
    return (0.0, GAIN_WORST_DB, True) if figure == GAIN else None


#: the legend's note on grey in a sweep's colours (every node of a swept unit takes the unit's figure)
GREY_NOTE = ("no value (grey): float nodes; units not swept (the sweep measures the units with the most own "
             "error); nodes quantized only as another unit's input")


def colour_notes(figure: str) -> list[str]:
    """The canvas legend's notes for ``figure``: what the colours mean, and what grey means."""
    if figure == GAIN:
        return [f"coloured by the value: 0 dB or less green, {GAIN_WORST_DB:g} dB or more red, linear between",
                GREY_NOTE]
    return ["coloured by the value on the app's SQNR bands (all green: no unit hurts the output); "
            "exact shown as 100 dB", GREY_NOTE]


def band_labels(figure: str) -> list[tuple[str, str]]:
    """The panel's key: ``(label, "#rrggbb")`` per colour stop, worst first ("<= 5 dB" ... ">= 45 dB"; for
    the gain ">= 10 dB" ... "<= 0 dB")."""
    last = len(SQNR_STOPS) - 1
    if figure != GAIN:
        return [(("<= " if i == 0 else ">= " if i == last else "") + f"{db:g} dB", colour)
                for i, (db, colour) in enumerate(SQNR_STOPS)]
    out = []
    for i, (db, colour) in enumerate(SQNR_STOPS):
        gain = (BEST_DB - db) / (BEST_DB - WORST_DB) * GAIN_WORST_DB
        out.append(((">= " if i == 0 else "<= " if i == last else "") + f"{gain:g} dB", colour))
    return out
