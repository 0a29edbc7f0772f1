"""The window remembers its layout across sessions; themes switch and follow the system."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from workbench.qt import settings
from workbench.qt.app_window import MainWindow
from workbench.qt.theme import apply_theme, effective_theme


def test_dock_layout_and_geometry_restored(qtbot):
    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(701, 503)  # smaller than the offscreen screen, which clamps restored geometry
    win.docks["Errors"].setVisible(False)
    win.close()
    geometry, state = settings.window_state()
    assert geometry and state
    again = MainWindow()
    qtbot.addWidget(again)
    assert not again.docks["Errors"].isVisibleTo(again)
    assert (again.width(), again.height()) == (701, 503)
    again.close()


def test_theme_choice_is_applied_and_remembered(qtbot):
    app = QApplication.instance()
    win = MainWindow()
    qtbot.addWidget(win)
    try:
        win.set_theme("dark")
        assert settings.theme() == "dark"
        assert app.palette().color(QPalette.ColorRole.Window).lightness() < 80
        assert [a.isChecked() for a in win.theme_actions] == [False, False, True]
        win.set_theme("light")
        assert app.palette().color(QPalette.ColorRole.Window).lightness() > 180
        assert settings.theme() == "light"
    finally:
        apply_theme(app, "system")
        win.close()


def test_system_theme_follows_the_platform_scheme(qtbot, monkeypatch):
    import workbench.qt.theme as theme

    app = QApplication.instance()
    scheme = {"now": Qt.ColorScheme.Dark}  # the offscreen platform reports no scheme: stand in for it
    monkeypatch.setattr(theme, "system_scheme", lambda _app: scheme["now"])
    try:
        assert apply_theme(app, "system") == "dark"
        assert app.palette().color(QPalette.ColorRole.Window).lightness() < 80
        scheme["now"] = Qt.ColorScheme.Light
        app.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Light)  # what the platform sends
        assert app.palette().color(QPalette.ColorRole.Window).lightness() > 180
        assert effective_theme(app, "system") == "light"
        apply_theme(app, "dark")  # an explicit choice no longer follows the system
        app.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Light)
        assert app.palette().color(QPalette.ColorRole.Window).lightness() < 80
    finally:
        monkeypatch.undo()
        apply_theme(app, "system")


def test_theme_reaches_the_canvas_and_the_plots(qtbot):
    app = QApplication.instance()
    win = MainWindow()
    qtbot.addWidget(win)
    plot = win.errors.bars_plot
    try:
        win.set_theme("dark")
        assert win.canvas.backgroundBrush().color().lightness() < 60
        assert plot.backgroundBrush().color().lightness() < 60
        assert plot.getPlotItem().getAxis("left").textPen().color().lightness() > 180  # text reads on dark
        assert win.canvas._edge_color.lightness() > 130
        win.set_theme("light")
        assert win.canvas.backgroundBrush().color().lightness() > 230
        assert plot.backgroundBrush().color().lightness() > 230
        assert plot.getPlotItem().getAxis("left").textPen().color().lightness() < 80
    finally:
        apply_theme(app, "system")
        win.close()


def test_canvas_and_plots_follow_the_system_scheme(qtbot, monkeypatch):
    import workbench.qt.theme as theme

    app = QApplication.instance()
    scheme = {"now": Qt.ColorScheme.Light}
    monkeypatch.setattr(theme, "system_scheme", lambda _app: scheme["now"])
    apply_theme(app, "system")
    win = MainWindow()
    qtbot.addWidget(win)
    try:
        assert win.canvas.backgroundBrush().color().lightness() > 230
        scheme["now"] = Qt.ColorScheme.Dark
        app.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Dark)
        assert win.canvas.backgroundBrush().color().lightness() < 60
        assert win.errors.hist_plot.backgroundBrush().color().lightness() < 60
    finally:
        monkeypatch.undo()
        apply_theme(app, "system")
        win.close()
