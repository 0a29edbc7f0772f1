"""GraphCanvas: the zoomable, selectable graph view of a model.

Layout and geometry are computed in a child process (``worker.LayoutJob``, waited for by a
thread-pool thread); the GUI thread serializes the model, unpickles the result and adds four items
(group boxes, edges, overview, an empty container), in slices of a few milliseconds between events
(``slices.SliceRunner``), then creates detailed node items lazily for the visible part of the
scene once the zoom is at least ``DETAIL_SCALE``. Selection is
kept as a set of node indices and hit-tested with numpy, so it works at every zoom level whether
or not detailed items exist. Opening or closing a group re-places the graph in the GUI thread
(``workbench.core.api.place`` + geometry: about 0.1 s at 20,000 nodes) and keeps the view's centre.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import onnx
from PySide6.QtCore import QCoreApplication, QEvent, QPoint, QPointF, QRectF, QSizeF, Qt, QThreadPool, Signal
from PySide6.QtGui import QColor, QPainter, QTransform
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsView,
    QRubberBand,
    QStyle,
)

from workbench.core.wording import count
from workbench.qt.canvas import colors
from workbench.qt.canvas.group_figures import group_figures
from workbench.qt.canvas.group_view import CanvasGroups
from workbench.qt.canvas.groups_item import GroupsItem, title_metrics
from workbench.qt.canvas.interaction import CanvasInteraction
from workbench.qt.canvas.items import (
    DETAIL_SCALE,
    EDGE_COLOR,
    CanvasState,
    EdgeBadgesItem,
    EdgesItem,
    NodeItem,
)
from workbench.qt.canvas.legend import LegendOverlay, marks_key
from workbench.qt.canvas.main_body import densest_start
from workbench.qt.canvas.minimap import Minimap
from workbench.qt.canvas.overlays import clear_spot, free_area, overlay_rects, scroll_room
from workbench.qt.canvas.overview import OverviewItem
from workbench.qt.canvas.quant_layer import CanvasQuant
from workbench.qt.canvas.readable import readable_scale
from workbench.qt.canvas.scene_data import SceneData
from workbench.qt.canvas.slices import WAIT, SliceRunner, dismantle, pause_gc, resume_gc
from workbench.qt.canvas.transfer import Assembler
from workbench.qt.canvas.worker import EdgeQuantJob, LayoutJob, proto_pieces, warm_up

log = logging.getLogger(__name__)


def search_matcher(text: str):
    """The predicate of a search box text (case-insensitive): ``re:PATTERN`` searched with
    ``re.search``, a glob (``*``, ``?``, ``[``) matched whole, else a substring.

    Raises
    ------
    ValueError
        ``re:`` followed by an invalid regular expression (the message says where).
    """
    pattern = text.strip().lower()
    if pattern.startswith("re:"):
        try:
            regex = re.compile(text.strip()[3:], re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"search: invalid regular expression {text.strip()[3:]!r}: {exc}") from None
        return lambda s: regex.search(s) is not None
    if any(c in pattern for c in "*?["):
        return lambda s: fnmatch.fnmatchcase(s.lower(), pattern)
    return lambda s: pattern in s.lower()

MIN_SCALE, MAX_SCALE = 0.002, 4.0


def _axis_range(lo: float, hi: float, area_lo: float, area_hi: float, view: float,
                scale: float, start: float | None = None) -> tuple[float, float, float]:
    """Along one axis, the scene range a view ``view`` pixels long may scroll over at ``scale`` to show
    the graph's extent ``lo``..``hi`` (scene) inside its free part ``area_lo``..``area_hi`` (pixels):
    exactly one view (no scroll bar) centring the graph in the free part when it fits there, else
    the graph with the margins that let its start and its end reach the free part's edges.
    Returns (range start, range end, the view's centre): when the graph does not fit, the view shows
    it from scene ``start`` at the free part's start edge (default ``lo``; kept within the range)."""
    if (hi - lo) * scale <= area_hi - area_lo:
        first = (lo + hi) / 2 - ((area_lo + area_hi) / 2) / scale
        pad = 1.0 / scale  # 1 px less than the view: no scroll bar
        return first + pad, first + view / scale - pad, first + view / (2 * scale)
    first, last = lo - area_lo / scale, hi + (view - area_hi) / scale
    shown = min(max(lo if start is None else start, lo), hi - (area_hi - area_lo) / scale)
    return first, last, shown - area_lo / scale + view / (2 * scale)


def _zoom_axis(lo: float, hi: float, first: float, span: float, r0: float, r1: float,
               scale: float, scrolls: bool = False) -> tuple[float, float]:
    """Along one axis, the scene range (start, end) for a view showing ``first`` .. ``first + span`` (scene) at
    ``scale`` of a graph spanning ``lo`` .. ``hi``, the scene rectangle spanning ``r0`` .. ``r1`` now: when the graph
    fits the view and the axis does not scroll (``scrolls``: the graph does not fit the room beside the legend and
    the minimap), the view's range from its start (drawn at the viewport's edge: the zoom aligns the rectangle
    there) 2 px short of its end (no scroll bar), moved to hold the graph; else the current range grown to hold
    the graph and the view."""
    if not scrolls and hi - lo <= span - 2.0 / scale:
        first = max(min(first, lo), hi + 2.0 / scale - span)
        first = round(first * scale) / scale  # Qt draws it from a whole pixel: the zoom's point within half of one
        return first, first + span - 2.0 / scale
    return min(r0, lo, first), max(r1, hi, first + span)


COLOR_MODES = ("op", "dtype", "error")


class GraphCanvas(CanvasGroups, CanvasInteraction, CanvasQuant, QGraphicsView):
    """Graph of an ONNX model: nodes coloured by op, dtype or error; click, rubber band and search.

    Signals
    -------
    selectionChangedNames(list[str])
        Selected node names (model order) after any change, interactive or programmatic.
    nodeActivated(str)
        A node was double-clicked (If/Loop nodes carry a body the app may open).
    layoutReady()
        The graph of the last :meth:`set_model` is shown.
    layoutFailed(str)
        The layout job failed; the message says why.
    edgeSelected(str)
        An edge was clicked: its quantized tensor ("" when it carries none, or the edge selection cleared).
    colorsChanged()
        The colour mode or the coloured values changed (the legend follows).
    """

    selectionChangedNames = Signal(list)
    nodeActivated = Signal(str)
    layoutReady = Signal()
    layoutFailed = Signal(str)
    edgeSelected = Signal(str)
    colorsChanged = Signal()

    def __init__(self, parent=None, *, layout_cache_dir: str | Path | None = None, groups: bool = True):
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setBackgroundBrush(QColor("#fbfbfb"))
        self._edge_color = QColor(EDGE_COLOR)
        self.setMouseTracking(False)
        self._cache_dir = Path(layout_cache_dir) if layout_cache_dir else None
        self._use_groups = groups
        self._groups_item: GroupsItem | None = None
        self._hits: list[str] = []
        self._exact_hits = 0  # how many of ``_hits`` (the first ones) the last search's text names exactly
        self._hit_pos = -1
        self._minimap = Minimap(self, self._whole_picture)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._jobs: list[LayoutJob | EdgeQuantJob] = []
        self._generation = 0
        self._slices = SliceRunner(self, self._on_step_failed)
        self._job_result = None
        self._gc_paused = False
        warm_up()
        self._state: CanvasState | None = None
        self._items: dict[int, NodeItem] = {}
        self._overview: OverviewItem | None = None
        self._edges: EdgesItem | None = None
        self._container: QGraphicsRectItem | None = None
        self._mode = "op"
        self._dtypes: dict[str, str] = {}
        self._errors: dict[str, float] = {}
        #: with ``error_scale``: the real figure each node's colour value ranks (node -> dB)
        self._figures: dict[str, float] = {}
        self._badges: dict[str, str] = {}
        self._floats: set[str] = set()  # nodes the recipe keeps float (a dashed outline, in the op legend)
        #: the theme's canvas is dark (:meth:`set_theme_colors`): the kept-float outline is light blue then
        self.dark_theme = False
        self._pending_selection: list[str] = []
        self._band = QRubberBand(QRubberBand.Shape.Rectangle, self.viewport())
        self._band_origin: QPoint | None = None
        self._pan_last: QPoint | None = None
        self._value_label = "SQNR (dB)"
        #: (lowest, highest, higher_is_worse) of a ranked figure drawn on the SQNR scale (the sensitivity
        #: sweep's), so the legend names real values; None: the values are SQNR dB themselves
        self.error_scale: tuple[float, float, bool] | None = None
        #: the legend's notes for the figure the "error" mode shows (None: the SQNR's)
        self.error_notes: list[str] | None = None
        self._quant_init()
        self._fitted_view: tuple | None = None  # transform and scroll position the last fit set
        self._fitting = False
        self._fit_mode = "whole"  # what a resize fits again: "whole" (Fit graph) or "readable" (as opened)
        #: (state, node indices, their scene rect, view key) of the last centre-on: a resize before any zoom, pan
        #: or other selection brings them clear of the overlays again (:meth:`_recentre`)
        self._centred: tuple | None = None
        #: (state, view key, viewport size, viewport pixel, scene point) of the last zoom: the point it meant to draw at
        #: that pixel, which the scroll range may have moved (:meth:`_zoom_point`)
        self._zoom_kept: tuple | None = None
        #: the legend's text while a layout is under way (:meth:`opening`): how many nodes are laid out
        self.opening_hint = ""
        self._marks_key: tuple = ()  # the legend's marks_key when it last followed it (:meth:`_follow_marks`)
        self.legend_overlay = LegendOverlay(self)

    # ----------------------------------------------------------------- model and layout
    def set_model(self, proto: onnx.ModelProto, positions: dict[str, tuple[float, float]] | None = None,
                  *, collapse_qdq: bool = False, depth: int | None = None, keep_view: bool = False) -> None:
        """Show the main graph of ``proto``.

        Reading the graph, the layout (skipped when ``positions``, node name -> scene centre as
        returned by ``layout_graph``, are given) and the scene geometry run in a child process
        (``worker.LayoutJob``); the GUI thread only serializes the model and builds the items, in
        slices of a few milliseconds between events (``slices.SliceRunner``). The graph appears
        when :attr:`layoutReady` is emitted; a failure emits :attr:`layoutFailed` with one line.
        Calling it again before then drops the pending open. Do not modify ``proto`` meanwhile.
        ``collapse_qdq`` hides QuantizeLinear -> DequantizeLinear pairs (an edge badge shows the
        dtype) and weight / bias DequantizeLinear nodes (a "w:i8" / "b:i32" tag on the consumer).

        Unless the canvas was made with ``groups=False`` (or ``positions`` are given), nodes are
        grouped by name scope into collapsible boxes, opened to ``depth`` (default: the deepest
        level drawing at most 80 boxes and nodes, ``workbench.core.api.auto_depth``).

        ``keep_view`` (the same model drawn again, e.g. with Q/DQ as nodes): the new picture keeps the
        open groups, the selection and the selected node (else the one at the view's centre) where
        it was, at a readable zoom (``view_anchor``), instead of the view a model opens with.
        """
        keep = self.view_anchor() if keep_view else None
        self._stop_open()
        self._generation += 1
        old = self._state  # emptied a slice at a time below instead of freed at once here
        self._clear()
        self._hits, self._hit_pos = [], -1
        options = {"collapse_qdq": collapse_qdq, "cache_dir": self._cache_dir, "groups": self._use_groups,
                   "depth": depth, "titles": title_metrics()}
        pause_gc()
        self._gc_paused = True
        # in the legend's place until the layout arrives (it read "No model open" for the seconds of a layout)
        self.opening_hint = f"Laying out {count(len(proto.graph.node), 'node')}..."
        self.legend_overlay.refresh()
        self._slices.start(self._open_steps(self._generation, proto, positions, options, old, keep))

    def opening(self) -> bool:
        """True from :meth:`set_model` until :attr:`layoutReady` or :attr:`layoutFailed`."""
        return self._gc_paused

    def _open_steps(self, generation: int, proto, positions, options: dict, old: CanvasState | None,
                    keep: dict | None = None):
        """The GUI thread's part of :meth:`set_model`, as steps for the slice runner."""
        if old is not None:
            yield from dismantle(old.data)
            del old
        pieces = []
        for piece in proto_pieces(proto):
            pieces.append(piece)
            yield
        job = LayoutJob(generation, pieces, positions, options)
        del pieces
        self._start_job(job)
        yield WAIT  # _on_job_finished resumes with the result in self._job_result
        parts, quantized = self._job_result
        self._job_result = None
        assembler = Assembler()
        for part in parts:
            assembler.feed(part)
            yield
        del parts
        data = assembler.result()
        if quantized:  # reads scale / zero point values: on the full model, in a pool thread
            self._start_job(EdgeQuantJob(generation, proto, data.structure))
            yield WAIT
            data.edge_quant, self._job_result = self._job_result, None
        yield from self._build_scene_steps(data)
        if not self.restore_view_anchor(keep):
            self.fit_readable()
        yield
        self.colorsChanged.emit()  # the legend
        yield
        if self._pending_selection:
            self.select_nodes(self._pending_selection)
            self._pending_selection = []
        self._end_open()
        self.layoutReady.emit()

    def _start_job(self, job) -> None:
        job.signals.finished.connect(self._on_job_finished)
        job.signals.failed.connect(self._on_job_failed)
        self._jobs.append(job)
        self._pool.start(job)

    def _stop_open(self) -> None:
        """Drop a pending open: cancel its jobs, stop its slices."""
        self._cancel_jobs()
        self._slices.stop()
        self._job_result = None
        self._end_open()

    def _end_open(self) -> None:
        if self._gc_paused:
            self._gc_paused = False
            resume_gc()

    def _cancel_jobs(self) -> None:
        for job in self._jobs:
            job.cancel.cancel()

    def _on_job_finished(self, generation: int, result) -> None:
        self._forget_finished_jobs()
        if generation == self._generation and self._slices.running():
            self._job_result = result
            self._slices.resume()

    def _on_job_failed(self, generation: int, message: str) -> None:
        self._forget_finished_jobs()
        if generation == self._generation and self._slices.running():
            self._stop_open()
            self.legend_overlay.refresh()  # no graph, no layout under way: the canvas's empty hint
            self.layoutFailed.emit(message)

    def _on_step_failed(self, exc: BaseException) -> None:
        self._stop_open()
        self.layoutFailed.emit(f"Showing the graph failed: {exc.__class__.__name__}: {exc}")

    def _forget_finished_jobs(self) -> None:
        if self._pool.activeThreadCount() == 0:
            self._jobs.clear()

    def set_theme_colors(self, background: QColor | str, edge: QColor | str) -> None:
        """Background brush and edge colour of the theme (node fills and their text keep their own)."""
        self.setBackgroundBrush(QColor(background))
        self._edge_color = QColor(edge)
        dark = QColor(background).lightness() < 128
        self.dark_theme = dark
        if self._state is not None:  # the kept-float outline in a colour the theme's canvas shows
            self._state.float_mark = colors.float_mark(dark)
            for item in self._items.values():
                item.update()
            self.colorsChanged.emit()  # the legend names its colour
        if self._groups_item is not None:  # open group frames in tints of the theme (light frames on a dark canvas)
            self._groups_item.set_dark(dark)
        self.legend_overlay.set_dark(dark)  # the legend and the minimap were white on the dark canvas
        self._minimap.set_dark(dark)
        if self._edges is not None:
            self._edges.color = self._edge_color
            self._edges.update()

    def shutdown(self) -> None:
        """Drop a pending open and wait for the layout worker (called on close)."""
        self._stop_open()
        self._pool.waitForDone()
        self._jobs.clear()

    def closeEvent(self, event) -> None:
        self.shutdown()
        super().closeEvent(event)

    def _clear(self) -> None:
        had_selection = bool(self._state and self._state.selected)
        self.scene().clear()
        self._state, self._overview, self._container, self._edges = None, None, None, None
        self._groups_item = None
        self._minimap.refresh(QRectF())
        self._items.clear()
        if had_selection:
            self.selectionChangedNames.emit([])

    def _build_scene(self, data: SceneData, selected: set[int] | None = None) -> None:
        for _ in self._build_scene_steps(data, selected):
            pass

    def _build_scene_steps(self, data: SceneData, selected: set[int] | None = None):
        """Items of ``data``'s picture, as steps of a few milliseconds each (20,000 nodes)."""
        self._state = CanvasState(data)
        self._state.selected = set(selected or ())
        self._state.badges = {data.index[n]: t for n, t in self._badges.items() if n in data.index}
        self._state.floats = {data.index[n] for n in self._floats if n in data.index}
        self._state.float_mark = colors.float_mark(self.dark_theme)
        self._map_kernels()  # the group boxes' texts read them
        yield
        yield from self._fill_steps()
        scene = self.scene()
        if data.plan is not None:
            self._groups_item = GroupsItem(self._state)
            self._groups_item.set_dark(self.backgroundBrush().color().lightness() < 128)
            self._groups_item.view = self._shown_scene  # its screen-size titles are placed for what is shown
            scene.addItem(self._groups_item)
            scene.addItem(self._groups_item.titles)
        self._edges = EdgesItem(data, self._edge_color)
        scene.addItem(self._edges)
        scene.addItem(EdgeBadgesItem(data))
        self._install_quant_items()
        yield
        self._overview = OverviewItem(self._state)
        scene.addItem(self._overview)
        yield
        scene.setSceneRect(data.bounds.adjusted(-400, -400, 400, 400))  # may scroll: no container yet
        self._container = QGraphicsRectItem()
        self._container.setFlag(QGraphicsItem.GraphicsItemFlag.ItemHasNoContents, True)
        scene.addItem(self._container)
        if self._state.selected:
            self._overview.refresh_selection()
            self._edges.set_highlight(self._state.selected)
            self._refresh_group_selection()
        self._minimap.scene_changed()
        self._minimap.refresh(data.bounds.adjusted(-30, -30, 30, 30))
        yield

    # ----------------------------------------------------------------- level of detail
    def _scale(self) -> float:
        return self.transform().m11()

    def _shown_scene(self) -> tuple[float, QRectF]:
        """(scale, the scene rectangle the viewport shows)."""
        return self._scale(), self.mapToScene(self.viewport().rect()).boundingRect()

    def _sync_items(self) -> None:
        """Show the overview or the detailed items; create the items of the visible area."""
        if self._state is None or self._container is None:
            return
        if self._groups_item is not None:  # its titles drawn at screen size are placed per scale
            self._groups_item.set_scale(self._scale())
        self._follow_marks()
        detail = self._scale() >= DETAIL_SCALE
        self._overview.setVisible(not detail)
        self._container.setVisible(detail)
        if not detail:
            return
        rect = self.mapToScene(self.viewport().rect()).boundingRect()
        rect.adjust(-rect.width() / 2, -rect.height() / 2, rect.width() / 2, rect.height() / 2)
        for i in self._state.data.in_rect(rect).tolist():
            if i not in self._items:
                self._items[i] = NodeItem(self._state, i, self._container)

    def _follow_marks(self) -> None:
        """Refresh the dtype legend when what decides its notes on edge badges, node tags and INT marks changed
        (``legend.marks_key``: a group opened or closed, a zoom past the marks' readable size)."""
        key = marks_key(self)
        if key == self._marks_key:
            return
        self._marks_key = key
        if self._mode == "dtype":
            self.legend_overlay.refresh()

    @contextmanager
    def _whole_picture(self) -> Iterator[None]:
        """While the minimap renders the scene: the overview item shown and the node items hidden. Zoomed in
        past ``DETAIL_SCALE`` the overview is hidden and node items exist only near the view, so a thumbnail
        drawn then (a selection or new fills while zoomed in) showed those few nodes alone."""
        overview, container = self._overview, self._container
        swap = overview is not None and container is not None and not overview.isVisible()
        if swap:
            overview.setVisible(True)
            container.setVisible(False)
        try:
            yield
        finally:
            if swap:
                overview.setVisible(False)
                container.setVisible(True)

    def detailed_item_count(self) -> int:
        """How many per-node items exist (they are created lazily)."""
        return len(self._items)

    def overview_visible(self) -> bool:
        return self._overview is not None and self._overview.isVisible()

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        super().scrollContentsBy(dx, dy)
        self._sync_items()
        self._minimap.update()

    def _view_key(self) -> tuple:
        return (self.transform(), self.horizontalScrollBar().value(), self.verticalScrollBar().value())

    def resizeEvent(self, event) -> None:
        # still as the last fit left it (no zoom or pan since): fit again to the new size
        refit = self._state is not None and not self._fitting and self._fitted_view == self._view_key()
        recentre = not refit and not self._fitting and self._still_centred()
        super().resizeEvent(event)
        if refit or recentre:
            self._fitting = True  # a scroll bar the fit shows or hides resizes the viewport again
            try:
                self._refit() if refit else self._recentre()
            finally:
                self._fitting = False
        self._sync_items()
        if self._state is not None:  # the minimap's size follows the viewport's
            self._minimap.refresh(self._state.data.bounds.adjusted(-30, -30, 30, 30))

    def minimap(self) -> Minimap:
        """The thumbnail of the graph in the bottom-right corner (visible once a graph is shown)."""
        return self._minimap

    def legend_resized(self) -> None:
        """The legend grew, shrank, showed or hid (a new colour mode): a fitted view is fitted again,
        so the graph stays clear of it; a view the user zoomed or panned is left as it is."""
        if getattr(self, "_state", None) is None or self._fitting or self._fitted_view != self._view_key():
            return
        self._fitting = True
        try:
            self._refit()
        finally:
            self._fitting = False

    def _free_area(self, view: QRectF, bounds: QRectF) -> QRectF:
        """The part of ``view`` (viewport px) a fit of ``bounds`` (scene) may use: clear of the legend
        and of the minimap (``overlays.free_area``)."""
        return free_area(view, bounds, *overlay_rects(self, view))

    def _whole_fit(self) -> tuple[QRectF, QRectF, QRectF, float]:
        """(the graph's bounds with a 30-unit margin (scene), the viewport as it is without scroll bars and the part
        of it clear of the legend and the minimap (pixels), the scale that shows the bounds there, at most 1.0)."""
        bounds = self._state.data.bounds.adjusted(-30, -30, 30, 30)
        # the viewport as it will be once the fit hides the scroll bars a zoomed-in view had
        view = QRectF(QPointF(0, 0), QSizeF(self.maximumViewportSize()))
        area = self._free_area(view, bounds)
        scale = min(area.width() / max(bounds.width(), 1e-9), area.height() / max(bounds.height(), 1e-9), 1.0)
        return bounds, view, area, scale

    def min_zoom(self) -> float:
        """The lowest scale the zoom actions and the wheel reach: ``MIN_SCALE`` (0.002), or the scale of "Fit
        graph" when the whole graph needs less (a 20,000-node chain fits at about 0.0004), so zooming out
        always comes back to the fitted view and zooming in from it goes one step at a time."""
        if self._state is None:
            return MIN_SCALE
        return min(MIN_SCALE, self._whole_fit()[3])

    def fit(self) -> None:
        """Show the whole graph (never magnified beyond 100 %), beside or below the legend, never under
        it nor under the minimap."""
        if self._state is None:
            return
        self._fit_mode = "whole"
        self.legend_overlay.refresh()  # its size for this graph, before the fit leaves room for it
        bounds, view, area, scale = self._whole_fit()
        # the scene point at the viewport's centre that puts the graph's centre at the free area's
        centre = bounds.center() - (area.center() - view.center()) / scale
        visible = QRectF(centre.x() - view.width() / (2 * scale), centre.y() - view.height() / (2 * scale),
                         view.width() / scale, view.height() / scale)
        # the scene rect is what the viewport shows (1 px less: no scroll bars, which would resize the
        # viewport): the alignment then centres it, and zooming in can pan over all of it
        pad = 1.0 / scale
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)  # a zoom aligned it to the top-left corner
        self.scene().setSceneRect(visible.adjusted(pad, pad, -pad, -pad))
        self.setTransform(QTransform.fromScale(scale, scale))
        self.centerOn(centre)
        self._fitted_view = self._view_key()
        self._sync_items()
        self._minimap.update()
        if self.horizontalScrollBar().isVisible() or self.verticalScrollBar().isVisible():
            # hide the scroll bars of the view before now (Qt does it from a queued call): the
            # viewport grows, and its resize fits again
            QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)

    def fit_readable(self) -> None:
        """The view a model opens with: the whole graph when it fits at a zoom where its labels are
        readable (:func:`~workbench.qt.canvas.readable.readable_scale`, group titles and op types at
        least ``READABLE_PX`` pixels high), else the graph at that zoom from its start (its top; across,
        centred when it fits, else the column holding the most nodes, ``main_body.densest_start``: the
        main group rather than the side inputs at the left edge), scroll bars for the rest. Clear of the
        legend and the minimap."""
        if self._state is None:
            return
        self.legend_overlay.refresh()
        bounds, _view, area, whole = self._whole_fit()
        full = QSizeF(self.maximumViewportSize())
        scale = min(1.0, readable_scale(self._state.data))
        if whole >= scale:
            self.fit()
            self._fit_mode = "readable"
            return
        # the scroll bars the larger picture needs take their room from the viewport
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, self)
        wide, tall = self._beyond_view(scale)
        view = QRectF(0, 0, full.width() - (bar if tall else 0), full.height() - (bar if wide else 0))
        area = self._free_area(view, bounds)
        across = densest_start(self._state.data, bounds.left(), bounds.right(), area.width() / scale)
        x = _axis_range(bounds.left(), bounds.right(), area.left(), area.right(), view.width(), scale, across)
        y = _axis_range(bounds.top(), bounds.bottom(), area.top(), area.bottom(), view.height(), scale)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)  # a zoom aligned it to the top-left corner
        self.scene().setSceneRect(QRectF(QPointF(x[0], y[0]), QPointF(x[1], y[1])))
        self.setTransform(QTransform.fromScale(scale, scale))
        self.centerOn(QPointF(x[2], y[2]))
        self._fit_mode = "readable"
        self._sync_items()
        self._range_follows_graph(*self._beyond_view(scale))  # the range a zoom back to this scale gives
        self._fitted_view = self._view_key()
        self._minimap.update()

    def _still_centred(self) -> bool:
        """True while the view is as the last centre-on left it (no zoom, pan or new graph since) and its nodes
        are still selected."""
        c = self._centred
        return (c is not None and self._state is c[0] and c[3] == self._view_key()
                and bool(c[1]) and c[1] <= self._state.selected)

    def _recentre(self) -> None:
        """The nodes of the last centre-on brought clear of the legend and the minimap again, at the same zoom,
        after a resize: opening the Errors dock's histogram shrank a 1024 x 700 window's graph from 502 to 248 px
        high and left the centred Conv under the legend (the view keeps its scroll position). Nodes larger than
        the view stay where the resize left them."""
        _state, indices, rect, _key = self._centred
        view = QRectF(self.viewport().rect())
        if rect.width() * self._scale() > view.width() or rect.height() * self._scale() > view.height():
            self._centred = None
            return
        self._show_at(rect.center(), self._clear_spot(rect))
        self._remember_centre(indices, rect)

    def _remember_centre(self, indices: set[int], rect: QRectF) -> None:
        self._centred = (self._state, frozenset(indices), QRectF(rect), self._view_key())

    def _refit(self) -> None:
        """Fit again as the last fit did (the whole graph, or the readable view a model opens with)."""
        if getattr(self, "_fit_mode", "whole") == "readable":
            self.fit_readable()
        else:
            self.fit()

    def _zoom(self, factor: float, at: QPointF, point: QPointF | None = None) -> None:
        """Scale the view by ``factor`` (kept within :meth:`min_zoom` .. ``MAX_SCALE``) and draw scene ``point``
        (default: the one drawn at viewport pixel ``at`` now) at ``at``, to half a pixel, unless the scroll range
        stops it (zoomed out to the fitted view, whose scene rectangle is the view)."""
        lowest = self.min_zoom()
        target = min(MAX_SCALE, max(lowest, self._scale() * factor))
        if abs(target - lowest) <= 1e-9 * lowest:  # the fitted scale again, not one a rounding away from it
            target = lowest
        if self._state is not None and abs(target - self._whole_fit()[3]) <= 1e-9 * target:
            # Fit graph's view, exactly: there the graph fills the free part of the view along one axis, which the
            # zoom's rule for the scroll range would give the overlays' room (scroll bars at the fitted scale); this
            # view's own fit (a diff pane's fit fits both panes)
            GraphCanvas.fit(self)
            return
        if point is None:
            point = self._zoom_point(QPointF(at))
        self._zoom_scene_rect(target, point, QPointF(at))
        old = self.transformationAnchor()
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.NoAnchor)
        self.setTransform(QTransform.fromScale(target, target))
        self.setTransformationAnchor(old)
        # scroll to the nearest pixel (centerOn truncates: up to a pixel off each step, always the same way)
        drawn = QTransform.fromScale(target, target).map(point) - QPointF(at)
        self.horizontalScrollBar().setValue(round(drawn.x()))
        self.verticalScrollBar().setValue(round(drawn.y()))
        self._sync_items()
        self._range_follows_graph(*self._beyond_view(target))
        self._minimap.update()
        moved = self.viewportTransform().map(point) - QPointF(at)  # the range held the graph whole: off its point
        self._zoom_kept = (self._state, self._view_key(), self.viewport().size(), QPointF(at), QPointF(point)) \
            if max(abs(moved.x()), abs(moved.y())) > 1.0 else None

    def _zoom_point(self, at: QPointF) -> QPointF:
        """The scene point a zoom keeps at viewport pixel ``at``: the one drawn there, unless the last zoom drew its
        point more than a pixel off (where the graph fits the view the zoom's range holds it whole and moves the view
        to, :func:`_zoom_axis`) and the view is as it left it (no pan, resize or other graph since): then the point
        that zoom meant to draw there. Zooming back out started from where the view was moved to: nudenet_320n opened at 1200 x 800 (0.69,
        the graph right of the legend), zoomed in twice (Ctrl++) and out twice, sat 47 px left of where it opened."""
        kept = self._zoom_kept
        if kept is not None and kept[:3] == (self._state, self._view_key(), self.viewport().size()):
            return kept[4] + (at - kept[3]) / self._scale()
        return self.viewportTransform().inverted()[0].map(at)

    def _beyond_view(self, scale: float) -> tuple[bool, bool]:
        """(across, down): whether the graph with its 30-unit margin is wider / taller at ``scale`` than the part of
        the viewport clear of the legend and the minimap (``_free_area``, the viewport without scroll bars), so that
        axis scrolls, by the room to move any node clear of them (the view a model opens with and a zoom use this
        one rule: a graph fitting the viewport across but not the room beside the legend opened with 65 px of
        horizontal scroll, a 6-column grid at 900 x 700, and a zoom back to that scale gave no bar)."""
        content = self._state.data.bounds.adjusted(-30, -30, 30, 30)
        area = self._free_area(QRectF(QPointF(0, 0), QSizeF(self.maximumViewportSize())), content)
        return content.width() * scale > area.width(), content.height() * scale > area.height()

    def _range_follows_graph(self, across: bool, down: bool) -> None:
        """Along the axes that scroll (``across``, ``down``), the scene rectangle becomes the centre-on's range
        (:meth:`_scroll_to`): the graph's scroll room (:meth:`scroll_content`) united with what the view shows, for
        the viewport the bars of those axes leave; the other axes keep theirs, and the view does not move. A zoom
        only grew the rectangle along a scrolling axis, so a zoom out far enough for the graph to fit (or Fit graph)
        and back in kept the fitted view's rectangle: a 20 x 20 Relu grid at 900 x 700, fitted, then zoomed in 2.5x
        three times and out 0.8x three times, scrolled 4,884 px down for 3,600 of graph."""
        if self._state is None or not (across or down):
            return
        scale = self._scale()
        full = QSizeF(self.maximumViewportSize())
        room = self.scroll_content(QRectF(QPointF(0, 0), full), scale)
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, self)
        size = QSizeF(full.width() - (bar if down else 0), full.height() - (bar if across else 0)) / scale
        # the resize anchor is the view's centre: the bars Qt shows or hides later keep it where it is now
        shown = QRectF(QPointF(0, 0), size)
        shown.moveCenter(self.mapToScene(self.viewport().rect()).boundingRect().center())
        both, rect = room.united(shown), self.sceneRect()
        x = (both.left(), both.right()) if across else (rect.left(), rect.right())
        y = (both.top(), both.bottom()) if down else (rect.top(), rect.bottom())
        follows = QRectF(QPointF(x[0], y[0]), QPointF(x[1], y[1]))
        if follows != rect:
            self.scene().setSceneRect(follows)

    def _zoom_scene_rect(self, scale: float, point: QPointF, at: QPointF) -> None:
        """The scene rectangle for a zoom to ``scale`` drawing scene ``point`` at viewport pixel ``at``: along an
        axis where the graph (with its 30-unit margin) fits the view, what the view will show there (2 px less,
        moved to hold the whole graph), so no scroll bar shows with nothing to scroll to; along the others the
        rectangle as it is, grown to hold the graph and what the view will show (once the view is placed,
        :meth:`_range_follows_graph` sets those to the graph's room). A fit sets the rectangle to what the view
        showed at the fitted scale (a 2,000-node chain: about 1.3 million units across), so zooming in on a narrow
        chain showed a horizontal scroll bar, and the fit's 1 px less (1,400 units there) left the chain's first node
        out of the scroll range."""
        if self._state is None:
            return
        content = self._state.data.bounds.adjusted(-30, -30, 30, 30)
        full = QSizeF(self.maximumViewportSize())
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, self)
        wide = content.width() * scale > full.width()
        tall = content.height() * scale > full.height()
        across, down = self._beyond_view(scale)  # the axes that scroll: their range is the graph's room
        # the bar one axis needs takes its room from the other (and may make it need one too)
        width, height = full.width() - (bar if tall else 0), full.height() - (bar if wide else 0)
        rect = self.sceneRect()
        # a rectangle narrower than the view is drawn from the viewport's top-left corner, not centred: Qt centres
        # it on the viewport as it is without scroll bars (half a bar's width off), and the zoom keeps its point
        # to half a pixel
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        x = _zoom_axis(content.left(), content.right(), point.x() - at.x() / scale, width / scale,
                       rect.left(), rect.right(), scale, across)
        y = _zoom_axis(content.top(), content.bottom(), point.y() - at.y() / scale, height / scale,
                       rect.top(), rect.bottom(), scale, down)
        if QRectF(QPointF(x[0], y[0]), QPointF(x[1], y[1])) != rect:
            self.scene().setSceneRect(QRectF(QPointF(x[0], y[0]), QPointF(x[1], y[1])))

    def zoom_in(self) -> None:
        """Zoom in one step (x1.25) toward the selection, else around the view's centre."""
        self._zoom_toward(1.25)

    def zoom_out(self) -> None:
        """Zoom out one step (x0.8) around the selection, else around the view's centre; not below
        :meth:`min_zoom`."""
        self._zoom_toward(0.8)

    def _zoom_toward(self, factor: float) -> None:
        """The keys' and the menu's zoom: the selection's centre stays where it is shown (a selection out of view
        comes to the centre), else the view's centre stays. The cursor is not looked at: a shortcut pressed
        with the mouse resting in a corner of the canvas (or a menu item over it) zoomed toward that corner and
        took the graph out of view in three steps."""
        viewport = QRectF(self.viewport().rect())
        selection = self.selection_scene_rect()
        if selection.isNull():
            self._zoom(factor, viewport.center())
            return
        shown = self.viewportTransform().map(selection.center())
        self._zoom(factor, shown if viewport.contains(shown) else viewport.center(), selection.center())

    def selection_scene_rect(self) -> QRectF:
        """Scene rectangle around the selected nodes as drawn (a node hidden in a collapsed group: its
        box); a null rectangle without a selection or before :attr:`layoutReady`."""
        if self._state is None or not self._state.selected:
            return QRectF()
        d = self._state.data
        idx = np.fromiter(self._state.selected, dtype=np.int64)
        shown = idx[~np.isnan(d.x0[idx])]
        rect = QRectF()
        if len(shown):
            rect = QRectF(QPointF(float(d.x0[shown].min()), float(d.y0[shown].min())),
                          QPointF(float(d.x1[shown].max()), float(d.y1[shown].max())))
        if d.placement is not None:
            for g in {int(d.placement.rep[i]) for i in idx.tolist()} - {-1}:
                rect = rect.united(d.group_rect(g)) if not rect.isNull() else d.group_rect(g)
        return rect

    # ----------------------------------------------------------------- selection
    def _set_selection(self, indices: set[int]) -> None:
        state = self._state
        if state is None or indices == state.selected:
            return
        changed = indices ^ state.selected
        state.selected = set(indices)
        if indices and self._selected_edge is not None:  # a node selection replaces an edge selection
            self._selected_edge = None
            for item in (self._dtype_edges, self._error_edges):
                if item is not None:
                    item.set_selected_edge(None)
        for i in changed:
            if i in self._items:
                self._items[i].update()
        self._overview.refresh_selection()
        self._edges.set_highlight(state.selected)
        self._refresh_group_selection()
        self._minimap.selection_changed()
        self.selectionChangedNames.emit(self.selected_nodes())

    def selected_nodes(self) -> list[str]:
        if self._state is None:
            return []
        names = self._state.data.names
        return [names[i] for i in sorted(self._state.selected)]

    def select_nodes(self, names: list[str], *, center: bool = False) -> None:
        """Select exactly ``names`` (unknown names are ignored); ``center`` brings them into view.

        Before :attr:`layoutReady` the selection is remembered and applied when the graph appears.
        """
        if self._state is None:
            self._pending_selection = list(names)
            return
        index = self._state.data.index
        indices = {index[n] for n in names if n in index}
        self._set_selection(indices)
        if center and indices:
            self._center_on(indices)

    def _center_on(self, indices: set[int]) -> None:
        """Open the groups hiding ``indices`` and bring their nodes into view, clear of the legend and
        the minimap: zoomed out to fit them when they are larger than the view (never beyond 100 %),
        to 100 % when the view draws no node boxes, else at the current zoom."""
        self._reveal(indices)
        d = self._state.data
        idx = np.fromiter(indices, dtype=np.int64)
        rect = QRectF(float(d.x0[idx].min()), float(d.y0[idx].min()),
                      float(d.x1[idx].max() - d.x0[idx].min()), float(d.y1[idx].max() - d.y0[idx].min()))
        view = QRectF(self.viewport().rect())
        visible = self.mapToScene(self.viewport().rect()).boundingRect()
        if rect.width() > visible.width() or rect.height() > visible.height():
            margin = rect.adjusted(-40, -40, 40, 40)
            area = self._free_area(view, margin)
            scale = min(area.width() / margin.width(), area.height() / margin.height(), 1.0)
            self.setTransform(QTransform.fromScale(scale, scale))
            self._show_at(rect.center(), area.center())
            return
        if self._scale() < DETAIL_SCALE:
            self.resetTransform()
        self._show_at(rect.center(), self._clear_spot(rect))
        self._remember_centre(indices, rect)

    def _clear_spot(self, rect: QRectF) -> QPointF:
        """The viewport point nearest its centre where scene ``rect``, drawn at the current zoom, meets
        neither the legend nor the minimap."""
        view = QRectF(self.viewport().rect())
        return clear_spot(view, list(overlay_rects(self, view)), rect.size() * self._scale())

    def _show_at(self, point: QPointF, at: QPointF) -> None:
        """Scroll so that scene ``point`` is drawn at viewport pixel ``at`` (the scroll range is set to the
        graph's and what the view shows, :meth:`_scroll_to`; e.g. after a fit left no room to scroll).

        Where it was drawn depended on when Qt's queued calls ran: a new scene rectangle shows or hides
        scroll bars from a queued call, which resizes the viewport and (resize anchor: the view's
        centre) moves everything by half a bar; and a scene rectangle no larger than the viewport is
        centred by Qt's own account of the viewport's width, 12 px off while the vertical bar shows.
        So the queued call runs here, the point is placed again on the viewport it leaves, and a miss
        left by the centring is made up by growing the scene rectangle on one side."""
        for _ in range(4):
            size = self.viewport().size()
            self._scroll_to(point, at)
            QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)
            if self.viewport().size() != size:
                continue
            miss = at - QPointF(self.mapFromScene(point))
            if abs(miss.x()) <= 1 and abs(miss.y()) <= 1:  # scroll positions are whole pixels
                break
            grow = miss * (2 / self._scale())  # centred: growing one side by 2d moves the drawing by d
            self.scene().setSceneRect(self.sceneRect().adjusted(-max(grow.x(), 0), -max(grow.y(), 0),
                                                                max(-grow.x(), 0), max(-grow.y(), 0)))
        self._sync_items()
        self._minimap.update()

    def _scroll_to(self, point: QPointF, at: QPointF) -> None:
        """One placement of :meth:`_show_at` on the viewport as it is now: the scene rectangle becomes the graph's
        scroll room (:meth:`scroll_content`) and what the view will show, so it follows the graph both ways (it only
        grew: after a centre-on far out, or one at the fitted scale, the range kept thousands of units of empty
        space to scroll into), and the view does not jump."""
        scale = self._scale()
        view = QRectF(self.viewport().rect())
        centre = point - (at - view.center()) / scale
        # the viewport's size from the bars the graph's own range needs, not the bars shown now: a range made for
        # the viewport as it is shows or hides bars, which resize it, and each resize placed again (a loop)
        full = QSizeF(self.maximumViewportSize())
        room = self.scroll_content(QRectF(QPointF(0, 0), full), scale)
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, self)
        width = full.width() - (bar if room.height() * scale > full.height() else 0)
        height = full.height() - (bar if room.width() * scale > full.width() else 0)
        # a quarter pixel less on each side: a range as long as the viewport and longer by a rounding showed a bar
        # with nothing to scroll (Qt shows one for any excess), and a pixel less was centred a pixel off
        inset = 0.25 / scale
        shown = QRectF(centre.x() - width / (2 * scale), centre.y() - height / (2 * scale), width / scale,
                       height / scale).adjusted(inset, inset, -inset, -inset)
        rect = room.united(shown)
        # a rectangle a hair narrower than the viewport is drawn from its top-left corner: Qt centred it on the
        # viewport as it is without scroll bars (7 px off beside the vertical bar, which _show_at made up by growing it)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        if rect != self.sceneRect():
            self.scene().setSceneRect(rect)
        self.centerOn(centre)

    def scroll_content(self, view: QRectF, scale: float) -> QRectF:
        """What the scroll range holds at ``scale`` for a viewport ``view`` (pixels, origin at its top-left) besides
        what the view shows: the graph (its group titles drawn at screen size included) with a 30-unit margin, and
        past its edges the room to scroll any node clear of the legend (top-left) and the minimap (bottom-right):
        their extent in pixels (``overlays.scroll_room``) over ``scale``. Scene units; empty before
        :attr:`layoutReady`."""
        if self._state is None:
            return QRectF()
        bounds = self._groups_item.labels_bounds() if self._groups_item is not None else self._state.data.bounds
        left, top, right, bottom = scroll_room(view, *overlay_rects(self, view))
        return bounds.adjusted(-30 - left / scale, -30 - top / scale, 30 + right / scale, 30 + bottom / scale)

    def _reveal(self, indices: set[int]) -> None:
        """Open the groups hiding any of ``indices`` (and their ancestors)."""
        d = self._state.data
        if d.plan is None:
            return
        hidden = [i for i in indices if not d.shown(i)]
        if not hidden:
            return
        opened = set(d.expanded)
        for i in hidden:
            opened.update(d.hierarchy.ancestors(i))
        self._apply_expanded(opened)

    def search(self, text: str) -> list[str]:
        """Select the nodes whose name or op type matches ``text`` and return their names.

        Case-insensitive. ``re:PATTERN`` is a regular expression searched in the name or op type
        (``re.search``); with ``*``, ``?`` or ``[`` the text is a glob matched against the whole
        name or op type (``fnmatch``); otherwise it matches as a substring. Empty text clears.
        The hits become the list :meth:`next_hit` steps through; the first is brought into view
        (opened, readable, clear of the legend and the minimap) and :meth:`next_hit` goes on from it.
        A plain text that is a node's whole name (not an op type's) selects that node alone, first
        of the hits (as a graph viewer's find ranks the exact name first): "Conv@5" selects Conv@5,
        and Conv@50, Conv@51 follow it in the hits (:meth:`exact_hits` says how many are exact).

        Raises
        ------
        ValueError
            ``re:`` followed by an invalid regular expression (the message says where).
        """
        if self._state is None:
            return []
        self._hits, self._hit_pos, self._exact_hits = [], -1, 0
        if not text.strip():
            self._set_selection(set())
            return []
        match = search_matcher(text)
        st = self._state.data.structure
        hits = {i for i, (n, o) in enumerate(zip(st.names, st.op_types, strict=True)) if match(n) or match(o)}
        exact = self._exact_names(text, hits)
        if exact:
            self._set_selection(exact)
            self._hits = self.selected_nodes() + [st.names[i] for i in sorted(hits - exact)]
            self._exact_hits = len(exact)
            self._center_on(exact)
            self._hit_pos = 0  # F3 steps to the first partial match
            return list(self._hits)
        self._set_selection(hits)
        self._hits = self.selected_nodes()
        if len(hits) == 1:  # opened, centred and readable
            self._center_on(hits)
        elif hits:
            self._show_hit(self._state.data.index[self._hits[0]])
            self._hit_pos = 0  # F3 steps to the second
        return list(self._hits)

    def _exact_names(self, text: str, hits: set[int]) -> set[int]:
        """The hits whose whole name is ``text`` (case-insensitive), for a plain text (no ``re:``, no
        glob) that is not also an op type of the graph ("Conv" still finds every Conv)."""
        pattern = text.strip().lower()
        st = self._state.data.structure
        if pattern.startswith("re:") or any(c in pattern for c in "*?[") or \
                any(o.lower() == pattern for o in set(st.op_types)):
            return set()
        return {i for i in hits if st.names[i].lower() == pattern}

    def exact_hits(self) -> int:
        """How many hits of the last :meth:`search` its text names exactly (0: every hit is a partial
        match); they come first in :meth:`search_hits` and are the ones selected."""
        return self._exact_hits

    def _show_hit(self, i: int) -> None:
        """Bring the first of several hits, node ``i``, into view: its groups opened, at least at the
        readable zoom (``readable.readable_scale``, 100 % at most; a closer zoom stays), scrolled only
        when it is out of view or under the legend or the minimap."""
        self._reveal({i})
        d = self._state.data
        target = min(1.0, readable_scale(d))
        if self._scale() < target:
            self.setTransform(QTransform.fromScale(target, target))
        rect = d.rect(i)
        view = QRectF(self.viewport().rect())
        drawn = QRectF(self.mapFromScene(rect).boundingRect())
        if view.contains(drawn) and not any(drawn.intersects(o) for o in overlay_rects(self, view)):
            self._sync_items()
            self._minimap.update()
            return
        self._show_at(rect.center(), self._clear_spot(rect))
        self._remember_centre({i}, rect)

    def folded_matches(self, text: str, op_types: dict[str, str]) -> list[str]:
        """The Q/DQ nodes folded into badges and tags (not drawn, so :meth:`search` cannot find
        them) whose name or op type matches ``text`` as :meth:`search` matches; ``op_types`` maps
        node names to op types (an unnamed node's key is ``"<op_type>#<index>"``)."""
        if self._state is None or not text.strip():
            return []
        match = search_matcher(text)
        return [n for n in self._state.data.structure.hidden
                if match(n) or match(op_types.get(n) or n.split("#")[0])]

    def search_hits(self) -> list[str]:
        """Names found by the last :meth:`search`, in model order."""
        return list(self._hits)

    def next_hit(self, step: int = 1) -> tuple[str, int, int] | None:
        """Step to the next (``step=1``) or previous (``-1``) hit of the last search, wrapping
        around: open its groups, centre it and select it alone. Returns (name, position 1-based,
        number of hits), or None when the last search found nothing."""
        if not self._hits or self._state is None:
            return None
        self._hit_pos = (self._hit_pos + step) % len(self._hits)
        name = self._hits[self._hit_pos]
        self.select_nodes([name], center=True)
        return name, self._hit_pos + 1, len(self._hits)

    def select_op_type(self, op_type: str) -> list[str]:
        """Select every node of ``op_type`` (case-insensitive exact match) and return their names."""
        if self._state is None:
            return []
        key = op_type.lower()
        ops = self._state.data.structure.op_types
        self._set_selection({i for i, o in enumerate(ops) if o.lower() == key})
        return self.selected_nodes()

    # ----------------------------------------------------------------- colours and badges
    def set_color_mode(self, mode: str) -> None:
        """Colour nodes by ``"op"`` type, assigned activation ``"dtype"`` or ``"error"`` (SQNR)."""
        if mode not in COLOR_MODES:
            raise ValueError(f"color mode must be one of {COLOR_MODES}, got {mode!r}")
        self._mode = mode
        self._sync_quant_mode()
        self._refresh_fills()

    def color_mode(self) -> str:
        return self._mode

    def set_node_values(self, dtypes: dict[str, str] | None = None, errors: dict[str, float] | None = None,
                        *, error_label: str | None = None,
                        error_scale: tuple[float, float, bool] | None = None,
                        error_figures: dict[str, float] | None = None,
                        error_notes: list[str] | None = None) -> None:
        """Per-node activation dtype names and SQNR (dB). None keeps the current values, {} clears them.

        ``error_label`` names the figure the "error" mode shows (legend title; "SQNR (dB)" by default,
        a sensitivity figure such as "only quantized (dB)" when the sweep colours the canvas);
        ``error_scale`` (lowest, highest, higher_is_worse) says the values are that figure on a scale of its
        own stretched over the SQNR colours, so the legend labels each colour with the real value;
        ``error_figures`` (node -> dB, +inf for exact) are the figure's real values, which group boxes
        ("most sensitive X dB") and node tooltips show. Both go with ``error_label``, as
        does ``error_notes``: the legend's notes for the figure (None: those of the SQNR).
        """
        if error_label is not None:
            self._value_label = error_label
            self.error_notes = list(error_notes) if error_notes else None
            self.error_scale = error_scale
            self._figures = {k: float(v) for k, v in (error_figures or {}).items()}
        if dtypes is not None:
            self._dtypes = dict(dtypes)
        if errors is not None:
            self._errors = {k: float(v) for k, v in errors.items()}
        self._refresh_fills()

    def set_badges(self, badges: dict[str, str]) -> None:
        """Replace the short texts drawn on nodes' top-right corner (e.g. ``"u8"``, ``"!"``)."""
        self._badges = dict(badges)
        if self._state is not None:
            index = self._state.data.index
            self._state.badges = {index[n]: t for n, t in self._badges.items() if n in index}
            for item in self._items.values():
                item.update()

    def set_float_nodes(self, names) -> None:
        """Mark ``names`` (nodes the recipe keeps float) with a dashed outline, in every colour mode."""
        self._floats = set(names)
        if self._state is not None:
            index = self._state.data.index
            self._state.floats = {index[n] for n in self._floats if n in index}
            for item in self._items.values():
                item.update()
            if self._groups_item is not None:  # a collapsed box holding such a node has the outline too
                self._groups_item.update()
            if self._mode == "error":  # a group box with no value says "kept float" when it holds such a node
                self._refresh_fills()
            else:
                self.colorsChanged.emit()  # the legend names the outline

    def float_nodes(self) -> set[str]:
        """The nodes marked kept float (:meth:`set_float_nodes`) that the drawn graph holds."""
        index = self._state.data.index if self._state is not None else {}
        return {n for n in self._floats if n in index}

    def node_color(self, name: str) -> QColor:
        """Current fill of node ``name``. Raises KeyError for an unknown name."""
        if self._state is None:
            raise KeyError(name)
        return QColor(self._state.fills[self._state.data.index[name]])

    def node_scene_rect(self, name: str) -> QRectF:
        """Scene rectangle of node ``name``. Raises KeyError for an unknown name."""
        if self._state is None:
            raise KeyError(name)
        return self._state.data.rect(self._state.data.index[name])

    def legend(self) -> list[tuple[str, QColor]]:
        """(label, colour) pairs explaining the current colour mode."""
        if self._mode == "error":
            return [(f"{db:g} dB", QColor(c)) for db, c in colors.ERROR_STOPS] + [("no value", colors.NO_VALUE)]
        if self._mode == "dtype":  # the colours drawn: nodes on the canvas (not folded Q/DQ) and edges
            drawn = [self._dtypes.get(n) for n in self._state.data.structure.names] if self._state else []
            names = sorted({colors.normalize_dtype(v) for v in drawn if v} | set(self.edge_colour_keys()))
            rows = [(n, colors.dtype_color(n)) for n in names]
            return rows + ([("not assigned", colors.NO_VALUE)] if None in drawn else [])
        palette = self.op_colors()
        by_colour: dict[str, list[str]] = {}  # ops that share a colour share one row (rare op types)
        for o in sorted(palette):
            by_colour.setdefault(palette[o].name(), []).append(o)
        return [(", ".join(names), QColor(palette[names[0]])) for names in by_colour.values()]

    def op_colors(self) -> dict[str, QColor]:
        """Fill of each op type of the open model in the "op" colour mode (``colors.op_palette``:
        its most frequent op types clearly apart); empty without a model."""
        if self._state is None:
            return {}
        if not self._state.op_colors:
            self._state.op_colors = colors.op_palette(self._state.data.structure.op_types)
        return self._state.op_colors

    def _compute_fills(self) -> None:
        for _ in self._fill_steps():
            pass

    def _fill_steps(self):
        """Fill and text colour of every node (nodes with the same key share one QColor object),
        then the group boxes' aggregates: two steps."""
        st = self._state.data.structure
        if self._mode == "op":
            keys: list = st.op_types
            make = self.op_colors().__getitem__
        elif self._mode == "dtype":
            keys = [colors.normalize_dtype(self._dtypes[n]) if n in self._dtypes else None for n in st.names]
            make = colors.dtype_color
        else:  # 0.25 dB steps are finer than the colour map can show
            keys = [round(self._errors[n] * 4) / 4 if n in self._errors else None for n in st.names]
            make = colors.error_color
        palette = {k: make(k) for k in set(keys)}
        texts = {k: colors.text_color(c) for k, c in palette.items()}
        self._state.fill_keys = keys
        self._state.fills = [palette[k] for k in keys]
        self._state.texts = [texts[k] for k in keys]
        yield
        d = self._state.data
        if d.plan is not None:
            figures = None
            if self._mode == "error":  # the groups' figures from the exact values, not the colour steps
                keys = [self._errors.get(n) for n in st.names]
                figures = [self._figures.get(n) for n in st.names] if self._figures else None
            self._state.group_fills, self._state.group_texts = group_figures(
                d.hierarchy, d.group_ids, self._mode, keys, figures=figures, ops=st.op_types,
                compute=self._state.compute, kernels=self._state.kernels, floats=self._state.floats)
            yield

    def error_label(self) -> str:
        """What the "error" colour mode shows (the legend's title)."""
        return self._value_label

    def _refresh_fills(self) -> None:
        self.colorsChanged.emit()
        if self._state is None:
            return
        self._compute_fills()
        self._overview.refresh_colors()
        if self._groups_item is not None:
            self._groups_item.update()
            self._groups_item.titles.update()  # their chips take the groups' new fills
        self._minimap.scene_changed()
        self._minimap.refresh(self._state.data.bounds.adjusted(-30, -30, 30, 30))
        for item in self._items.values():
            item.update()
