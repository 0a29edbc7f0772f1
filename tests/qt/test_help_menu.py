"""Help holds Documentation, Keyboard Shortcuts and About (it held About alone). The shortcuts dialog
is read from the window's actions when it opens, so it lists exactly the actions that have a shortcut
with the keys they have now; Documentation opens the README of the sources."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QAction, QDesktopServices, QKeySequence

from workbench.qt import help_menu
from workbench.qt.actions import ACTIONS

ROOT = Path(__file__).resolve().parents[2]


def _keys(action: QAction) -> str:
    return ", ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts() if not k.isEmpty())


def _help_menu(win):
    return next(a.menu() for a in win.menuBar().actions() if a.text() == "&Help")


def test_help_menu_entries(window):
    texts = [a.text() for a in _help_menu(window).actions() if not a.isSeparator()]
    assert texts == ["&Documentation", "&Keyboard Shortcuts", "&About Workbench"]


def test_shortcuts_dialog_lists_exactly_the_actions_with_shortcuts(qtbot, window):
    win = window
    declared = [getattr(win, f"act_{spec.name}") for spec in ACTIONS if spec.shortcuts]
    # a standard key the platform maps to nothing (Quit under offscreen) leaves its action without one
    with_keys = [a for a in declared if _keys(a)]
    assert len(declared) - len(with_keys) <= 1
    dialog = win.show_shortcuts()
    qtbot.waitExposed(dialog)
    rows = [r.action for r in dialog.rows]
    assert len(rows) == len(with_keys) and all(a in rows for a in with_keys)
    listed = dict(dialog.listed())
    assert listed["Open"] == "Ctrl+O" and listed["Calibrate"] == "F5" and listed["Keyboard Shortcuts"] == "Ctrl+/"
    assert listed["Redo"] == "Ctrl+Y, Ctrl+Shift+Z"
    assert all(listed[help_menu.plain_text(a.text())] == _keys(a) for a in with_keys if a.text() != "&Undo")
    menus = {r.command: r.menu for r in dialog.rows}
    assert menus["Open Project"] == "File" and menus["Calibrate"] == "Run" and menus["Undo"] == "Edit"
    dialog.filter.setText("f5")
    assert [c for c, _k in dialog.listed()] == ["Calibrate", "Choose Recipe"]  # F5 and Ctrl+F5
    dialog.close()


def test_shortcuts_dialog_follows_the_actions_as_they_are(qtbot, window):
    win = window
    view = next(a.menu() for a in win.menuBar().actions() if a.text() == "&View")
    extra = QAction("Ne&w Thing...", win)
    extra.setShortcut(QKeySequence("Ctrl+Alt+W"))
    view.addAction(extra)
    win.act_calibrate.setShortcuts([])
    win.act_fit.setShortcut(QKeySequence("Ctrl+9"))
    dialog = win.show_shortcuts()
    listed = dict(dialog.listed())
    assert listed["New Thing"] == "Ctrl+Alt+W" and {r.menu for r in dialog.rows if r.action is extra} == {"View"}
    assert "Calibrate" not in listed and listed["Fit graph"] == "Ctrl+9"
    dialog.close()


def test_documentation_opens_the_readme(qtbot, window, monkeypatch):
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: opened.append(url) or True))
    window.act_documentation.trigger()
    assert [u.toLocalFile() for u in opened] == [str(ROOT / "README.md")]
    assert (ROOT / "README.md").is_file()


def test_documentation_url_without_readme_is_the_project_url(tmp_path):
    missing = tmp_path / "README.md"
    urls = ["Source, https://example.org/src", "Documentation, https://example.org/docs"]
    assert help_menu.documentation_url(missing, urls).toString() == "https://example.org/docs"
    assert help_menu.documentation_url(missing, ["Homepage, https://example.org"]).toString() == "https://example.org"
    assert help_menu.documentation_url(missing, []) is None
    missing.write_text("# Workbench\n")
    assert help_menu.documentation_url(missing, urls).toLocalFile() == str(missing)


def test_documentation_without_any_says_where_to_look(window, dialogs, monkeypatch):
    monkeypatch.setattr(help_menu, "documentation_url", lambda: None)
    window.open_documentation()
    assert "No documentation found" in dialogs.texts() and "README.md" in dialogs.texts()
    dialogs.clear()
