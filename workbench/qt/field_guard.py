"""Spin boxes and combo boxes of the edit panels (Inspector, Recipe) that commit each change as an
undoable command: the mouse wheel scrolls the panel unless the field has keyboard focus (a wheel
turn over the Inspector set ``axis = -8`` on three Convs), and Ctrl+Z / Ctrl+Shift+Z / Ctrl+Y
reach the window's Undo / Redo even while such a field has focus (the field's own text undo is
not wanted: its edit is already a command on the document's undo stack).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QKeyCombination, QObject, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QWidget

_CTRL = Qt.KeyboardModifier.ControlModifier
_UNDO_REDO_KEYS = {QKeyCombination(_CTRL, Qt.Key.Key_Z), QKeyCombination(_CTRL, Qt.Key.Key_Y),
                   QKeyCombination(_CTRL | Qt.KeyboardModifier.ShiftModifier, Qt.Key.Key_Z)}


def is_undo_redo(event) -> bool:
    """True for a key event that is the window's Undo or Redo shortcut."""
    return (event.matches(QKeySequence.StandardKey.Undo) or event.matches(QKeySequence.StandardKey.Redo)
            or event.keyCombination() in _UNDO_REDO_KEYS)


class FieldGuard(QObject):
    """Event filter of the guarded fields (see the module docstring)."""

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt override
        kind = event.type()
        if kind == QEvent.Type.Wheel and not watched.hasFocus():
            event.ignore()  # not taken: the wheel goes on to the parent (the panel's scroll area)
            return True
        if kind == QEvent.Type.ShortcutOverride and is_undo_redo(event):
            event.ignore()  # not claimed by the field: the Undo / Redo shortcut fires
            return True
        return False


def guard_fields(root: QWidget) -> FieldGuard:
    """Guard every spin box and combo box under ``root`` (call once its fields exist); they take
    the keyboard focus by click or Tab only (``Qt.StrongFocus``), never by the wheel."""
    guard = FieldGuard(root)
    for cls in (QAbstractSpinBox, QComboBox):
        for field in root.findChildren(cls):
            field.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            field.installEventFilter(guard)
    return guard


__all__ = ["FieldGuard", "guard_fields", "is_undo_redo"]
