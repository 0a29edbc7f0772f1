"""Every plot the app shows follows the theme: SQNR bars, histogram, Evaluate bars and the Autotune
curve (a GraphicsLayoutWidget, not a PlotWidget); background, axis text and legend text, read back
from the widgets, are light in the light theme and dark in the dark theme (and the other way round
for the text), also for legend entries drawn before the switch."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from workbench.qt.theme import apply_theme


def _plots(win) -> dict[str, pg.GraphicsView]:
    return {"SQNR bars": win.errors.bars_plot, "histogram": win.errors.hist_plot,
            "evaluate": win.evaluate_panel.plot, "autotune": win.autotune_panel.plot}


def _axis_text(view: pg.GraphicsView) -> list[QColor]:
    items = [i for i in view.scene().items() if isinstance(i, pg.PlotItem)]
    assert items
    return [i.getAxis(a).textPen().color() for i in items for a in ("left", "bottom")]


def _text_color(label: pg.LabelItem) -> QColor:
    """The colour the label's text is laid out with (its document's first character format)."""
    block = label.item.document().firstBlock()
    return next(iter(block)).fragment().charFormat().foreground().color()


def _legend_text(view: pg.GraphicsView) -> list[QColor]:
    return [_text_color(label) for legend in view.scene().items() if isinstance(legend, pg.LegendItem)
            for _sample, label in legend.items]


def _point(i: int) -> dict:
    return {"point": {"promoted": i, "metric": 0.9 + 0.01 * i, "fraction_int8": 1.0 - 0.1 * i,
                      "weight_bytes": 20_000 + 4_000 * i, "bops": 1e9}, "recipe": {}, "metric_float": 0.97}


def test_every_plot_follows_the_theme(qtbot, window):
    app = QApplication.instance()
    win = window
    plots = _plots(win)
    assert set(plots) == {"SQNR bars", "histogram", "evaluate", "autotune"}
    assert {type(p) for p in win.findChildren(pg.GraphicsView)} >= {pg.PlotWidget, pg.GraphicsLayoutWidget}
    panel = win.autotune_panel
    panel._target = {"max_drop": 0.02}
    for i in range(3):
        panel.add_point(_point(i))  # legend entries exist before the switch
    assert len(_legend_text(panel.plot)) == 5  # meets / below / applied, target, float model
    try:
        win.set_theme("dark")
        for name, view in plots.items():
            assert view.backgroundBrush().color().lightness() < 60, name
            assert all(c.lightness() > 180 for c in _axis_text(view)), name
        assert all(c.lightness() > 180 for c in _legend_text(panel.plot))
        panel.add_point(_point(3))  # entries drawn after the switch too
        assert all(c.lightness() > 180 for c in _legend_text(panel.plot))
        win.set_theme("light")
        for name, view in plots.items():
            assert view.backgroundBrush().color().lightness() > 230, name
            assert all(c.lightness() < 80 for c in _axis_text(view)), name
        assert all(c.lightness() < 80 for c in _legend_text(panel.plot))
    finally:
        apply_theme(app, "system")
