"""Keyboard shortcuts work again as soon as a dialog closes: without a window manager (Xvfb) no window of the app
was active after a message box closed, so Ctrl+L, F5 and the rest did nothing until the canvas was clicked."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox

EXAMPLE = Path(__file__).resolve().parents[2] / "workbench" / "resources" / "example" / "digits_cnn.onnx"


def _active(qtbot, window) -> None:
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    window.canvas.setFocus()


def _shortcut_works(qtbot, window) -> None:
    shown = window.act_legend.isChecked()
    qtbot.keyClick(window.canvas, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)  # View > Legend
    assert window.act_legend.isChecked() != shown


def test_the_window_is_active_again_after_a_message_box(qtbot, window, open_file):
    open_file(window, EXAMPLE)
    _active(qtbot, window)
    box = QMessageBox(QMessageBox.Icon.Information, "Workbench", "A message.", parent=window)
    QTimer.singleShot(50, box.accept)
    box.exec()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=10_000)
    _shortcut_works(qtbot, window)


def test_the_window_is_active_again_after_a_file_dialog(qtbot, window, open_file):
    open_file(window, EXAMPLE)
    _active(qtbot, window)
    dialog = QFileDialog(window, "Open")
    dialog.setOption(QFileDialog.Option.DontUseNativeDialog)
    QTimer.singleShot(50, dialog.reject)
    dialog.exec()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=10_000)
    _shortcut_works(qtbot, window)
