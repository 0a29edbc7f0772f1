"""Help > Keyboard Shortcuts and Help > Documentation.

The shortcuts dialog is built from the window's QActions when it opens (every action with a
shortcut, found in the menus first so each row names its menu), so it lists what the keys do now,
never a table kept by hand. Documentation opens the README.md beside the package (a source
checkout), else the project URL of the installed package's metadata.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLineEdit,
    QMainWindow,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

#: the distribution whose metadata names the project URL
DISTRIBUTION = "onnx-quant-workbench"
#: Project-URL labels tried in order
URL_LABELS = ("documentation", "docs", "homepage", "home", "source", "repository")


@dataclass(frozen=True)
class ShortcutRow:
    """One action with a shortcut: its menu ("File", "View > Theme"; "" when in no menu), its text
    without mnemonics, and its shortcuts in the platform's notation ("Ctrl+O", "Ctrl+Y, Ctrl+Shift+Z")."""

    menu: str
    command: str
    keys: str
    action: QAction


def plain_text(text: str) -> str:
    """An action or menu text without its mnemonic ampersands and trailing "..." ("&Open..." -> "Open")."""
    return re.sub(r"&(.)", r"\1", text).removesuffix("...").removesuffix("\u2026").strip()


def _keys(action: QAction) -> str:
    return ", ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts() if not k.isEmpty())


def _menu_actions(menu: QMenu, path: str):
    for action in menu.actions():
        if action.menu() is not None:
            yield from _menu_actions(action.menu(), f"{path} > {plain_text(action.menu().title())}")
        elif not action.isSeparator():
            yield path, action


def shortcut_rows(window: QMainWindow) -> list[ShortcutRow]:
    """Every action of ``window`` that has a shortcut, once each: the menu bar's in menu order, then the
    others (toolbar-only, window-wide) by text."""
    rows: list[ShortcutRow] = []
    seen: set[int] = set()
    for top in window.menuBar().actions():
        if top.menu() is None:
            continue
        for path, action in _menu_actions(top.menu(), plain_text(top.menu().title())):
            if id(action) not in seen and _keys(action):
                seen.add(id(action))
                rows.append(ShortcutRow(path, plain_text(action.text()), _keys(action), action))
    others = [a for a in window.findChildren(QAction) if id(a) not in seen and _keys(a)]
    for action in sorted(others, key=lambda a: plain_text(a.text())):
        seen.add(id(action))
        rows.append(ShortcutRow("", plain_text(action.text()), _keys(action), action))
    return rows


class ShortcutsDialog(QDialog):
    """The table of :func:`shortcut_rows` (Shortcut, Command, Menu) with a filter box."""

    def __init__(self, window: QMainWindow, parent: QWidget | None = None):
        super().__init__(parent or window)
        self.setWindowTitle("Keyboard Shortcuts")
        self.rows = shortcut_rows(window)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter: a command, a menu or a key (e.g. F5, Ctrl+Shift)")
        self.filter.setClearButtonEnabled(True)
        self.table = QTableWidget(len(self.rows), 3)
        self.table.setHorizontalHeaderLabels(["Shortcut", "Command", "Menu"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        for i, row in enumerate(self.rows):
            for j, text in enumerate((row.keys, row.command, row.menu)):
                item = QTableWidgetItem(text)
                if j == 1 and row.action.statusTip():
                    item.setToolTip(row.action.statusTip())
                self.table.setItem(i, j, item)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.filter)
        layout.addWidget(self.table, 1)
        layout.addWidget(buttons)
        self.filter.textChanged.connect(self._apply_filter)
        self.resize(640, 560)

    def _apply_filter(self, text: str) -> None:
        words = text.lower().split()
        for i, row in enumerate(self.rows):
            haystack = f"{row.keys} {row.command} {row.menu}".lower()
            self.table.setRowHidden(i, not all(w in haystack for w in words))

    def listed(self) -> list[tuple[str, str]]:
        """(command, keys) of each row shown (the filter applied)."""
        return [(r.command, r.keys) for i, r in enumerate(self.rows) if not self.table.isRowHidden(i)]


def readme_path() -> Path:
    """README.md of a source checkout (beside the ``workbench`` package); it may not exist (an installed wheel)."""
    return Path(__file__).resolve().parents[2] / "README.md"


def project_urls(distribution: str = DISTRIBUTION) -> list[str]:
    """The ``Project-URL`` entries ("Label, https://...") of the installed package's metadata; [] when not
    installed or none."""
    try:
        meta = metadata.metadata(distribution)
    except metadata.PackageNotFoundError:
        return []
    return list(meta.get_all("Project-URL") or []) + ([f"Homepage, {meta['Home-page']}"] if meta["Home-page"] else [])


def documentation_url(readme: Path | None = None, urls: list[str] | None = None) -> QUrl | None:
    """Where Help > Documentation goes: ``readme`` (default :func:`readme_path`) as a file URL when it exists,
    else the first of ``urls`` (default :func:`project_urls`) labelled as in :data:`URL_LABELS`; None when
    neither is there."""
    readme = readme_path() if readme is None else readme
    if readme.is_file():
        return QUrl.fromLocalFile(str(readme))
    labelled = {}
    for entry in project_urls() if urls is None else urls:
        label, _, url = entry.partition(",")
        if url.strip():
            labelled.setdefault(label.strip().lower(), url.strip())
    for label in URL_LABELS:
        if label in labelled:
            return QUrl(labelled[label])
    return QUrl(next(iter(labelled.values()))) if labelled else None
