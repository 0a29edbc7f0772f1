"""The main window's docks: which panel goes where, built apart from the window.

:data:`DOCKS` is the table (title, window attribute, panel class, area, initial state); the
window gets each panel as that attribute (``window.inspector``) and each dock in
``window.docks[title]``. :func:`bring_forward` shows a dock in front, tabbed beside another the
first time; :func:`show_beside` shows it side by side with another (tabbed when both would not fit: a dock
never widens the window).

The graph gets the bulk of the window while the result docks have nothing to show: at a first
launch the panels that edit (Calibration above the Inspector / Recipe tabs) share one column on the
right, :data:`SIDE_WIDTH` of the window wide and the window's full height, and under the graph the
Errors dock (the tutorial's main tool) is one line high, saying what fills it; the other result docks
are hidden. The first result of a session brings the Errors dock forward (:data:`SHOWN_BY_RESULTS`)
and grows a row lower than :data:`SMALL_ROW` to :data:`SIDE_BY_SIDE_HEIGHT` of the window; a dock that
opens an empty row under the graph gets that height too (Qt gave it its size hint, two thirds of the
window). An already-quantized file brings the Errors dock forward with a few lines (what its errors need,
the Compare button): the row is as high as they are (:func:`content_height`; it was a third of the window
around two lines) and still grows with the first result. A saved layout is restored as the user left it (docks, places, sizes) with the Errors dock in
front of its tabs, but the rows above and under the graph never take more than
:data:`MAX_ROWS_HEIGHT` of the window (an empty Problems dock restored at half the window left the
graph a strip), and while the result docks have nothing to show (the app starts with no model) each row
is one line high (:func:`shrink_empty_rows`; the empty Errors dock came back at a third of the window): the
row gets the user's saved height back when a dock in it has something to show (:func:`restore_row`).
Another model opened with no results gets the Errors row one line high again, waiting for its first result, as at
a fresh open (:func:`fresh_errors_row`; the row kept the last result's height), unless the user set its height by hand.
A smaller window keeps each column of docks (right or left of the graph) and each row at its share of the window's
width and height (:func:`keep_column_shares`, :func:`keep_row_shares`): Qt took all of it from the graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QFrame, QMainWindow, QScrollArea

from workbench.qt.autotune_panel import AutotunePanel
from workbench.qt.calibration_panel import CalibrationPanel
from workbench.qt.cost_panel import CostPanel
from workbench.qt.error_view import ErrorView
from workbench.qt.evaluate_panel import EvaluatePanel
from workbench.qt.inspector import Inspector
from workbench.qt.problems_panel import ProblemsPanel
from workbench.qt.recipe_panel import RecipePanel
from workbench.qt.search_hits import SearchHitsPanel
from workbench.qt.sensitivity_panel import SensitivityPanel
from workbench.qt.status_fit import fit_status
from workbench.qt.table_room import TableRoom

Area = Qt.DockWidgetArea


@dataclass(frozen=True)
class DockSpec:
    title: str
    attr: str  # the window attribute holding the panel
    panel: type
    area: Area
    needs_doc: bool = False  # the panel's constructor takes the document
    tab_with: str = ""  # tabified with this dock at start
    above: str = ""  # split above this dock (same area) at start
    hidden: bool = False  # hidden at start (shown by the View menu or by the job that fills it)
    scroll: bool = False  # in a scroll area: its minimum width does not set the column's


DOCKS: tuple[DockSpec, ...] = (
    DockSpec("Inspector", "inspector", Inspector, Area.RightDockWidgetArea, needs_doc=True),
    # its rules caption is one 500 px line: it scrolls sideways in a narrower column
    DockSpec("Recipe", "recipe_panel", RecipePanel, Area.RightDockWidgetArea, needs_doc=True, tab_with="Inspector",
             scroll=True),
    DockSpec("Calibration", "calibration", CalibrationPanel, Area.RightDockWidgetArea, above="Inspector"),
    # a line high until the first result of a session (or an already-quantized file) grows it
    DockSpec("Errors", "errors", ErrorView, Area.BottomDockWidgetArea),
    # preparation notes, plan issues, writer notes; shown (beside Errors) by the status bar's link
    DockSpec("Problems", "problems", ProblemsPanel, Area.BottomDockWidgetArea, needs_doc=True, hidden=True),
    # shown (as a tab beside Errors) by the first sweep
    DockSpec("Sensitivity", "sensitivity", SensitivityPanel, Area.BottomDockWidgetArea, hidden=True),
    # View > Cost; computed only while shown
    DockSpec("Cost", "cost", CostPanel, Area.BottomDockWidgetArea, needs_doc=True, hidden=True),
    # shown (beside the Inspector) by a search that finds nodes
    DockSpec("Search Hits", "search_hits", SearchHitsPanel, Area.RightDockWidgetArea, hidden=True),
    # Run > Evaluate shows it beside Errors (the SQNR bars); Run > Autotune as a tab beside Evaluate
    DockSpec("Evaluate", "evaluate_panel", EvaluatePanel, Area.BottomDockWidgetArea, needs_doc=True, hidden=True),
    DockSpec("Autotune", "autotune_panel", AutotunePanel, Area.BottomDockWidgetArea, needs_doc=True, hidden=True),
)

#: fraction of the window's height a row of result docks gets when first shown (the graph first)
SIDE_BY_SIDE_HEIGHT = 0.36

#: a row of docks lower than this fraction of the window is grown by its first result
SMALL_ROW = 0.2

#: the most of the window's height the rows above and under the graph take in a restored layout
MAX_ROWS_HEIGHT = 0.38

#: fraction of the window's width the right column (Calibration, Inspector, Recipe) gets at a first launch
SIDE_WIDTH = 0.24

#: room for the separator between two side-by-side docks, pixels
SPLITTER_WIDTH = 8

#: the docks in front of their tab groups at start
FRONT = ("Inspector", "Errors")

#: docks that have nothing to show when the app starts: hidden at every launch, even when the saved
#: layout had them open (a search brings the hits forward again)
EMPTY_AT_START = ("Search Hits",)

#: docks shown by the first result of a session that fills them, unless the user showed or hid them
#: first (View menu)
SHOWN_BY_RESULTS = ("Errors",)

#: dock property: True while the dock waits for its first result to come forward
WAITING = "waitingForResult"
#: dock property: True once the dock has a size of its own in the layout (it was shown, or the
#: restored layout had it open): shown again, it gets that size back
SIZED = "hasOwnSize"

#: dock property: the height (pixels) of the restored row the dock is in, kept while the row is one line high
#: with nothing to show (:func:`shrink_empty_rows`); 0 or None once the row has it back
SAVED_HEIGHT = "savedRowHeight"

ROWS = (Area.BottomDockWidgetArea, Area.TopDockWidgetArea)

#: dock property: [share of the window's height, height set in px] of its row, as :func:`keep_row_shares` made it
#: lower (or higher again) with the window
ROW_SHARE = "rowShareOfWindow"

#: the areas right and left of the graph: columns of docks
COLUMNS = (Area.RightDockWidgetArea, Area.LeftDockWidgetArea)

#: dock property: [share of the window's width, width set in px] of its column, as :func:`keep_column_shares` made it
#: narrower (or wider again) with the window
COLUMN_SHARE = "columnShareOfWindow"

#: dock property: the height (pixels) the app last gave the dock's row (a first launch's line, a result's
#: :data:`SIDE_BY_SIDE_HEIGHT`, a fit, a share kept with the window); a row of another height was sized by hand
APP_HEIGHT = "appRowHeight"

#: docks whose table gets room for a few rows when it fills (:class:`workbench.qt.table_room.TableRoom`)
TABLE_DOCKS = ("Sensitivity", "Cost")


def build_docks(window: QMainWindow, doc: Any) -> dict[str, QDockWidget]:
    """Create every panel of :data:`DOCKS` and its dock on ``window``; returns title -> dock."""
    docks: dict[str, QDockWidget] = {}
    for spec in DOCKS:
        panel = spec.panel(doc) if spec.needs_doc else spec.panel()
        setattr(window, spec.attr, panel)
        dock = QDockWidget(spec.title, window)
        dock.setObjectName(f"dock-{spec.title}")
        dock.setWidget(_scrolling(panel) if spec.scroll else panel)
        window.addDockWidget(spec.area, dock)
        docks[spec.title] = dock
    for spec in DOCKS:
        if spec.above:  # split first: the tabs join the dock below
            window.splitDockWidget(docks[spec.title], docks[spec.above], Qt.Orientation.Vertical)
    for spec in DOCKS:
        if spec.tab_with:
            window.tabifyDockWidget(docks[spec.tab_with], docks[spec.title])
        if spec.hidden:
            docks[spec.title].hide()
    for title in FRONT:
        docks[title].raise_()
    # the right column runs the window's full height: result docks open under the graph only
    window.setCorner(Qt.Corner.BottomRightCorner, Area.RightDockWidgetArea)
    window.setCorner(Qt.Corner.TopRightCorner, Area.RightDockWidgetArea)
    for title in SHOWN_BY_RESULTS:
        docks[title].setProperty(WAITING, True)
    for dock in docks.values():
        dock.toggleViewAction().triggered.connect(
            lambda checked, dock=dock: _on_view_toggle(window, docks, dock, checked))
    doc.modelChanged.connect(lambda: settle_first_layouts(window))  # first: the handlers below see settled rows
    doc.resultsChanged.connect(lambda: doc.errors and reveal(window, docks, "Errors"))
    # a restored row shrunk while empty: a model fills the docks in front other than Errors (Problems, Cost)
    doc.modelChanged.connect(lambda: _restore_filled_rows(window, docks))
    # another model, no results yet: the Errors row one line high again, as at a fresh open
    doc.modelChanged.connect(lambda: doc.errors or doc.quant_summary is not None or fresh_errors_row(window, docks))
    # an already-quantized file: the Errors dock says what its errors need and offers the comparison
    # (a few lines: the row is as high as they are, and grows with the first result as usual)
    doc.modelChanged.connect(lambda: doc.quant_summary is not None and reveal(window, docks, "Errors", fit=True))
    _FirstLayout(window, lambda: first_sizes(window, docks))
    for title in TABLE_DOCKS:  # their tables get room for a few rows when they fill
        TableRoom(window, docks[title], docks[title].widget().table)
    # a long status (a result) grows the Calibration dock to show it, the Inspector kept over twice its height
    window.calibration.status.changed.connect(lambda: QTimer.singleShot(0, lambda: fit_status(window, docks)))
    return docks


def _scrolling(panel) -> QScrollArea:
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(panel)
    return area


class _FirstLayout(QObject):
    """Runs ``sizes`` once the window is first shown (on the next event-loop turn, once laid out):
    the first-launch sizes, or the clamp of a restored layout (``name``). A model opened before that turn
    runs it first (:func:`settle_first_layouts`), so the docks' sizes do not depend on which came first."""

    def __init__(self, window: QMainWindow, sizes, name: str = "firstDockLayout"):
        super().__init__(window)
        self.setObjectName(name)
        self.window, self.sizes = window, sizes
        self.pending, self.shown = True, False
        window.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt's name)
        if obj is self.window and event.type() == QEvent.Type.Show:
            self.window.removeEventFilter(self)
            self.shown = True
            QTimer.singleShot(0, self.run)
        return False

    def run(self) -> None:
        """``sizes``, once (not after :meth:`cancel`)."""
        if self.pending:
            self.pending = False
            self.sizes()

    def cancel(self) -> None:
        self.window.removeEventFilter(self)
        self.pending = False


def settle_first_layouts(window: QMainWindow) -> None:
    """Run now the first-show sizes still waiting for their event-loop turn after the window was shown (a
    model opened first: the rows it fills are sized after the restored layout settled, not before), and lay
    the window out so the docks have those sizes."""
    waiting = [layout for layout in window.findChildren(_FirstLayout) if layout.shown and layout.pending]
    for layout in waiting:
        layout.run()
    if waiting:
        window.layout().activate()


def first_sizes(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """A first launch: the right column (:func:`size_side_column`) and the Errors row one line high."""
    size_side_column(window, docks)
    errors = docks["Errors"]
    if errors.isVisible() and not errors.isFloating() and window.dockWidgetArea(errors) in ROWS:
        line = line_height(errors)
        window.resizeDocks([errors], [line], Qt.Orientation.Vertical)
        errors.setProperty(SIZED, True)
        errors.setProperty(APP_HEIGHT, line)


def line_height(dock: QDockWidget) -> int:
    """Height of ``dock`` showing its one-line placeholder (title bar, the line, margins), pixels."""
    dock.widget().layout().activate()
    return max(dock.minimumSizeHint().height(), dock.widget().sizeHint().height() + 24)


def content_height(dock: QDockWidget) -> int:
    """Height of ``dock`` showing the whole of its content at its present width (title bar, wrapped lines,
    buttons, margins), pixels; at least its minimum height."""
    widget = dock.widget()
    layout = widget.layout()
    layout.activate()
    # the dock's minimum counts the widget's minimum height where one is set (WrappedHeight), else its hint
    title = dock.minimumSizeHint().height() - (widget.minimumHeight() or widget.minimumSizeHint().height())
    inner = layout.totalHeightForWidth(widget.width()) if layout.hasHeightForWidth() else widget.sizeHint().height()
    return max(dock.minimumSizeHint().height(), inner + title)


def _row(window: QMainWindow, docks: dict[str, QDockWidget], area: Area) -> list[QDockWidget]:
    """The docks shown in the row or column ``area`` (under, over, right or left of the graph), not floating."""
    return [d for d in docks.values() if d.isVisible() and not d.isFloating() and window.dockWidgetArea(d) == area]


def shrink_empty_rows(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """Each row of docks under and over the graph one line high (its docks' :func:`line_height`): called on a
    restored layout while no dock has anything to show. The row's height is kept on its docks
    (:data:`SAVED_HEIGHT`) for :func:`restore_row`; a row already that low is left as it is."""
    for area in ROWS:
        shown = _row(window, docks, area)
        if not shown:
            continue
        height, line = max(d.height() for d in shown), max(line_height(d) for d in shown)
        if height <= line:
            continue
        for dock in (d for d in docks.values() if window.dockWidgetArea(d) == area):
            dock.setProperty(SAVED_HEIGHT, height)
        window.resizeDocks(shown, [line] * len(shown), Qt.Orientation.Vertical)


def restore_row(window: QMainWindow, docks: dict[str, QDockWidget], dock: QDockWidget) -> bool:
    """Give the row of ``dock`` back the height :func:`shrink_empty_rows` kept (the user's, from the saved
    layout); False when there is none (the row was not shrunk, or has it back already)."""
    height = dock.property(SAVED_HEIGHT)
    area = window.dockWidgetArea(dock)
    if not height or area not in ROWS or dock.isFloating():
        return False
    for other in (d for d in docks.values() if window.dockWidgetArea(d) == area):
        other.setProperty(SAVED_HEIGHT, 0)
    shown = _row(window, docks, area)
    if shown:
        window.resizeDocks(shown, [int(height)] * len(shown), Qt.Orientation.Vertical)
    return True


def fresh_errors_row(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """A model opened with no results: the Errors row a result grew (or a fit) back to one line high, Errors in
    front, waiting for the model's first result to grow it again, as at a fresh open. A row whose height the
    user set by hand (not :data:`APP_HEIGHT`) is left as it is."""
    errors = docks["Errors"]
    ours = errors.property(APP_HEIGHT)
    if not errors.isVisible() or errors.isFloating() or window.dockWidgetArea(errors) not in ROWS:
        return
    if not ours or abs(errors.height() - int(ours)) > 1:
        return
    errors.raise_()
    errors.setProperty(WAITING, True)

    def shrink() -> None:  # the line measured on the placeholder, not on the last model's bars
        if errors.property(WAITING) and errors.isVisible() and not errors.isFloating():
            errors.widget().layout().activate()
            errors.widget().wrapped_height.hold()  # its minimum still counted the last model's histogram
            line = line_height(errors)
            errors.setProperty(APP_HEIGHT, line)
            window.resizeDocks([errors], [line], Qt.Orientation.Vertical)

    # the window shows the new model's empty results a turn after the model changed (it defers them): after that
    QTimer.singleShot(0, lambda: QTimer.singleShot(0, shrink))


def _restore_filled_rows(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """A model opened: a shrunk row whose dock in front is not Errors (Problems, Cost: they show the model
    itself) gets its height back; Errors gets it with its first result (:func:`reveal`)."""
    for area in ROWS:
        front = [d for d in _row(window, docks, area) if not d.visibleRegion().isEmpty()]
        if any(d is not docks["Errors"] for d in front) and front[0].property(SAVED_HEIGHT):
            QTimer.singleShot(0, lambda dock=front[0]: restore_row(window, docks, dock))


def clamp_rows(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """The rows of docks above and under the graph at most :data:`MAX_ROWS_HEIGHT` of the window
    together (each its share, by its height)."""
    rows = {}
    for area in ROWS:
        shown = [d for d in docks.values() if d.isVisible() and not d.isFloating() and window.dockWidgetArea(d) == area]
        if shown:
            rows[area] = shown
    heights = {area: max(d.height() for d in shown) for area, shown in rows.items()}
    total, limit = sum(heights.values()), int(MAX_ROWS_HEIGHT * window.height())
    if total <= limit:
        return
    for area, shown in rows.items():
        want = int(limit * heights[area] / total)
        window.resizeDocks(shown, [want] * len(shown), Qt.Orientation.Vertical)


def keep_row_shares(window: QMainWindow, docks: dict[str, QDockWidget], old_height: int) -> None:
    """The window's height changed from ``old_height`` (px). Lower: each row of docks under and over the graph back
    to the share of the window's height it had (Qt takes all the lost height from the graph: the Errors row grown in
    a 1400x900 window kept its 324 px at 700, and a diff tab's list was 190 px tall), never below its docks' minimum
    height or a placeholder line (:func:`_least_height`). Higher: a row made lower so gets its share back (a
    maximize / restore cycle ends where it began); any other row stays as it is (the graph gets the room). The share
    is kept on the row's docks (:data:`ROW_SHARE`) while the row keeps the height set, so it does not drift."""
    _keep_shares(window, docks, ROWS, Qt.Orientation.Vertical, old_height)


def keep_column_shares(window: QMainWindow, docks: dict[str, QDockWidget], old_width: int) -> None:
    """The window's width changed from ``old_width`` (px): :func:`keep_row_shares` for the columns of docks right and
    left of the graph, never below their docks' minimum width (:data:`COLUMN_SHARE`). Qt took all the lost width from
    the graph: the right column sized at a first launch in a 1920x1080 window (461 px, 0.24) kept 461 px at 1024x700,
    and a diff tab's panes were 123 and 183 px wide; it is now 292 px there, as when the window opened at that
    size."""
    _keep_shares(window, docks, COLUMNS, Qt.Orientation.Horizontal, old_width)


def _keep_shares(window: QMainWindow, docks: dict[str, QDockWidget], areas: tuple[Area, ...],
                 orientation: Qt.Orientation, old: int) -> None:
    """:func:`keep_row_shares` (``orientation`` vertical, the rows) or :func:`keep_column_shares` (horizontal)."""
    across = orientation == Qt.Orientation.Horizontal
    new = window.width() if across else window.height()
    if old <= 0 or new == old:
        return
    prop = COLUMN_SHARE if across else ROW_SHARE
    for area in areas:
        shown = _row(window, docks, area)
        if not shown:
            continue
        now = max(d.width() if across else d.height() for d in shown)
        kept = shown[0].property(prop)
        ours = bool(kept) and int(kept[1]) == now  # the size this function set, untouched since
        if new > old and not ours:
            continue
        share = float(kept[0]) if ours else now / old
        floor = max(_least_width(d) if across else _least_height(d, window) for d in shown)
        want = max(round(share * new), floor)
        if (want < now) if new < old else (want > now):
            window.resizeDocks(shown, [want] * len(shown), orientation)
            for dock in shown:
                dock.setProperty(prop, [share, want])
                if not across and dock.property(APP_HEIGHT) == now:  # the app's height, kept with the window
                    dock.setProperty(APP_HEIGHT, want)
            if across:
                window.layout().activate()  # the docks under the graph at their new width: their lines wrap anew


def _least_width(dock: QDockWidget) -> int:
    """The narrowest ``dock`` may be, px: its minimum width, set or hinted."""
    return max(dock.minimumWidth(), dock.minimumSizeHint().width())


def _least_height(dock: QDockWidget, window: QMainWindow) -> int:
    """The lowest ``dock`` may be, px: its minimum height, and the whole of a placeholder line or a few
    (:func:`line_height` under :data:`SMALL_ROW` of the window). A dock showing results has a taller content (the
    Errors dock's bars: 664 px) and keeps only its minimum: a 1920x1080 window shrunk to 1024x700 left its row at
    368 px, the diff tab above it a strip 250 px high."""
    line = line_height(dock)
    return max(dock.minimumSizeHint().height(), line if line < SMALL_ROW * window.height() else 0)


def size_side_column(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """The right column :data:`SIDE_WIDTH` of the window wide (at least its docks' minimum width),
    the Calibration panel at its natural height above the Inspector."""
    column = [d for d in docks.values() if window.dockWidgetArea(d) == Area.RightDockWidgetArea
              and d.isVisibleTo(window) and not d.isFloating()]
    if not column:
        return
    width = max([round(SIDE_WIDTH * window.width())] + [d.minimumSizeHint().width() for d in column])
    window.resizeDocks(column[:1], [width], Qt.Orientation.Horizontal)
    calibration = docks["Calibration"]
    if calibration in column:
        window.resizeDocks([calibration], [calibration.sizeHint().height()], Qt.Orientation.Vertical)


def settle_restored(window: QMainWindow, docks: dict[str, QDockWidget], empty=lambda: False) -> None:
    """After ``window.restoreState``: the user's layout stays (no first-launch sizes); hide
    :data:`EMPTY_AT_START` (shown again, a dock comes back where it was, at its size) and put
    :data:`FRONT` in front. Once shown, the rows over and under the graph are clamped (:func:`clamp_rows`) and,
    when ``empty()`` (no result dock has anything to show), one line high (:func:`shrink_empty_rows`)."""
    first = window.findChild(_FirstLayout, "firstDockLayout")
    if first is not None:
        first.cancel()
    for dock in docks.values():
        if not dock.isHidden():
            dock.setProperty(SIZED, True)
    for title in EMPTY_AT_START:
        docks[title].hide()
    for title in FRONT:
        if not docks[title].isHidden():
            docks[title].raise_()
    if window.findChild(_FirstLayout, "restoredRows") is None:
        def settle() -> None:
            clamp_rows(window, docks)
            if empty():
                shrink_empty_rows(window, docks)

        _FirstLayout(window, settle, "restoredRows")


def reveal(window: QMainWindow, docks: dict[str, QDockWidget], title: str, fit: bool = False) -> bool:
    """Show dock ``title`` in front if it waits for its first result (:data:`SHOWN_BY_RESULTS`);
    True when it was shown. ``fit``: it shows a few lines, not a result (an already-quantized file):
    a row it opens, or one lower than :data:`SMALL_ROW`, is as high as its content (:func:`content_height`),
    a saved height is kept, and the dock still waits for its first result."""
    dock = docks[title]
    if not dock.property(WAITING):
        return False
    if fit:
        return _fit(window, docks, dock)
    dock.setProperty(WAITING, False)
    if dock.isVisibleTo(window):  # its one-line placeholder: in front, a row it can be read in
        dock.raise_()
        if dock.property(SAVED_HEIGHT):  # a restored row shrunk while empty: the user's height back
            QTimer.singleShot(0, lambda: restore_row(window, docks, dock))
        elif _low_row(window, dock):
            QTimer.singleShot(0, lambda: _grow_row(window, dock))
        return False
    _show(window, docks, dock)
    return True


def _low_row(window: QMainWindow, dock: QDockWidget) -> bool:
    """True when ``dock`` is under (or over) the graph in a row lower than :data:`SMALL_ROW` of the window."""
    return window.dockWidgetArea(dock) in ROWS and not dock.isFloating() and dock.height() < SMALL_ROW * window.height()


def _fit(window: QMainWindow, docks: dict[str, QDockWidget], dock: QDockWidget) -> bool:
    """:func:`reveal` of a dock showing a few lines: in front, its row as high as they are (:func:`_fit_row`)
    when it opens the row or the row is low; True when it was shown."""
    if dock.isVisibleTo(window):
        dock.raise_()
        if _low_row(window, dock):
            QTimer.singleShot(0, lambda: _fit_row(window, dock))
        return False
    opens = _opens_row(window, docks, dock)
    dock.show()
    dock.raise_()
    dock.setProperty(SIZED, True)
    if opens:
        QTimer.singleShot(0, lambda: _fit_row(window, dock))
    return True


def _fit_row(window: QMainWindow, dock: QDockWidget) -> None:
    """A shown dock under (or over) the graph as high as its content, at most :data:`SIDE_BY_SIDE_HEIGHT` of
    the window. If the dock's width changes while it still has that height (the window's layout settling
    after a restored state), its lines wrap anew and it is fitted again (:class:`_Refit`)."""
    if window.dockWidgetArea(dock) not in ROWS or dock.isFloating() or not dock.isVisible():
        return
    want = min(content_height(dock), int(SIDE_BY_SIDE_HEIGHT * window.height()))
    if dock.height() != want:
        window.resizeDocks([dock], [want], Qt.Orientation.Vertical)
    dock.setProperty(APP_HEIGHT, want)
    refit = dock.findChild(_Refit)
    if refit is None:
        refit = _Refit(window, dock)
        dock.installEventFilter(refit)
    refit.fitted = (dock.width(), want)


class _Refit(QObject):
    """Fits a dock to its content again when its width changes while it keeps the height :func:`_fit_row` gave
    it (a later height, the user's or a result's, ends it)."""

    def __init__(self, window: QMainWindow, dock: QDockWidget):
        super().__init__(dock)
        self.window, self.dock = window, dock
        self.fitted: tuple[int, int] | None = None

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Resize and self.fitted is not None:
            width, height = self.fitted
            if abs(self.dock.height() - height) > 1:
                self.fitted = None  # its height was set otherwise: leave it
            elif self.dock.width() != width:
                self.fitted = None
                QTimer.singleShot(0, lambda: _fit_row(self.window, self.dock))
        return False


def bring_forward(window: QMainWindow, docks: dict[str, QDockWidget], title: str, beside: str) -> None:
    """Show dock ``title`` in front, as a tab beside ``beside`` the first time it is shown (``beside``
    comes forward with it when it waits for its first result)."""
    dock = docks[title]
    if not dock.isVisible():
        reveal(window, docks, beside)
        if docks[beside].isVisible() and not window.tabifiedDockWidgets(dock):
            window.tabifyDockWidget(docks[beside], dock)
    _show(window, docks, dock)


def show_beside(window: QMainWindow, docks: dict[str, QDockWidget], title: str, beside: str) -> None:
    """Show dock ``title`` in front, to the right of ``beside`` (split, not tabbed) the first time,
    the row at least :data:`SIDE_BY_SIDE_HEIGHT` of the window's height (both panels hold plots);
    ``beside`` comes forward with it when it waits for its first result."""
    dock = docks[title]
    if not dock.isVisible() and reveal(window, docks, beside):
        window.layout().activate()  # its width, to see whether both fit
    first = not dock.isVisible() and docks[beside].isVisible() and not window.tabifiedDockWidgets(dock)
    if first and not _fits_beside(dock, docks[beside]):  # split, both would widen the window
        bring_forward(window, docks, title, beside)
        return
    if first:
        window.splitDockWidget(docks[beside], dock, Qt.Orientation.Horizontal)
    _show(window, docks, dock)
    if first:  # once the split is laid out (resizeDocks is ignored before)
        QTimer.singleShot(0, lambda: _grow_row(window, dock))


def _fits_beside(dock: QDockWidget, beside: QDockWidget) -> bool:
    """True when ``beside`` is wide enough to share its width with ``dock`` at both minimum widths."""
    need = dock.minimumSizeHint().width() + beside.minimumSizeHint().width() + SPLITTER_WIDTH
    return beside.width() >= need


def _opens_row(window: QMainWindow, docks: dict[str, QDockWidget], dock: QDockWidget) -> bool:
    """True when ``dock`` has no size of its own yet and no other dock is shown in its row (under
    or over the graph): Qt would give it its size hint (Errors: 596 of 900 px)."""
    area = window.dockWidgetArea(dock)
    if dock.property(SIZED) or dock.isFloating() or area not in ROWS:
        return False
    return not any(d is not dock and d.isVisibleTo(window) and not d.isFloating() and window.dockWidgetArea(d) == area
                   for d in docks.values())


def _show(window: QMainWindow, docks: dict[str, QDockWidget], dock: QDockWidget) -> None:
    """Show ``dock`` in front; a row it opens gets :data:`SIDE_BY_SIDE_HEIGHT` of the window."""
    opens = _opens_row(window, docks, dock)
    dock.show()
    dock.raise_()
    dock.setProperty(SIZED, True)
    if dock.property(SAVED_HEIGHT):  # into a restored row shrunk while empty: its saved height back
        QTimer.singleShot(0, lambda: restore_row(window, docks, dock))
    elif opens:
        QTimer.singleShot(0, lambda: _grow_row(window, dock, exactly=True))


def _on_view_toggle(window: QMainWindow, docks: dict[str, QDockWidget], dock: QDockWidget, shown: bool) -> None:
    """The user showed or hid ``dock`` (View menu): a result no longer moves it, and a row it opens
    gets :data:`SIDE_BY_SIDE_HEIGHT` of the window."""
    dock.setProperty(WAITING, False)
    if shown:
        opens = _opens_row(window, docks, dock)
        dock.setProperty(SIZED, True)
        if dock.property(SAVED_HEIGHT):
            QTimer.singleShot(0, lambda: restore_row(window, docks, dock))
        elif opens:
            QTimer.singleShot(0, lambda: _grow_row(window, dock, exactly=True))


def _grow_row(window: QMainWindow, dock: QDockWidget, exactly: bool = False) -> None:
    """A shown dock under (or over) the graph at least (``exactly``) :data:`SIDE_BY_SIDE_HEIGHT`
    of the window high."""
    if window.dockWidgetArea(dock) not in ROWS or dock.isFloating() or not dock.isVisible():
        return
    want = int(SIDE_BY_SIDE_HEIGHT * window.height())
    if dock.height() < want or exactly and dock.height() != want:
        window.resizeDocks([dock], [want], Qt.Orientation.Vertical)
        dock.setProperty(APP_HEIGHT, want)
