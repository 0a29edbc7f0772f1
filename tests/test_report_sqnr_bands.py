"""The report colours SQNR with the app's bands and says which ranking its bars show.

The report drew SQNR on a continuous RdYlGn scale over 0-40 dB while the app's canvas and Errors bars use five
stops (<= 5 dB red, 15, 25 yellow, 35, >= 45 dB green, linear between): a 20 dB unit was yellow-green in the
report and orange in the app. Both now read the stops from one core module
(:mod:`workbench.core.report.sqnr_bands`); the app's side of the agreement is checked in
tests/qt/test_sqnr_colours_agree.py.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from workbench.core.report.figures import sqnr_bars, sqnr_colors
from workbench.core.report.html import RANKING_NOTE
from workbench.core.report.sqnr_bands import SQNR_NO_VALUE, SQNR_STOPS, sqnr_hex, sqnr_rgb


def _rgba(hex_colour: str) -> tuple[float, float, float, float]:
    return tuple(int(hex_colour[i:i + 2], 16) / 255.0 for i in (1, 3, 5)) + (1.0,)


def test_stops_and_between():
    assert [db for db, _c in SQNR_STOPS] == [5.0, 15.0, 25.0, 35.0, 45.0]
    assert sqnr_hex(-3.0) == sqnr_hex(5.0) == "#d73027"  # at or below the first stop: red
    assert sqnr_hex(25.0) == "#fee08b"
    assert sqnr_hex(60.0) == sqnr_hex(math.inf) == "#1a9850"
    assert sqnr_hex(math.nan) == sqnr_hex(None) == SQNR_NO_VALUE
    # 20 dB: halfway between #fc8d59 and #fee08b, per channel
    assert sqnr_rgb(20.0) == (round((0xfc + 0xfe) / 2), round((0x8d + 0xe0) / 2), round((0x59 + 0x8b) / 2))


def test_report_bars_take_the_bands_and_say_the_ranking():
    values = [2.0, 5.0, 12.0, 20.0, 25.0, 33.0, 45.0, 80.0, math.inf, math.nan]
    rows = [SimpleNamespace(node=f"/n{i}", op_type="Conv", sqnr_db=v) for i, v in enumerate(values)]
    expected = [_rgba(sqnr_hex(v)) for v in values]
    np.testing.assert_allclose(sqnr_colors(values), expected)
    fig = sqnr_bars(rows, top=len(rows), note="10 samples")
    ax = fig.axes[0]
    np.testing.assert_allclose([p.get_facecolor() for p in ax.patches], expected)
    assert "ranked by accumulated SQNR" in ax.get_title()
    assert ax.get_xlabel().startswith("accumulated SQNR (dB)")
    bar = fig.axes[1]  # the colour bar, ticked at the app's stops
    assert list(bar.get_yticks()) == [5.0, 15.0, 25.0, 35.0, 45.0]
    assert [t.get_text() for t in bar.get_yticklabels()] == ["<= 5 dB", "15 dB", "25 dB", "35 dB", ">= 45 dB"]
    assert "rank units by accumulated SQNR" in RANKING_NOTE and "<= 5 dB" in RANKING_NOTE
