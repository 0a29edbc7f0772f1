"""Tooltips of the toolbar's buttons: the command, its key and what it does.

A QToolButton shows its action's tooltip, which is the action's text when none is set ("Open", "Fit graph"):
no key and no word of what the command does, while the menus show the key and the status bar the
description. :func:`tip_text` writes "Open (Ctrl+O)" and, below it, the action's own tooltip (a reason it is
off) or else its status tip; :class:`ToolbarTips` shows that text when a button's tooltip is asked for, so
it follows whatever the window sets on the action later.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QToolBar, QToolButton, QToolTip

from workbench.qt.help_menu import plain_text


def tip_text(action: QAction) -> str:
    """ "Command (Key)" and, on the next line, what the action says of itself (its tooltip when one is set,
    else its status tip); the key is the first shortcut in the platform's notation, left out when there is none."""
    command = plain_text(action.text())
    keys = [k for k in action.shortcuts() if not k.isEmpty()]
    head = f"{command} ({keys[0].toString(QKeySequence.SequenceFormat.NativeText)})" if keys else command
    own = action.toolTip()
    detail = own if own and own != command else action.statusTip()
    return f"{head}\n{detail}" if detail and detail != command else head


class ToolbarTips(QObject):
    """Event filter of a toolbar's action buttons: their tooltip is :func:`tip_text` of the action."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.ToolTip and isinstance(watched, QToolButton):
            action = watched.defaultAction()
            if action is not None:
                QToolTip.showText(event.globalPos(), tip_text(action), watched)
                return True
        return False


def install(toolbar: QToolBar) -> ToolbarTips:
    """Give every action button of ``toolbar`` the tooltips of :func:`tip_text` (the filter is the toolbar's child)."""
    tips = ToolbarTips(toolbar)
    for action in toolbar.actions():
        button = toolbar.widgetForAction(action)
        if isinstance(button, QToolButton):
            button.installEventFilter(tips)
    return tips
