"""A long calibration result (the recipe choice's figures) stays readable in a short Calibration dock:
the status text scrolls instead of being cut off at the dock's bottom edge."""

from __future__ import annotations

from PySide6.QtWidgets import QScrollArea

from workbench.qt.calibration_panel import CalibrationPanel

LONG = ("Done: 48 node units analysed. Recipe choice: compute+mse (output SQNR on 4 held-out rows, dB: "
        "preset 3.5, mse 4.0, compute+mse 14.9); 16-bit activations: no run of units gains 3 dB (best "
        "+1.4 dB), all stay 8-bit; took 11.7 s. The Recipe panel shows it; Ctrl+Z restores the preset "
        "(F5 then calibrates it as it is: Choose the recipe first is off). ") * 3


def _scroll_of(widget) -> QScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None and not isinstance(parent, QScrollArea):
        parent = parent.parentWidget()
    return parent


def test_a_long_status_can_be_scrolled_to_its_end(qtbot):
    panel = CalibrationPanel()
    qtbot.addWidget(panel)
    panel.resize(380, 360)  # a short dock beside the Inspector
    panel.show()
    qtbot.waitExposed(panel)
    panel.set_running(False, LONG)
    qtbot.wait(20)
    needed = panel.status.heightForWidth(panel.status.width())
    scroll = _scroll_of(panel.status)
    assert scroll is not None, "the status label is not in a scroll area: its end is cut off"
    shown = scroll.viewport().height()
    assert needed > shown  # the text is longer than the space: it must scroll
    assert scroll.verticalScrollBar().maximum() >= needed - shown - 2
    assert panel.status.text() == LONG
