"""The main window's docks: which panel goes where, built apart from the window.

:data:`DOCKS` is the table (title, window attribute, panel class, area, initial state); the
window gets each panel as that attribute (``window.inspector``) and each dock in
``window.docks[title]``. :func:`bring_forward` shows a dock in front, tabbed beside another the
first time; :func:`show_beside` shows it side by side with another (tabbed when both would not fit: a dock
never widens the window).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QMainWindow

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

Area = Qt.DockWidgetArea


@dataclass(frozen=True)
class DockSpec:
    title: str
    attr: str  # the window attribute holding the panel
    panel: type
    area: Area
    needs_doc: bool = False  # the panel's constructor takes the document
    tab_with: str = ""  # tabified with this dock at start
    hidden: bool = False  # hidden at start (shown by the View menu or by the job that fills it)


DOCKS: tuple[DockSpec, ...] = (
    DockSpec("Inspector", "inspector", Inspector, Area.RightDockWidgetArea, needs_doc=True),
    DockSpec("Recipe", "recipe_panel", RecipePanel, Area.RightDockWidgetArea, needs_doc=True, tab_with="Inspector"),
    DockSpec("Calibration", "calibration", CalibrationPanel, Area.LeftDockWidgetArea),
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

#: fraction of the window's height a row of side-by-side docks gets when first shown
SIDE_BY_SIDE_HEIGHT = 0.42

#: room for the separator between two side-by-side docks, pixels
SPLITTER_WIDTH = 8

#: the docks in front of their tab groups at start
FRONT = ("Inspector",)

#: docks that have nothing to show when the app starts: hidden at every launch, even when the saved
#: layout had them open (a search brings the hits forward again)
EMPTY_AT_START = ("Search Hits",)


def build_docks(window: QMainWindow, doc: Any) -> dict[str, QDockWidget]:
    """Create every panel of :data:`DOCKS` and its dock on ``window``; returns title -> dock."""
    docks: dict[str, QDockWidget] = {}
    for spec in DOCKS:
        panel = spec.panel(doc) if spec.needs_doc else spec.panel()
        setattr(window, spec.attr, panel)
        dock = QDockWidget(spec.title, window)
        dock.setObjectName(f"dock-{spec.title}")
        dock.setWidget(panel)
        window.addDockWidget(spec.area, dock)
        docks[spec.title] = dock
    for spec in DOCKS:
        if spec.tab_with:
            window.tabifyDockWidget(docks[spec.tab_with], docks[spec.title])
        if spec.hidden:
            docks[spec.title].hide()
    for title in FRONT:
        docks[title].raise_()
    return docks


def settle_restored(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """After ``window.restoreState``: hide :data:`EMPTY_AT_START` and put :data:`FRONT` in front."""
    for title in EMPTY_AT_START:
        docks[title].hide()
    for title in FRONT:
        if docks[title].isVisibleTo(window) or window.tabifiedDockWidgets(docks[title]):
            docks[title].raise_()


def bring_forward(window: QMainWindow, docks: dict[str, QDockWidget], title: str, beside: str) -> None:
    """Show dock ``title`` in front, as a tab beside ``beside`` the first time it is shown."""
    dock = docks[title]
    if not dock.isVisible() and docks[beside].isVisible() and not window.tabifiedDockWidgets(dock):
        window.tabifyDockWidget(docks[beside], dock)
    dock.show()
    dock.raise_()


def show_beside(window: QMainWindow, docks: dict[str, QDockWidget], title: str, beside: str) -> None:
    """Show dock ``title`` in front, to the right of ``beside`` (split, not tabbed) the first time,
    the row at least :data:`SIDE_BY_SIDE_HEIGHT` of the window's height (both panels hold plots)."""
    dock = docks[title]
    first = not dock.isVisible() and docks[beside].isVisible() and not window.tabifiedDockWidgets(dock)
    if first and not _fits_beside(dock, docks[beside]):  # split, both would widen the window
        bring_forward(window, docks, title, beside)
        return
    if first:
        window.splitDockWidget(docks[beside], dock, Qt.Orientation.Horizontal)
    dock.show()
    dock.raise_()
    if first:  # once the split is laid out (resizeDocks is ignored before)
        QTimer.singleShot(0, lambda: _grow_row(window, dock))


def _fits_beside(dock: QDockWidget, beside: QDockWidget) -> bool:
    """True when ``beside`` is wide enough to share its width with ``dock`` at both minimum widths."""
    need = dock.minimumSizeHint().width() + beside.minimumSizeHint().width() + SPLITTER_WIDTH
    return beside.width() >= need


def _grow_row(window: QMainWindow, dock: QDockWidget) -> None:
    want = int(SIDE_BY_SIDE_HEIGHT * window.height())
    if dock.isVisible() and dock.height() < want:
        window.resizeDocks([dock], [want], Qt.Orientation.Vertical)
