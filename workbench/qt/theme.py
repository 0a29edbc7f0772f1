"""Light and dark themes; "system" follows the desktop's colour scheme as it changes.

Qt 6.5+ reports the platform's scheme through ``QStyleHints.colorScheme()`` and emits
``colorSchemeChanged``; the Fusion style with an explicit palette gives the same look everywhere.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

THEMES = ("system", "light", "dark")


def _dark_palette() -> QPalette:
    p = QPalette()
    base, window, text = QColor(30, 30, 32), QColor(45, 45, 48), QColor(225, 225, 225)
    roles = {
        QPalette.ColorRole.Window: window, QPalette.ColorRole.WindowText: text,
        QPalette.ColorRole.Base: base, QPalette.ColorRole.AlternateBase: window,
        QPalette.ColorRole.ToolTipBase: window, QPalette.ColorRole.ToolTipText: text,
        QPalette.ColorRole.Text: text, QPalette.ColorRole.Button: window,
        QPalette.ColorRole.ButtonText: text, QPalette.ColorRole.BrightText: QColor(255, 80, 80),
        QPalette.ColorRole.Highlight: QColor(42, 130, 218), QPalette.ColorRole.HighlightedText: QColor(0, 0, 0),
        QPalette.ColorRole.Link: QColor(80, 160, 255), QPalette.ColorRole.PlaceholderText: QColor(140, 140, 140),
    }
    for role, color in roles.items():
        p.setColor(role, color)
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(120, 120, 120))
    return p


def system_scheme(app: QApplication) -> Qt.ColorScheme:
    """The desktop's colour scheme as Qt reports it (Unknown on platforms that do not say)."""
    return app.styleHints().colorScheme()


def effective_theme(app: QApplication, mode: str) -> str:
    """"light" or "dark": ``mode`` itself, or the system's scheme for "system"."""
    if mode in ("light", "dark"):
        return mode
    return "dark" if system_scheme(app) == Qt.ColorScheme.Dark else "light"


def apply_theme(app: QApplication, mode: str = "system") -> str:
    """Apply ``mode`` (system | light | dark) to ``app``; returns the theme now shown.

    With "system" the palette is re-applied whenever the desktop's colour scheme changes.
    Raises ValueError for an unknown mode.
    """
    if mode not in THEMES:
        raise ValueError(f"unknown theme {mode!r}; use one of {', '.join(THEMES)}")
    app.setStyle("Fusion")
    shown = effective_theme(app, mode)
    app.setPalette(_dark_palette() if shown == "dark" else app.style().standardPalette())
    if not app.property("workbench_theme_hooked"):
        app.styleHints().colorSchemeChanged.connect(_follow_system)
        app.setProperty("workbench_theme_hooked", True)
    app.setProperty("workbench_theme", mode)
    return shown


def _follow_system(*_args) -> None:
    """Re-apply the palette when the platform's scheme changes, if the user chose "system"."""
    app = QApplication.instance()
    if app is not None and app.property("workbench_theme") == "system":
        apply_theme(app, "system")
