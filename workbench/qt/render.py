"""Headless pictures of a model's graph: the app's canvas drawn offscreen to PNG or SVG.

``workbench-cli render`` (``workbench/cli.py``) may import only the core facade, never
``workbench.qt`` (an import-linter contract), and must not pay for Qt unless it draws. So the CLI
does the core work (open the model, plan the recipe for ``--colour dtype``, quantize and measure
for ``--colour sqnr``), writes a JSON *spec* (model path, output path, colour mode, per-node
dtypes or SQNR, open depth) to a temporary file and runs this module in a child process::

    python -m workbench.qt.render SPEC.json

The child sets ``QT_QPA_PLATFORM=offscreen`` unless the caller set a platform, opens the model
in a :class:`~workbench.qt.canvas.GraphCanvas` exactly as the app does (groups opened to the
spec's depth, else the app's automatic depth), sizes the view to the graph and the colour legend beside
or below it so that "Fit graph" shows the graph at up to 100 % (longest side at most ``max_side`` pixels), cuts the room right of and below
the drawing to the room left of and above it, and writes what the view shows with :meth:`GraphCanvas.export_picture` — the same code as the app's File > Export Picture.
Exit status 0 on success, 2 with a one-line ``error: ...`` on stderr for bad input.

With ``float_model`` in the spec (``render FLOAT --compare QUANTIZED``) the picture is the app's
two aligned panes (:class:`~workbench.qt.diff_panes.DiffPanes`): the float graph left, the quantized
file right coloured by the spec's per-tensor SQNR (``edge_errors``), both at "Fit graph".
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from PySide6.QtCore import QPoint, QRectF, Qt
from PySide6.QtGui import QTransform
from PySide6.QtWidgets import QApplication, QFrame, QWidget

from workbench.core.api import (
    compare_models,
    open_model,
    pane_layout,
    read_quant_params,
    summarize_quantization,
)
from workbench.core.errors import WorkbenchError
from workbench.qt.canvas import GraphCanvas
from workbench.qt.canvas.picture import write_picture
from workbench.qt.diff_panes import DiffPanes
from workbench.qt.document import describe_quantization
from workbench.qt.quant_tab import quant_info

#: Colour modes of the spec (the canvas's names) and the CLI's names for them.
CLI_MODES = {"op": "op", "dtype": "dtype", "sqnr": "error"}
MARGIN = 40
MIN_PANE_W = 440  # px: a pane is at least as wide as its colour legend
LEGEND_GAP = 12  # px between a colour legend and the graph beside or below it
GRAPH_PAD = 30  # scene px around the nodes (edge labels, badges), as the canvas's fit keeps


def render_to_file(model_path: str, out: str, *, mode: str = "op", dtypes: dict[str, str] | None = None,
                   errors: dict[str, float] | None = None, edge_errors: dict[str, float] | None = None,
                   depth: int | None = None, error_notes: list[str] | None = None,
                   floats: list[str] | None = None, max_side: int = 2400,
                   timeout_s: float = 300.0) -> tuple[int, int]:
    """Draw ``model_path``'s graph into ``out`` (.png or .svg); returns the picture size (pixels).

    Parameters
    ----------
    mode : str
        Canvas colour mode: ``"op"``, ``"dtype"`` (needs ``dtypes``, node -> dtype name) or
        ``"error"`` (needs ``errors``, node -> SQNR in dB).
    error_notes : list of str, optional
        The legend's notes under the SQNR colours (what the grey nodes are); default: the canvas's own.
    floats : list of str, optional
        The units the recipe keeps float (node names), marked as the app marks them
        (:meth:`GraphCanvas.set_float_nodes`: a dashed outline; a grey group box holding one reads
        "kept float", not "no value").
    depth : int, optional
        Open groups down to this depth (0: all collapsed); default: the app's automatic depth.
    max_side : int
        Longest side of the picture in pixels; the graph is drawn at 100 % when it fits.

    Raises
    ------
    WorkbenchError
        The model cannot be opened, or the layout failed.
    ValueError
        ``out`` does not end in .png / .svg.
    """
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # read when the QApplication is made
    app = QApplication.instance() or QApplication([sys.argv[0]])
    model = open_model(model_path)
    canvas = GraphCanvas(groups=True)
    canvas.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    canvas.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    canvas.setFrameShape(QFrame.Shape.NoFrame)
    outcome: list[str | None] = []
    canvas.layoutReady.connect(lambda: outcome.append(None))
    canvas.layoutFailed.connect(outcome.append)
    canvas.resize(max_side, max_side)
    canvas.show()
    if model.quantized:  # an already-quantized file as it is: Q/DQ folded into edge badges, INT marks
        summary, params = describe_quantization(model)
        canvas.set_quant_info(*quant_info(summary, params, model.proto), compute=summary.compute)
    canvas.set_model(model.proto, collapse_qdq=bool(model.quantized), depth=depth)
    deadline = time.monotonic() + timeout_s
    while not outcome:
        app.processEvents()
        time.sleep(0.005)
        if time.monotonic() > deadline:
            canvas.shutdown()
            raise WorkbenchError(f"{model_path}: the layout took longer than {timeout_s:.0f} s.",
                                 hint="Render with a smaller --expand depth.")
    if outcome[0] is not None:
        canvas.shutdown()
        raise WorkbenchError(f"{model_path}: {outcome[0]}")
    label = "SQNR vs float (dB)" if edge_errors else "SQNR (dB)" if error_notes else None
    canvas.set_node_values(dtypes=dtypes or {}, errors=errors or {}, error_label=label, error_notes=error_notes)
    canvas.set_edge_values(edge_errors or {})
    canvas.set_color_mode(mode)
    canvas.set_float_nodes(floats or ())
    canvas.legend_overlay.set_picture(True)  # its size as drawn (every op type) before the fit leaves room for it
    _fit_with_titles(app, canvas, max_side)
    canvas.legend_overlay.refresh()  # its notes for the scale drawn (tags / INT marks only where shown)
    try:
        return canvas.export_picture(out)
    finally:
        canvas.shutdown()
        canvas.close()


def _titles_overflow(canvas: GraphCanvas) -> tuple[float, float]:
    """Pixels by which the drawn graph (group titles at screen size included: a title placed left of its
    frame reaches past the graph's left edge) runs past the viewport, (across, down), each the larger of
    its two sides; across also covers a title under the colour legend."""
    view = QRectF(canvas.viewport().rect())
    drawn = canvas.mapFromScene(canvas.drawn_bounds()).boundingRect()
    across = max(view.left() - drawn.left(), drawn.right() + 1 - view.right(), 0.0)
    down = max(view.top() - drawn.top(), drawn.bottom() + 1 - view.bottom(), 0.0)
    legend = QRectF(canvas.legend_rect())
    if not legend.isEmpty():  # a title left of its frame under the legend beside the graph: move the graph right
        for rect in canvas.screen_title_rects():
            title = QRectF(canvas.mapFromScene(rect).boundingRect())
            if title.intersects(legend):
                across = max(across, legend.right() + LEGEND_GAP - title.left())
    return across, down


def _fit_with_titles(app, canvas: GraphCanvas, max_side: int) -> None:
    """Size ``canvas`` so that "Fit graph" shows the graph at up to 100 % within ``max_side`` pixels, with
    room on both sides for the group titles that run past it (:func:`_titles_overflow`), then fit."""
    bounds = canvas.scene_bounds()
    bw, bh = max(bounds.width(), 1.0), max(bounds.height(), 1.0)
    extra_w = extra_h = 0.0
    legend_room = False
    for _ in range(5):  # the titles keep their pixel size, so their room settles once the scale does
        scale = min(1.0, (max_side - 2 * MARGIN - extra_w) / bw, (max_side - 2 * MARGIN - extra_h) / bh)
        canvas.resize(int(bw * scale + 2 * MARGIN + extra_w), int(bh * scale + 2 * MARGIN + extra_h))
        app.processEvents()
        canvas.fit()
        if not legend_room and canvas.transform().m11() < 0.98 * scale:
            legend_room = True  # the fit drew the graph smaller, beside or below the legend: make it room
            add = _legend_room(canvas, bw * scale, bh * scale, max_side, extra_w, extra_h)
            if add is not None:
                extra_w, extra_h = extra_w + add[0], extra_h + add[1]
                continue
        across, down = _titles_overflow(canvas)
        if across <= 0 and down <= 0:
            break
        extra_w += 2 * across + 2 if across > 0 else 0.0
        extra_h += 2 * down + 2 if down > 0 else 0.0
    _trim(app, canvas)


def _legend_room(canvas: GraphCanvas, graph_w: float, graph_h: float, max_side: int,
                 extra_w: float, extra_h: float) -> tuple[float, float] | None:
    """Pixels (across, down) to add to the view so that the graph, ``graph_w`` x ``graph_h`` pixels at the
    scale wanted, fits beside the colour legend (across) or below it (down), whichever adds less area within
    ``max_side``; where neither fits, what holds the legend whole (:func:`_legend_whole`); None when the legend
    is hidden or needs no room. The view sized for the graph alone left
    the fit to shrink it beside the legend: digits_cnn --expand 0 drew its nodes at 45 %, too small for
    the node tags and INT marks the legend explains."""
    legend = QRectF(canvas.legend_rect())
    if legend.isEmpty():
        return None
    beside = (legend.right() + LEGEND_GAP - MARGIN, max(0.0, legend.bottom() + MARGIN - graph_h - 2 * MARGIN))
    below = (max(0.0, legend.right() + MARGIN - graph_w - 2 * MARGIN), legend.bottom() + LEGEND_GAP - MARGIN)
    fits = [a for a in (beside, below) if graph_w + 2 * MARGIN + extra_w + a[0] <= max_side
            and graph_h + 2 * MARGIN + extra_h + a[1] <= max_side]
    if not fits:  # the legend whole at least (the fit then draws the graph smaller beside or below it)
        return _legend_whole(legend, graph_w + 2 * MARGIN + extra_w, graph_h + 2 * MARGIN + extra_h, max_side)
    area = lambda a: (graph_w + 2 * MARGIN + extra_w + a[0]) * (graph_h + 2 * MARGIN + extra_h + a[1])  # noqa: E731
    return min(fits, key=area)


def _legend_whole(legend: QRectF, view_w: float, view_h: float, max_side: int) -> tuple[float, float] | None:
    """Pixels (across, down) to add to a ``view_w`` x ``view_h`` view so that it holds the colour legend
    ``legend`` (viewport pixels) whole, with its margin on the far sides too, within ``max_side``; None when it
    does already. ``render digits_cnn --max-side 200`` cut the legend at 109 px ("Colour: op typ")."""
    across = max(0.0, min(float(max_side), legend.right() + legend.left()) - view_w)
    down = max(0.0, min(float(max_side), legend.bottom() + legend.top()) - view_h)
    return (across, down) if across > 0 or down > 0 else None


def _trim(app, canvas: GraphCanvas) -> None:
    """Cut the picture's empty room right of and below what it draws (graph, group titles, legend) to the room
    left of and above it. The fit centres the graph, and the room made for titles running past its left edge
    (ppocrv4_rec: 126 px) was left empty on the right. The view keeps its scale and its top-left scene point."""
    view = QRectF(canvas.viewport().rect())
    drawn = QRectF(canvas.mapFromScene(canvas.drawn_bounds()).boundingRect())
    legend = QRectF(canvas.legend_rect())
    if not legend.isEmpty():
        drawn = drawn.united(legend)
    cut_w = int(view.right() - drawn.right() - max(drawn.left() - view.left(), 0.0))
    cut_h = int(view.bottom() - drawn.bottom() - max(drawn.top() - view.top(), 0.0))
    if cut_w <= 0 and cut_h <= 0:
        return
    scale = canvas.transform().m11()
    corner = canvas.mapToScene(0, 0)
    canvas.resize(canvas.width() - max(cut_w, 0), canvas.height() - max(cut_h, 0))
    app.processEvents()
    size = canvas.viewport().size()
    visible = QRectF(corner.x(), corner.y(), size.width() / scale, size.height() / scale)
    canvas.setSceneRect(visible)
    canvas.setTransform(QTransform.fromScale(scale, scale))
    canvas.centerOn(visible.center())
    app.processEvents()


def _wait(app, done, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        app.processEvents()
        time.sleep(0.005)
        if time.monotonic() > deadline:
            raise WorkbenchError(f"{what}: the layout took longer than {seconds:.0f} s.")


def save_widget(widget: QWidget, out: str | Path) -> tuple[int, int]:
    """Write ``widget`` as drawn now to ``out`` (.png or .svg), atomically; returns its size (pixels)."""
    return write_picture(out, widget.size(), widget.grab, lambda painter: widget.render(painter, QPoint(0, 0)))


def render_panes_to_file(float_path: str, quant_path: str, out: str, *, edge_errors: dict[str, float] | None = None,
                         max_side: int = 2400, timeout_s: float = 300.0) -> tuple[int, int]:
    """Draw the float and quantized graphs as the app's two aligned panes into ``out`` (.png or .svg).

    ``edge_errors`` is the quantized file's tensor -> SQNR (dB) (what ``render --compare`` measured);
    the right pane is coloured by it, else by the dtype each edge carries. The picture is at most
    ``max_side`` pixels wide and high. Returns its size in pixels.

    Raises
    ------
    WorkbenchError
        A model cannot be opened, or the layout failed or took longer than ``timeout_s``.
    ValueError
        ``out`` does not end in .png / .svg.
    """
    panes = draw_panes(float_path, quant_path, edge_errors=edge_errors, max_side=max_side, timeout_s=timeout_s)
    try:
        return save_panes(panes, out)
    finally:
        panes.shutdown()
        panes.close()


def save_panes(panes: DiffPanes, out: str | Path) -> tuple[int, int]:
    """Write ``panes`` to ``out`` (.png or .svg) as :func:`save_widget` does, without the two canvases' minimaps:
    a control of the window, not part of the picture (in ppocrv4_rec's picture it covered the last nodes of both
    panes), as a single canvas's picture leaves it out. Returns the picture's size in pixels."""
    minimaps = [canvas.minimap() for canvas in (panes.float_canvas, panes.quant_canvas)]
    shown = [m.isVisible() for m in minimaps]
    for m in minimaps:
        m.hide()
    try:
        return save_widget(panes, out)
    finally:
        for m, visible in zip(minimaps, shown, strict=True):
            m.setVisible(visible)


def draw_panes(float_path: str, quant_path: str, *, edge_errors: dict[str, float] | None = None,
               max_side: int = 2400, timeout_s: float = 300.0) -> DiffPanes:
    """The two aligned panes of :func:`render_panes_to_file`, laid out and fitted, ready to be saved
    (the caller shuts them down). The pair is diffed by ``compare_models`` (structure only), as
    ``workbench-cli compare`` diffs it: the same matches, counts and node names, and ``edge_errors``
    keyed by its quantized tensor names. Raises as :func:`render_panes_to_file` does (also a
    ``ModelError`` when the two files do not correspond)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication.instance() or QApplication([sys.argv[0]])
    # diffed as `compare` diffs them (the CLI measured edge_errors on that diff): the quantized file opened and
    # prepared as written (unnamed and repeated node names named, Constants lifted), the float file as written
    diff = compare_models(open_model(float_path), open_model(quant_path).proto, quant_label=quant_path)
    fproto, qproto = diff.float_proto, diff.quant_proto
    back = {q: f for f, q in diff.tensors.items()}
    diff.sqnr = {back[t]: db for t, db in (edge_errors or {}).items() if t in back}
    layout = pane_layout(fproto, qproto, diff)
    panes = DiffPanes(diff, fproto, qproto, f"Float: {Path(float_path).name}", f"Quantized: {Path(quant_path).name}")
    ready: list[bool] = []
    panes.ready.connect(lambda: ready.append(True))
    failed: list[str] = []
    for canvas in (panes.float_canvas, panes.quant_canvas):
        canvas.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        canvas.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        canvas.setFrameShape(QFrame.Shape.NoFrame)
        canvas.layoutFailed.connect(failed.append)
    panes.resize(max_side, max_side)
    panes.show()
    params = read_quant_params(qproto)
    panes.show_layout(layout, quant_info(summarize_quantization(qproto, params), params, qproto))
    try:
        _wait(app, lambda: ready or failed, timeout_s, quant_path)
        if failed:
            raise WorkbenchError(f"{quant_path}: {failed[0]}")
        _place_clear_of_legends(app, panes, max_side)
    except BaseException:
        panes.shutdown()
        panes.close()
        raise
    return panes


def _place_clear_of_legends(app, panes: DiffPanes, max_side: int) -> None:
    """Size ``panes`` and give both canvases one view (scale and scene point, as the app's synced panes
    have) that shows the whole graph beside or below the two colour legends, never under either: the
    panes keep one view, so each canvas's own fit, clear of its own legend only, put the quantized
    graph's first rows under the taller SQNR legend (ppocrv4_rec)."""
    canvases = (panes.float_canvas, panes.quant_canvas)
    bounds = QRectF()
    for canvas in canvases:
        bounds = bounds.united(canvas.scene_bounds())
    bounds = bounds.adjusted(-GRAPH_PAD, -GRAPH_PAD, GRAPH_PAD, GRAPH_PAD)
    box = QRectF()  # both legends, top-left of their viewports (their size does not follow the pane's)
    for canvas in canvases:
        canvas.legend_overlay.set_picture(True)  # every op type listed, no "click to list" line
        canvas.legend_overlay.refresh()
        rect = canvas.legend_rect()
        if not rect.isEmpty():
            box = box.united(QRectF(rect))
    extra = panes.height() - panes.float_canvas.viewport().height()  # the marks' strip and the titles
    side = panes.width() - 2 * panes.float_canvas.viewport().width()  # the splitter's handle
    bw, bh = max(bounds.width(), 1.0), max(bounds.height(), 1.0)
    left = box.right() + LEGEND_GAP if not box.isEmpty() else MARGIN
    top = box.bottom() + LEGEND_GAP if not box.isEmpty() else MARGIN
    room_w, room_h = (max_side - side) / 2, max_side - extra
    beside = min(1.0, (room_w - left - MARGIN) / bw, (room_h - 2 * MARGIN) / bh)
    below = min(1.0, (room_w - 2 * MARGIN) / bw, (room_h - top - MARGIN) / bh)
    if beside >= below:
        scale = beside
        area_w, area_h = bw * scale, bh * scale
        view_w = max(left + area_w + MARGIN, MIN_PANE_W)
        view_h = max(2 * MARGIN + area_h, box.bottom() + MARGIN)
        area = QRectF(left, (view_h - area_h) / 2, view_w - left - MARGIN, area_h)
    else:
        scale = below
        area_w, area_h = bw * scale, bh * scale
        view_w = max(2 * MARGIN + area_w, MIN_PANE_W, box.right() + MARGIN)
        view_h = top + area_h + MARGIN
        area = QRectF(MARGIN, top, view_w - 2 * MARGIN, area_h)
    panes.resize(int(2 * view_w + side), int(view_h + extra))
    app.processEvents()
    view = QRectF(panes.float_canvas.viewport().rect())
    centre = bounds.center() - (area.center() - view.center()) / scale
    visible = QRectF(centre.x() - view.width() / (2 * scale), centre.y() - view.height() / (2 * scale),
                     view.width() / scale, view.height() / scale)
    for canvas in canvases:
        canvas.setSceneRect(visible)
        canvas.setTransform(QTransform.fromScale(scale, scale))
        canvas.centerOn(centre)
    app.processEvents()


def main(argv: list[str] | None = None) -> int:
    """Entry of ``python -m workbench.qt.render SPEC.json`` (see the module docstring)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m workbench.qt.render SPEC.json", file=sys.stderr)
        return 2
    try:
        spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
        if spec.get("float_model"):  # render FLOAT --compare QUANTIZED: the two aligned panes
            w, h = render_panes_to_file(spec["float_model"], spec["model"], spec["output"],
                                        edge_errors=spec.get("edge_errors"), max_side=int(spec.get("max_side", 2400)))
            print(f"wrote {spec['output']} ({w}x{h} px)")
            return 0
        w, h = render_to_file(spec["model"], spec["output"], mode=spec.get("mode", "op"),
                              dtypes=spec.get("dtypes"), errors=spec.get("errors"),
                              edge_errors=spec.get("edge_errors"), depth=spec.get("depth"),
                              error_notes=spec.get("error_notes"), floats=spec.get("floats"),
                              max_side=int(spec.get("max_side", 2400)))
    except (WorkbenchError, ValueError, OSError, KeyError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(f"wrote {spec['output']} ({w}x{h} px)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
