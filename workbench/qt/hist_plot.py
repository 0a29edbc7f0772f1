"""One histogram drawn on a pyqtgraph plot, with its quantizer's clip range and grid and a legend entry
for every colour drawn.

A histogram is the dict of the histogram job (``counts``, ``edges``, ``values``, ``rmin``, ``rmax``;
:mod:`workbench.core.report.unit_histograms`). The clip range of per-tensor integer parameters is
``[(qmin - zero_point) * scale, (qmax - zero_point) * scale]`` (two red lines) and, when at most
``MAX_GRID_LINES`` levels are in view, the grid ``(q - zero_point) * scale`` is drawn as short grey ticks
along the axis (:func:`workbench.core.api.clip_range`, :func:`workbench.core.api.grid_levels`: what the HTML
report draws). A histogram may carry a second series (``overlay_counts`` on the same edges: one channel of a
per-channel weight), drawn darker over the first, the clip range and grid then being that channel's.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSizePolicy

from workbench.core.api import QParams, clip_range, grid_levels
from workbench.core.wording import share

#: a histogram bin more than this many times the 90th percentile of the filled bins is a spike
#: (the zeros of a ReLU output): the count axis stops at that height and the caption gives the spike's count
SPIKE = 4.0
CLIP_PEN = {"color": "#c62828", "width": 2}
GRID_PEN = (120, 120, 120, 140)
#: the plot item's grid cell the legend sits in under the value axis (rows 0-3: title, top axis, view box, value
#: axis), and beside the view box (columns 0-2: count axis, view box, right axis)
LEGEND_UNDER = (4, 1)
LEGEND_BESIDE = (2, 3)
#: a plot at least this wide (pixels) has its legend beside the view box, one entry a line (the view box keeps
#: about 300 px); a narrower one under the value axis, where it costs height instead
BESIDE_WIDTH = 480
#: the least height (pixels) :func:`hold_view_height` keeps for a histogram's view box
MIN_VIEW_HEIGHT = 60
#: the overlay series (one channel of a weight)
OVERLAY_BRUSH = (230, 120, 20, 170)


def count_axis_top(counts: np.ndarray) -> float:
    """Top of a histogram's count axis: its highest bin, or, when that is a spike (more than
    :data:`SPIKE` times the 90th percentile of the filled bins), that height, so the rest of the
    distribution is not flattened to the axis."""
    filled = counts[counts > 0]
    if not filled.size:
        return 1.0
    limit = SPIKE * float(np.percentile(filled, 90))
    return float(counts.max()) if counts.max() <= limit else limit


def outside_share(counts: np.ndarray, edges: np.ndarray, clip: tuple[float, float],
                  extremes: tuple[float | None, float | None] = (None, None)) -> float:
    """The fraction (0..1) of the histogram's values outside ``clip`` (lo, hi): the bins wholly outside count
    whole, a bin the clip cuts counts in proportion to the part outside (values spread evenly in it). The
    values' ``extremes`` (rmin, rmax; None: unknown) make it exact where nothing is outside (0 when both lie
    inside ``clip``) and at least one value per side where one lies outside. ``counts`` (n bins), ``edges``
    (n + 1); 0 for no values. It counted a bin the clip cuts whole, and only two decimals of a percent."""
    counts, edges = np.asarray(counts, dtype=float), np.asarray(edges, dtype=float)
    total = float(counts.sum())
    if total <= 0:
        return 0.0
    lo, hi = clip
    left, right = edges[:-1], edges[1:]
    width = np.maximum(right - left, np.finfo(float).tiny)  # numpy's edges increase
    below = np.clip((np.minimum(right, lo) - left) / width, 0.0, 1.0)
    above = np.clip((right - np.maximum(left, hi)) / width, 0.0, 1.0)
    low, high = float((counts * below).sum()), float((counts * above).sum())
    rmin, rmax = extremes
    if rmin is not None:
        low = 0.0 if rmin >= lo else max(low, 1.0)
    if rmax is not None:
        high = 0.0 if rmax <= hi else max(high, 1.0)
    return min(low + high, total) / total


def legend_of(plot: pg.PlotWidget) -> pg.LegendItem:
    """The legend of ``plot``, made on first use and kept clear of the histogram (anchored in the view box's
    top-right corner it covered the histogram and, in a short Errors dock, the quantization grid's ticks along the
    value axis): beside the view box in a plot of :data:`BESIDE_WIDTH` or more, under the value axis in a
    narrower one, as many entries a line as the view box's width holds (:func:`place_legend`, again at every
    resize). Under the axis at any width, it left the Errors dock's histogram 70 px high at 1400 x 860."""
    item = plot.getPlotItem()
    if item.legend is None:
        legend = item.legend = pg.LegendItem(labelTextSize="8pt", frame=False)
        legend.layout.setContentsMargins(4, 2, 4, 2)  # its default 9 px took room from the plot
        legend.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)  # beside: its lines together
        item.layout.addItem(legend, *LEGEND_UNDER)
        item.vb.sigResized.connect(lambda _vb: place_legend(item))
    return item.legend


def place_legend(item: pg.PlotItem) -> None:
    """Move ``item``'s legend beside its view box (one column, top-aligned) when the plot item is at least
    :data:`BESIDE_WIDTH` pixels wide, else under the value axis (:func:`fit_legend`'s columns)."""
    legend = item.legend
    cell = LEGEND_BESIDE if item.width() >= BESIDE_WIDTH else LEGEND_UNDER
    grid = item.layout
    if not (cell[0] < grid.rowCount() and cell[1] < grid.columnCount() and grid.itemAt(*cell) is legend):
        grid.removeItem(legend)
        grid.addItem(legend, *cell)
        grid.setAlignment(legend, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    if cell == LEGEND_BESIDE:
        if legend.columnCount != 1:
            legend.setColumnCount(1)
    else:
        fit_legend(legend, item.vb.width())
    hold_view_height(item)


def hold_view_height(item: pg.PlotItem) -> None:
    """Raise the least height of ``item``'s widget so its view box keeps :data:`MIN_VIEW_HEIGHT` pixels beside
    what the legend, the axes and the margins take as laid out now (never lowered: a legend of more entries,
    a weight's channel over all its values, left the view box 44 px of a 150 px plot)."""
    view = item.getViewWidget()
    if view is None or item.legend is None or not item.legend.items:
        return
    need = math.ceil(item.height() - item.vb.height()) + MIN_VIEW_HEIGHT
    if need > view.minimumHeight():
        view.setMinimumHeight(need)


def fit_legend(legend: pg.LegendItem, width: float) -> None:
    """Put as many of ``legend``'s entries on a line (at most 3) as fit ``width`` pixels side by side (each column
    as wide as its widest entry: swatch, spacing, text), at least one."""
    gap = 2 * legend.layout.horizontalSpacing()
    left, _top, right, _bottom = legend.layout.getContentsMargins()
    entries = [sample.boundingRect().width() + label.item.document().idealWidth() + gap for sample, label in legend.items]

    def needed(columns: int) -> float:
        return left + right + sum(max(entries[c::columns]) for c in range(columns))

    columns = 1
    while columns < min(3, len(entries)) and needed(columns + 1) <= width:
        columns += 1
    if columns != legend.columnCount:
        legend.setColumnCount(columns)


def reset(plot: pg.PlotWidget) -> None:
    """Empty ``plot`` (its legend too), axes back to [0, 1] until the next histogram sets them."""
    plot.clear()
    legend = plot.getPlotItem().legend
    if legend is not None:
        legend.clear()
    plot.setRange(xRange=(0.0, 1.0), yRange=(0.0, 1.0), padding=0.0)
    plot.enableAutoRange()


def draw(plot: pg.PlotWidget, hist: dict, qp: QParams | None, *, fill, label: str,
         overlay_label: str = "") -> str:
    """Draw ``hist`` on ``plot`` (cleared first) with ``qp``'s clip range and grid; ``label`` names the values in
    the legend ("output values, 8 rows"), ``overlay_label`` the overlay series when ``hist`` has one. Returns
    the caption's figures: "204800 values in [-5.578, 14.07]; clip [-5.549, 14.1] (uint8, scale 0.0771); 0.00%
    of values outside" ("no finite values" when empty)."""
    reset(plot)
    legend = legend_of(plot)
    counts = np.asarray(hist.get("counts", []), dtype=float)
    edges = np.asarray(hist.get("edges", []), dtype=float)
    if counts.size == 0:
        return "no finite values"
    curve = plot.plot(edges, counts, stepMode="center", fillLevel=0, brush=fill, name=label)
    curve.setZValue(1)  # over the quantization grid
    own = np.asarray(hist.get("overlay_counts", []), dtype=float)
    if own.size == counts.size:
        over = plot.plot(edges, own, stepMode="center", fillLevel=0, brush=OVERLAY_BRUSH,
                         pen=pg.mkPen(OVERLAY_BRUSH[:3]), name=overlay_label)
        over.setZValue(2)
    top = count_axis_top(counts)
    plot.enableAutoRange(x=True, y=False)
    plot.setYRange(0.0, top, padding=0.05)
    text = f"{hist.get('values', 0)} values in [{hist.get('rmin', 0.0):.4g}, {hist.get('rmax', 0.0):.4g}]"
    if top < counts.max():
        spike = int(np.argmax(counts))
        text += (f"; the bin at {(edges[spike] + edges[spike + 1]) / 2:.4g} holds {int(counts[spike])} values "
                 f"(drawn cut at {top:.0f})")
    rng = clip_range(qp) if qp is not None else None
    if rng is not None:
        for v in rng:
            plot.addItem(pg.InfiniteLine(pos=v, angle=90, pen=pg.mkPen(**CLIP_PEN)))
        legend.addItem(pg.PlotDataItem(pen=pg.mkPen(**CLIP_PEN)), "clip range")
        levels = grid_levels(qp, float(edges[0]), float(edges[-1]))
        if levels.size:  # short ticks along the axis, behind the histogram, so it stays readable
            grid = plot.plot(np.repeat(levels, 2), np.tile([0.0, 0.06 * top], levels.size), connect="pairs",
                             pen=pg.mkPen(GRID_PEN), name="quantization grid")
            grid.setZValue(-1)
        if own.size == counts.size:  # one channel: its own counts, no extremes of its own known
            outside = outside_share(own, edges, rng)
        else:
            outside = outside_share(counts, edges, rng, (hist.get("rmin"), hist.get("rmax")))
        text += (f"; clip [{rng[0]:.4g}, {rng[1]:.4g}] ({qp.qtype}, scale {float(np.ravel(qp.scale)[0]):.3g}); "
                 f"{share(outside)} of values outside"
                 + ("" if levels.size else "; grid too fine to draw"))
    elif qp is not None:  # a range the plot cannot draw as two lines
        scales = np.asarray(qp.scale).size
        text += (f"; no clip range drawn: per-channel scale ({scales} channels, axis {qp.axis})" if scales > 1
                 else f"; no clip range drawn: {qp.qtype} is a float type (no integer grid)")
    place_legend(plot.getPlotItem())
    return text
