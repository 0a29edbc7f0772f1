"""The report's plots, drawn with matplotlib (object API, no pyplot: no global backend) as SVG.

Every figure carries a footnote with the samples behind it and the runtime that produced it, and
every colour has a legend or a colour bar. SQNR colours use one scale everywhere, the app's
(:mod:`workbench.core.report.sqnr_bands`: red at or below 5 dB, yellow at 25 dB, green at or above 45 dB,
linear in RGB between the stops), and its colour bar is ticked at those stops.
"""

from __future__ import annotations

import base64
import io
import textwrap

import numpy as np
from matplotlib import rc_context
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LinearSegmentedColormap, Normalize
from matplotlib.figure import Figure

from workbench.core.report.histograms import TensorHistogram
from workbench.core.report.sqnr_bands import SQNR_NO_VALUE, SQNR_STOPS, sqnr_rgb, stop_labels
from workbench.core.wording import share

_FIRST, _LAST = SQNR_STOPS[0][0], SQNR_STOPS[-1][0]
#: SQNR colour scale of the report (dB): the app's stops (:data:`~workbench.core.report.sqnr_bands.SQNR_STOPS`)
SQNR_NORM = Normalize(vmin=_FIRST, vmax=_LAST, clip=True)
SQNR_CMAP = LinearSegmentedColormap.from_list(
    "workbench_sqnr", [((db - _FIRST) / (_LAST - _FIRST), colour) for db, colour in SQNR_STOPS])
#: what the bars rank by and their x axis (the unit's output against float, everything upstream quantized)
RANKING = "accumulated SQNR"
_RC = {"svg.hashsalt": "workbench-report", "svg.fonttype": "path", "font.size": 9}


def svg_bytes(fig: Figure) -> bytes:
    """``fig`` as SVG (text as paths, no metadata, so the file references nothing outside itself)."""
    buf = io.BytesIO()
    with rc_context(_RC):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def data_uri(svg: bytes) -> str:
    """``data:image/svg+xml;base64,...`` of an SVG document."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")


def new_figure(width: float, height: float) -> Figure:
    with rc_context(_RC):
        return Figure(figsize=(width, height), dpi=100)


def footnote(fig: Figure, text: str, *, below: float = 38.0) -> None:
    """``text`` in small grey type under the first axes, ``below`` points under its bottom edge."""
    ax = fig.axes[0]
    chars = max(40, int(fig.get_figwidth() * 17))
    ax.annotate(textwrap.fill(text, chars), xy=(0.0, 0.0), xycoords="axes fraction", xytext=(0.0, -below),
                textcoords="offset points", fontsize=7, color="#555555", ha="left", va="top",
                annotation_clip=False)


def sqnr_colors(values) -> np.ndarray:
    """RGBA (float in [0, 1], ``[n, 4]``) of SQNR values in dB, the app's colours
    (:func:`workbench.core.report.sqnr_bands.sqnr_rgb`): +inf the top colour, NaN the no-value grey."""
    grey = tuple(int(SQNR_NO_VALUE[i:i + 2], 16) for i in (1, 3, 5))
    rgb = [sqnr_rgb(float(x)) or grey for x in values]
    return np.array([(r / 255.0, g / 255.0, b / 255.0, 1.0) for r, g, b in rgb], dtype=float).reshape(-1, 4)


def sqnr_colorbar(fig: Figure, ax, *, fraction: float, pad: float) -> None:
    """The SQNR colour bar beside ``ax``: the app's colour map, ticked at its stops ("<= 5 dB" ... ">= 45 dB")."""
    bar = fig.colorbar(sqnr_mappable(), ax=ax, label="SQNR (dB), the app's colours", fraction=fraction, pad=pad)
    bar.set_ticks([db for db, _c in SQNR_STOPS], labels=[label for label, _c in stop_labels()])


#: Characters of a node name beside a bar; a longer name is shortened in the middle (more where that
#: would make two names read the same).
BAR_NAME_CHARS = 52


def _short_names(names: list[str], width: int = BAR_NAME_CHARS) -> list[str]:
    """``names`` each within ``width`` characters (:func:`_middle`), widened until distinct names stay distinct."""
    longest = max((len(n) for n in names), default=0)
    while True:
        short = [_middle(n, width) for n in names]
        if width >= longest or len(set(short)) == len(set(names)):
            return short
        width += 4


def _middle(name: str, width: int) -> str:
    """``name`` within ``width`` characters, cut in the middle ("/bert/encoder/lay...output/dense/MatMul"):
    exported names share long prefixes and differ at both ends (the layer number near the start, the op
    near the end), so neither end may go."""
    if len(name) <= width:
        return name
    keep = width - 3
    head = keep // 2
    return f"{name[:head]}...{name[len(name) - (keep - head):]}"


def sqnr_bars(rows, *, top: int, note: str) -> Figure:
    """Horizontal bars of unit output SQNR (dB), worst first, the ``top`` worst units of ``rows`` (ranked by
    :data:`RANKING`, as ``rows`` come from the analysis), coloured on the app's SQNR stops."""
    shown = rows[:top]
    fig = new_figure(8.0, 0.8 + 0.18 * max(len(shown), 1))
    ax = fig.add_subplot()
    vals = [min(r.sqnr_db, 80.0) for r in shown]
    y = np.arange(len(shown))
    ax.barh(y, vals, color=sqnr_colors([r.sqnr_db for r in shown]), edgecolor="#333333", linewidth=0.3)
    ax.set_yticks(y, [f"{n} ({r.op_type})" for n, r in zip(_short_names([r.node for r in shown]), shown,
                                                           strict=True)], fontsize=7)
    ax.invert_yaxis()
    ax.axvline(0.0, color="#333333", linewidth=0.5)
    ax.set_xlabel(f"{RANKING} (dB): unit output, quantized model vs float, everything upstream quantized; "
                  "higher is better")
    ax.set_title(f"Per-unit SQNR, the {len(shown)} worst of {len(rows)} units, ranked by {RANKING}")
    sqnr_colorbar(fig, ax, fraction=0.04, pad=0.02)
    footnote(fig, note)
    _room_for_labels(fig, ax)
    return fig


def _room_for_labels(fig: Figure, ax) -> None:
    """Move the left edge of ``ax`` right of its widest y tick label, so the names beside the bars are
    inside the figure (and a picture of it without a tight bounding box), not cut at its left edge."""
    fig.draw_without_rendering()
    widest = max((t.get_window_extent().width for t in ax.get_yticklabels()), default=0.0)  # pixels
    fig.subplots_adjust(left=min(0.6, (widest + 14.0) / (fig.dpi * fig.get_figwidth())))


def histogram(h: TensorHistogram, *, note: str) -> Figure:
    """Histogram of ``h`` with its clip range (red) and quantization grid (grey ticks), log counts."""
    fig = new_figure(5.6, 3.0)
    ax = fig.add_subplot()
    ax.stairs(h.counts, h.edges, fill=True, color="#5078c8", alpha=0.6, label=f"float values ({h.values:,})")
    if h.clip is not None:
        for i, v in enumerate(h.clip):
            ax.axvline(v, color="#c62828", linewidth=1.5, label="clip range" if i == 0 else None)
    if h.grid.size:  # short ticks along the x axis, so the histogram stays readable
        ax.vlines(h.grid, 0.0, 0.07, transform=ax.get_xaxis_transform(), color="#424242", linewidth=0.4,
                  label=f"quantization grid ({h.grid.size} levels)")
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.5)
    ax.set_xlabel(f"{h.tensor[-50:]} (float value)")
    ax.set_ylabel("count")
    ax.set_title(f"{h.node[-50:]}: SQNR {h.sqnr_db:.2f} dB", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    detail = (f"{h.qtype}, scale {h.scale:.4g}, zero_point {h.zero_point:g}; {share(h.outside)} of values clipped"
              if h.clip is not None else f"{h.qtype}: no single clip range (per-channel, float8 or not quantized)")
    if h.clip is not None and not h.grid.size:
        detail += "; grid too fine to draw"
    footnote(fig, f"{detail}. {h.samples} samples of {note}")
    return fig


def autotune_curve(doc: dict, *, note: str) -> Figure:
    """An autotune curve (``{metric, metric_float, curve}``): with weight sizes (``autotune --curve-json``),
    the task metric of every measured point against weight MiB, the walk's path and the Pareto front;
    for older files without them, the metric against units promoted. Infinite metrics are left out."""
    if all(p.get("weight_bytes") is not None and "accepted" in p for p in doc["curve"]):
        return _pareto_figure(doc, note=note)
    pts = sorted(doc["curve"], key=lambda p: p["promoted"])
    fig = new_figure(6.0, 3.2)
    ax = fig.add_subplot()
    ax.plot([p["promoted"] for p in pts], [p["metric"] for p in pts], "o-", color="#1565c0",
            label=f"quantized, promoted to {doc.get('promote_to', 'float')}")
    _float_line(ax, doc)
    ax.set_xlabel("units promoted (most sensitive first)")
    ax.set_ylabel(str(doc.get("metric", "metric")))
    ax.set_title("Autotune curve")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    footnote(fig, note)
    return fig


def _float_line(ax, doc: dict) -> None:
    if isinstance(doc.get("metric_float"), int | float) and np.isfinite(doc["metric_float"]):
        ax.axhline(doc["metric_float"], color="#2e7d32", linestyle="--", label="float model")


def _pareto_figure(doc: dict, *, note: str) -> Figure:
    def xy(points):
        kept = [(p["weight_bytes"] / 2**20, float(p["metric"])) for p in points]
        kept = [(x, y) for x, y in kept if np.isfinite(y)]
        return [x for x, _ in kept], [y for _, y in kept]

    curve = doc["curve"]
    fig = new_figure(6.0, 3.2)
    ax = fig.add_subplot()
    ax.plot(*xy(curve), "o", color="#9e9e9e", markersize=4, label="measured recipe")
    ax.plot(*xy([p for p in curve if p["accepted"]]), "-", color="#1565c0", linewidth=1.2,
            label="search path (never worse)")
    front = sorted((p for p in curve if p.get("pareto")), key=lambda p: p["weight_bytes"])
    ax.plot(*xy(front), "D", color="#e65100", markersize=5, label="Pareto front (metric, weight, BOPs)")
    _float_line(ax, doc)
    ax.set_xlabel("weight MiB")
    ax.set_ylabel(str(doc.get("metric", "metric")))
    ax.set_title(f"Autotune: ladder {doc.get('promote_to', 'float')}")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    footnote(fig, note)
    return fig


def sqnr_mappable() -> ScalarMappable:
    return ScalarMappable(norm=SQNR_NORM, cmap=SQNR_CMAP)
