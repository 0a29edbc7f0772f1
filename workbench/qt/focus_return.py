"""Focus back to the main window when a dialog of ours closes.

Without a window manager (Xvfb, some kiosk sessions) nobody activates the main window again after a modal
dialog (a message box, a file dialog, Help > Keyboard Shortcuts) closes: no window of the app is active, so the
menus' keyboard shortcuts (F5, Ctrl+S, Esc ...) did nothing until the canvas was clicked. A window manager does
it itself; :class:`FocusReturn` does it only when the app's focus went nowhere right after one of its own
windows closed, so switching to another application never pulls the window back.

A dialog closed before the window system activated it (a message box accepted within a few milliseconds, or
any dialog on a busy machine) is activated afterwards all the same: the focus window becomes a window that is
already hidden, and no focus change ever leaves it. That stale activation is taken back too.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QGuiApplication, QWindow
from PySide6.QtWidgets import QApplication, QWidget


class FocusReturn(QObject):
    """Activates ``window`` again when the app's keyboard focus went nowhere because another window of the app
    (a dialog) was closed or hidden; not when that window is still shown (the user switched to another
    application)."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self._window = window
        app = QApplication.instance()
        if app is not None:
            app.focusChanged.connect(self._on_focus)
            app.focusWindowChanged.connect(self._on_focus_window)

    def _on_focus(self, old: QWidget | None, new: QWidget | None) -> None:
        if new is not None or old is None:
            return
        closing = old.window()
        if closing is not self._window:
            # timed in this object's context: a window deleted before the check's turn takes the check with it
            QTimer.singleShot(0, self, lambda: self._return_from(closing))

    def _on_focus_window(self, focus: QWindow | None) -> None:
        """The window system activated a window that is hidden already (a dialog closed before its activation
        was processed): checked on the next turn, when nothing visible took the focus meanwhile."""
        if focus is not None and not focus.isVisible():
            QTimer.singleShot(0, self, self._return_from_stale)

    def _return_from_stale(self) -> None:
        focus = QGuiApplication.focusWindow()
        app = QApplication.instance()
        if (focus is not None and focus.isVisible()) or app is None or app.activeModalWidget() is not None:
            return
        self._activate()

    def _return_from(self, closed: QWidget) -> None:
        """``closed`` had the focus: when it is gone and no window of the app took the focus, the main window
        takes it back (a modal dialog still open keeps it)."""
        try:
            visible = closed.isVisible()
        except RuntimeError:  # deleted with its dialog
            visible = False
        app = QApplication.instance()
        if visible or app is None or app.activeWindow() is not None or app.activeModalWidget() is not None:
            return
        self._activate()

    def _activate(self) -> None:
        """The main window, when shown, raised and activated."""
        if self._window.isVisible():
            self._window.raise_()
            self._window.activateWindow()


__all__ = ["FocusReturn"]
