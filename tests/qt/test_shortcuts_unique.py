"""No two commands share a keyboard shortcut, on any platform, and every shortcut is shown in a menu.

Colour by Sensitivity had Ctrl+Shift+G, which is also Find Previous (QKeySequence.FindPrevious) on
Windows, macOS and GNOME: there the key was ambiguous and Qt ran neither command. The standard keys are
checked with the bindings Qt's QKeySequence documentation gives them on every platform (Qt reports only
the running platform's), the plain keys as written."""

from __future__ import annotations

from collections import defaultdict

from PySide6.QtGui import QKeySequence

from workbench.qt import help_menu
from workbench.qt.actions import ACTIONS, MENUS

K = QKeySequence.StandardKey
#: the keys of each standard key the actions use, on Windows, macOS (Ctrl is Command there), KDE and GNOME
STANDARD_KEYS = {
    K.New: ("Ctrl+N",), K.Open: ("Ctrl+O",), K.Save: ("Ctrl+S",), K.SaveAs: ("Ctrl+Shift+S",),
    K.Quit: ("Ctrl+Q",), K.Find: ("Ctrl+F",), K.FindNext: ("F3", "Ctrl+G"),
    K.FindPrevious: ("Shift+F3", "Ctrl+Shift+G"), K.SelectAll: ("Ctrl+A",), K.ZoomIn: ("Ctrl++",),
    K.ZoomOut: ("Ctrl+-",),
}


def _portable(shortcut) -> tuple[str, ...]:
    if isinstance(shortcut, K):
        assert shortcut in STANDARD_KEYS, f"{shortcut}: add its bindings on every platform to STANDARD_KEYS"
        return STANDARD_KEYS[shortcut]
    return (QKeySequence(shortcut).toString(),)


def owners() -> dict[str, list[str]]:
    """key -> the actions that have it on some platform."""
    found = defaultdict(list)
    for spec in ACTIONS:
        for shortcut in spec.shortcuts:
            for key in _portable(shortcut):
                found[key].append(spec.name)
    return found


def test_no_key_is_two_commands_on_any_platform():
    found = owners()
    assert len(found) >= 40
    assert {k: names for k, names in found.items() if len(names) > 1} == {}
    assert found["Ctrl+Shift+V"] == ["color_sensitivity"] and found["Ctrl+Shift+G"] == ["find_previous"]


def test_every_shortcut_is_in_a_menu_and_unique_in_the_window(window):
    in_menus = {entry for entries in MENUS.values() for entry in entries}
    assert [s.name for s in ACTIONS if s.shortcuts and s.name not in in_menus] == []
    rows = help_menu.shortcut_rows(window)
    assert [r.command for r in rows if not r.menu] == []  # each key is written beside its command in a menu
    keys = [key.strip() for r in rows for key in r.keys.split(",")]
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)
    assert dict((r.command, r.keys) for r in rows)["Colour by Sensitivity"] == "Ctrl+Shift+V"
