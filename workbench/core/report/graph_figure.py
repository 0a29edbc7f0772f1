"""The graph picture: the canvas's layered layout drawn with matplotlib, nodes coloured by SQNR.

Layers run left to right (the canvas's ``y``), nodes within a layer top to bottom; a long, narrow
graph is folded into bands read top to bottom (:func:`folded_xy`), so it stays legible. Measured node
units take the SQNR colour scale of :mod:`.figures` (colour bar); nodes that are not measured units
(float, shape ops, units inside subgraphs) are grey (legend); the worst units are labelled.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D

from workbench.core.graph.layout import X_SPACING, Y_SPACING, GraphStructure
from workbench.core.report.figures import footnote, new_figure, sqnr_colorbar, sqnr_colors

_GREY = (0.78, 0.78, 0.78, 1.0)
#: Above this many nodes the nodes and edges are drawn as a raster inside the SVG (the file stays small).
RASTER_NODES = 2000


def folded_xy(names: list[str], positions: dict[str, tuple[float, float]], aspect: float = 3.0) -> np.ndarray:
    """``[n, 2]`` plot coordinates: x = layer, y = -position in the layer, layers cut into bands of
    equal length stacked downwards so the picture's width / height is about ``aspect``."""
    if not names:
        return np.zeros((0, 2))
    layer = np.array([positions[n][1] / Y_SPACING for n in names])
    slot = np.array([positions[n][0] / X_SPACING for n in names])
    slot -= slot.min()
    depth, breadth = float(layer.max()) + 1.0, float(slot.max()) + 1.0
    bands = max(1, int(round(np.sqrt(depth / (aspect * breadth)))))
    per = int(np.ceil(depth / bands))
    band = np.floor(layer / per)
    return np.stack([layer - band * per, -(slot + band * (breadth + 2.0))], axis=1)


def graph_picture(structure: GraphStructure, positions: dict[str, tuple[float, float]], sqnr: dict[str, float],
                  *, label: int = 5, note: str):
    """A matplotlib Figure of the graph; ``sqnr`` maps node name -> unit output SQNR (dB)."""
    names = structure.names
    raster = len(names) > RASTER_NODES  # one embedded PNG instead of thousands of SVG paths
    xy = folded_xy(names, positions)
    span_x = float(np.ptp(xy[:, 0])) + 1.0 if len(xy) else 1.0
    span_y = float(np.ptp(xy[:, 1])) + 1.0 if len(xy) else 1.0
    width = float(np.clip(span_x / 4.0, 6.0, 14.0))
    height = float(np.clip(width * span_y / span_x, 2.0, 9.0))
    fig = new_figure(width, height)
    ax = fig.add_subplot()
    if structure.edges:
        same = [(xy[a], xy[b]) for a, b in structure.edges if xy[a][0] < xy[b][0]]
        wrap = [(xy[a], xy[b]) for a, b in structure.edges if xy[a][0] >= xy[b][0]]
        ax.add_collection(LineCollection(same, colors="#9e9e9e", linewidths=0.4, zorder=1,
                                         rasterized=raster))
        ax.add_collection(LineCollection(wrap, colors="#e0e0e0", linewidths=0.3, zorder=0,
                                         rasterized=raster))
    measured = np.array([n in sqnr for n in names], dtype=bool)
    colors = np.array([_GREY] * len(names)).reshape(-1, 4)
    if measured.any():
        colors[measured] = sqnr_colors([sqnr[n] for n, m in zip(names, measured, strict=True) if m])
    size = float(np.clip(4000.0 / max(len(names), 1), 6.0, 40.0))
    ax.scatter(xy[~measured, 0], xy[~measured, 1], s=size * 0.6, c=colors[~measured], marker="s",
               edgecolors="#757575", linewidths=0.2, zorder=2, rasterized=raster)
    ax.scatter(xy[measured, 0], xy[measured, 1], s=size, c=colors[measured], marker="o",
               edgecolors="#333333", linewidths=0.3, zorder=3, rasterized=raster)
    worst = sorted(sqnr, key=lambda n: sqnr[n])[:label]
    index = {n: i for i, n in enumerate(names)}
    for n in worst:
        if n in index:
            x, y = xy[index[n]]
            ax.annotate(f"{n[-28:]}\n{sqnr[n]:.1f} dB", (x, y), xytext=(4, 6), textcoords="offset points",
                        fontsize=6, zorder=4, bbox={"boxstyle": "round,pad=0.2", "fc": "white", "alpha": 0.8})
    ax.set_axis_off()
    ax.autoscale_view()
    ax.set_title(f"Graph ({len(names)} nodes, {int(measured.sum())} measured units), "
                 "inputs top left, read band by band; colour = unit output SQNR")
    handles = [Line2D([], [], marker="s", linestyle="", markerfacecolor=_GREY, markeredgecolor="#757575",
                      label="not a measured unit (float / shape op)"),
               Line2D([], [], marker="o", linestyle="", markerfacecolor="white", markeredgecolor="#333333",
                      label="quantized unit (fill = SQNR)")]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(0.0, 0.0), ncol=2, frameon=False)
    sqnr_colorbar(fig, ax, fraction=0.03, pad=0.01)
    footnote(fig, note, below=34.0)
    return fig
