"""A toolbar button's tooltip names the command, its key and what it does.

The buttons showed the action's text alone ("Open", "Fit graph"): the key was only in the menus and the
description only in the status bar. Calibrate showed its description but not F5.
"""

from __future__ import annotations

from bundled_example import EXAMPLE
from PySide6.QtCore import QEvent
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QApplication, QToolBar, QToolButton, QToolTip


def _tip(win, name: str) -> str:
    """The tooltip the toolbar shows when the pointer rests on the button of action ``name``."""
    toolbar = win.findChild(QToolBar, "toolbar-main")
    button = toolbar.widgetForAction(getattr(win, f"act_{name}"))
    assert isinstance(button, QToolButton)
    QToolTip.hideText()
    centre = button.rect().center()
    QApplication.sendEvent(button, QHelpEvent(QEvent.Type.ToolTip, centre, button.mapToGlobal(centre)))
    return QToolTip.text()


def test_toolbar_tips_name_key_and_command(qtbot, window, open_file):
    win = window
    assert _tip(win, "open") == "Open (Ctrl+O)\nOpen an ONNX model or a project"
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    assert _tip(win, "calibrate") == "Calibrate (F5)\nCalibrate all tensors, quantize and measure per-node error"
    assert _tip(win, "fit") == "Fit graph (Ctrl+0)"
    assert _tip(win, "cancel") == "Cancel (Esc)\nCancel the running job"
    assert _tip(win, "same_type") == ("Select all of this type (Ctrl+T)\nSelect every node with the op type of the "
                                      "selected node (in the shown graph)")
    # a reason set on the action later is shown below the key
    win.act_export.setToolTip("Disabled: a reason")
    assert _tip(win, "export") == "Export (Ctrl+E)\nDisabled: a reason"
    QToolTip.hideText()
