"""The Calibration dock grown to show its whole status text, the Inspector keeping the most of the column.

The Calibration panel's status box takes the panel's spare height; beside the Inspector that was two or
three lines, so a result (the recipe choice's figures: eight lines on nudenet_320n) was cut, the rest
reachable only through a small scroll bar. When its text needs more lines than the box shows,
:func:`fit_status` grows the dock by what is missing, taking it from the dock below it in the right column
(the Inspector / Recipe tabs), but never past a third of the two: the Inspector stays more than twice the
Calibration panel's height (the first-launch layout's rule). What still does not fit scrolls. The dock is
never shrunk: a short text next ("running 40 %") leaves the height the user or the last result gave it.
In a 1400 x 900 window the box shows five whole lines (it showed about 2.5), with the panel's progress bar
beside its buttons. In a small window the third of the column leaves the box one line under the panel's
fields (1024 x 700: "Done: 3 node units analysed. The latency" over an Inspector saying only "No node
selected"): there it grows to :data:`MIN_LINES` lines, up to :data:`SMALL_SHARE` of the column.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow, QScrollArea, QTabBar

Area = Qt.DockWidgetArea

#: lines of status the box shows at least, past the third of the column in a small window
MIN_LINES = 3
#: the most of the column the Calibration dock takes for :data:`MIN_LINES` (the Inspector keeps the rest)
SMALL_SHARE = 0.45


def status_room(panel) -> tuple[int, int]:
    """(pixels the status text needs at its width, pixels its box shows) of a CalibrationPanel ``panel``."""
    label = panel.status
    scroll = label.parentWidget()
    while scroll is not None and not isinstance(scroll, QScrollArea):
        scroll = scroll.parentWidget()
    width = scroll.viewport().width() if scroll is not None else label.width()
    shown = scroll.viewport().height() if scroll is not None else label.height()
    return label.heightForWidth(max(width, 1)), shown


def _below(window: QMainWindow, docks: dict[str, QDockWidget], dock: QDockWidget) -> QDockWidget | None:
    """The dock shown under ``dock`` in its column (the Inspector, or the Recipe tab in front of it), or None."""
    area = window.dockWidgetArea(dock)
    geo = dock.geometry()
    under = [d for d in docks.values() if d is not dock and d.isVisible() and not d.isFloating()
             and window.dockWidgetArea(d) == area and d.geometry().top() > geo.bottom()
             and d.geometry().left() < geo.right() and geo.left() < d.geometry().right()]
    return min(under, key=lambda d: d.geometry().top()) if under else None


def fit_status(window: QMainWindow, docks: dict[str, QDockWidget]) -> bool:
    """Grow the Calibration dock so its status text shows whole, up to just under a third of it and the dock
    below it together (module docstring); True when it grew. Nothing when it is floating, hidden, alone in
    its column or already tall enough."""
    dock = docks.get("Calibration")
    if dock is None or not dock.isVisible() or dock.isFloating() or window.dockWidgetArea(dock) not in (
            Area.RightDockWidgetArea, Area.LeftDockWidgetArea):
        return False
    below = _below(window, docks, dock)
    if below is None:
        return False
    dock.widget().layout().activate()
    need, shown = status_room(dock.widget())
    total = dock.height() + below.height()
    # a small window: the box shows MIN_LINES lines (or the whole of a shorter text) past the third if need be
    line = dock.widget().status.fontMetrics().lineSpacing()
    least = dock.height() + max(min(need, MIN_LINES * line) - shown, 0)
    cap = max((total - 1) // 3, min(least, int(SMALL_SHARE * total)))  # below > 2 x dock, or 3 lines
    want = min(dock.height() + max(need - shown, 0), cap)
    if want <= dock.height():
        return False
    # Qt sizes the Inspector's tab group with its tab bar: asked without it, the pair came out 9 px off
    window.resizeDocks([dock, below], [want, total - want + _tab_bar(window, below)], Qt.Orientation.Vertical)
    return True


def _tab_bar(window: QMainWindow, dock: QDockWidget) -> int:
    """Height of the tab bar under ``dock`` when it is tabbed with others (the Inspector / Recipe tabs), else 0."""
    geo = dock.geometry()
    for bar in window.findChildren(QTabBar):
        r = bar.geometry()
        if bar.isVisible() and bar.parentWidget() is window and abs(r.top() - geo.bottom() - 1) <= 3 \
                and r.left() < geo.right() and geo.left() < r.right():
            return r.height()
    return 0


__all__ = ["fit_status", "status_room"]
