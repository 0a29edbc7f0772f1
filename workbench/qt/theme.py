"""Light and dark themes; "system" follows the desktop's colour scheme as it changes.

Qt 6.5+ reports the platform's scheme through ``QStyleHints.colorScheme()`` and emits
``colorSchemeChanged``; the Fusion style with an explicit palette gives the same look everywhere.
The palette does not reach what paints its own colours: the graph canvas (background, edges) and
the pyqtgraph plots (background, axes, text, legends). :func:`apply_theme` therefore also sets pyqtgraph's
defaults for new plots and emits :func:`notifier`'s ``changed(theme)``; the window restyles the
canvas and every existing plot from :func:`colors_for` (:func:`style_plot`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QLabel, QWidget

THEMES = ("system", "light", "dark")
MUTED = "workbench_muted"  # QLabel property set by mute()


@dataclass(frozen=True)
class ThemeColors:
    """Colours of the views that do not follow the Qt palette (``#rrggbb`` strings)."""

    canvas_background: str
    canvas_edge: str
    plot_background: str
    plot_foreground: str  # axes, tick labels, titles
    histogram_fill: tuple[int, int, int, int]  # RGBA of the histogram's area
    muted_text: str  # secondary labels (where a value comes from, notes): readable on the window colour


LIGHT = ThemeColors(canvas_background="#fbfbfb", canvas_edge="#7a7a7a", plot_background="#ffffff",
                    plot_foreground="#303030", histogram_fill=(80, 120, 200, 120), muted_text="#555555")
DARK = ThemeColors(canvas_background="#1e1e20", canvas_edge="#9a9a9a", plot_background="#1e1e20",
                   plot_foreground="#d0d0d0", histogram_fill=(110, 170, 255, 150), muted_text="#a8a8a8")


def colors_for(shown: str) -> ThemeColors:
    """:data:`DARK` for "dark", else :data:`LIGHT`."""
    return DARK if shown == "dark" else LIGHT


class _Notifier(QObject):
    changed = Signal(str)  # the theme now shown: "light" or "dark"


_NOTIFIER: _Notifier | None = None


def notifier() -> _Notifier:
    """The process's theme notifier: ``changed(str)`` after every :func:`apply_theme`."""
    global _NOTIFIER
    if _NOTIFIER is None:
        _NOTIFIER = _Notifier()
    return _NOTIFIER


def shown_theme(app: QApplication | None = None) -> str:
    """The theme now shown ("light" or "dark"), from the mode last given to :func:`apply_theme`."""
    app = app or QApplication.instance()
    mode = app.property("workbench_theme") if app is not None else None
    return effective_theme(app, mode if mode in THEMES else "system") if app is not None else "light"


def style_plot(plot: pg.GraphicsView, colors: ThemeColors) -> None:
    """Background of ``plot`` (a PlotWidget or a GraphicsLayoutWidget), and the axis lines, tick
    labels, axis titles and title of every plot in it, and the text of every legend, in ``colors``."""
    plot.setBackground(colors.plot_background)
    for item in plot.scene().items():
        if isinstance(item, pg.PlotItem):
            _style_plot_item(item, colors)
        elif isinstance(item, pg.LegendItem):
            _style_legend(item, colors)


def _style_plot_item(item: pg.PlotItem, colors: ThemeColors) -> None:
    fg = QColor(colors.plot_foreground)
    for name in ("left", "bottom", "right", "top"):
        axis = item.getAxis(name)
        axis.setPen(fg)
        axis.setTextPen(fg)  # tick labels and the axis title
    title = item.titleLabel
    title.opts["color"] = colors.plot_foreground
    title.setText(title.text)


def _style_legend(legend: pg.LegendItem, colors: ThemeColors) -> None:
    """Entry texts in the foreground colour (also those added later: ``labelTextColor``)."""
    legend.setLabelTextColor(colors.plot_foreground)
    for _sample, label in legend.items:
        label.setText(label.text, color=colors.plot_foreground)  # setLabelTextColor alone does not redraw


def mute(label: QLabel) -> QLabel:
    """Draw ``label`` as secondary text in the shown theme's :attr:`ThemeColors.muted_text`; the
    window re-colours it on a theme switch (:func:`restyle_muted`). Returns ``label``."""
    label.setProperty(MUTED, True)
    label.setStyleSheet(f"color: {colors_for(shown_theme()).muted_text};")
    return label


def restyle_muted(root: QWidget, colors: ThemeColors) -> None:
    """Every label under ``root`` made secondary by :func:`mute`, in ``colors``."""
    for label in root.findChildren(QLabel):
        if label.property(MUTED):
            label.setStyleSheet(f"color: {colors.muted_text};")


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
    colors = colors_for(shown)
    pg.setConfigOptions(background=colors.plot_background, foreground=colors.plot_foreground)  # new plots
    notifier().changed.emit(shown)
    return shown


def _follow_system(*_args) -> None:
    """Re-apply the palette when the platform's scheme changes, if the user chose "system"."""
    app = QApplication.instance()
    if app is not None and app.property("workbench_theme") == "system":
        apply_theme(app, "system")
