"""The canvas / Errors bar colours and the HTML report's are the same colour for every SQNR: both read the stops of
workbench.core.report.sqnr_bands (the report had its own 0-40 dB RdYlGn scale)."""

from __future__ import annotations

import math

import numpy as np

from workbench.core.report.figures import sqnr_colors
from workbench.qt.canvas.colors import ERROR_STOPS, NO_VALUE, error_color


def test_app_and_report_colour_every_sqnr_alike():
    values = [*np.linspace(-10.0, 60.0, 141), math.inf, math.nan]
    report = sqnr_colors(values)
    for v, rgba in zip(values, report, strict=True):
        app = error_color(v)
        assert (app.red(), app.green(), app.blue()) == tuple(round(c * 255) for c in rgba[:3]), v
    assert error_color(math.nan) == NO_VALUE
    assert [(db, c.name()) for db, c in ERROR_STOPS] == [(5.0, "#d73027"), (15.0, "#fc8d59"), (25.0, "#fee08b"),
                                                          (35.0, "#91cf60"), (45.0, "#1a9850")]
