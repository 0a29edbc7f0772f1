"""Run > Sweep Executor... offers the executors as a list in a dialog of a sensible width; Enter takes the
entry shown, Escape keeps the setting.

It was a free text field under one 190-character line that stretched the dialog across the screen (1580 px on
a 1600 px screen): the choices were only named in that line, and a typo was refused only after OK.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QComboBox, QDialog

from workbench.qt import settings


def _answer(qtbot, key, seen: list, typed: str = "") -> None:
    """When the dialog shows: note its width and its list, type ``typed`` over the entry, press ``key``."""

    def act():
        shown = [w for w in QApplication.topLevelWidgets() if isinstance(w, QDialog) and w.isVisible()]
        if not shown:
            QTimer.singleShot(20, act)
            return
        dialog = shown[0]
        box = dialog.findChild(QComboBox)
        seen.append((dialog.width(), [box.itemText(i) for i in range(box.count())] if box else None))
        field = box.lineEdit() if box else dialog.focusWidget()
        if typed:
            field.selectAll()
            QTest.keyClicks(field, typed)
        QTest.keyClick(field, key)
        if dialog.isVisible():  # the key did not close it: close it so the test fails instead of waiting
            dialog.reject()

    QTimer.singleShot(0, act)


def test_executor_is_chosen_from_a_list_enter_takes_it_escape_keeps(qtbot, window):
    assert settings.executor() == "threads"
    seen: list = []
    _answer(qtbot, Qt.Key.Key_Return, seen, typed="inline")
    assert window.choose_executor() == "inline" and settings.executor() == "inline"
    width, choices = seen[0]
    assert choices == ["threads", "inline", "ray"]
    assert width <= 640, width

    _answer(qtbot, Qt.Key.Key_Escape, seen, typed="ray")
    assert window.choose_executor() is None and settings.executor() == "inline"
