"""The toolbar's colour box names what the canvas colours show: "sensitivity" while the sweep's
figure colours it (it read "Colour: error" under a sensitivity legend), "error" again for the
per-unit SQNR; either entry colours the canvas in its "error" mode (offscreen)."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE_MODEL

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QStyle, QStyleOptionComboBox  # noqa: E402


def _option(box) -> QStyleOptionComboBox:
    option = QStyleOptionComboBox()
    box.initStyleOption(option)
    return option


def test_the_colour_box_names_sensitivity_then_sqnr(qtbot, window, open_file, monkeypatch):
    open_file(window, EXAMPLE_MODEL)
    canvas, box = window.canvas, window.color_mode
    names = canvas.node_names()
    values = {n: 40.0 + i for i, n in enumerate(names)}
    monkeypatch.setattr(window.sensitivity, "canvas_values", lambda: values)
    monkeypatch.setattr(window.sensitivity, "canvas_scale", lambda: (47.4, 54.7, False))
    window.color_by_sensitivity()
    assert canvas.color_mode() == "error" and canvas.error_label().startswith("Sensitivity")
    assert box.currentText() == "sensitivity"  # was "error"
    box.adjustSize()
    shown = box.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, _option(box),
                                       QStyle.SubControl.SC_ComboBoxEditField, box).width()
    assert shown >= box.fontMetrics().horizontalAdvance("sensitivity")  # not cut to "sensiti"
    assert [box.itemText(i) for i in range(box.count())] == ["op", "dtype", "sensitivity", "own noise"]
    ranked = [canvas.node_color(n) for n in names]
    box.setCurrentText("op")
    assert canvas.color_mode() == "op"
    box.setCurrentText("sensitivity")  # chosen again: the same colours
    assert canvas.color_mode() == "error" and [canvas.node_color(n) for n in names] == ranked
    monkeypatch.setattr(window, "_canvas_errors", lambda: {n: 30.0 for n in names})
    window.color_by_sqnr()
    assert canvas.color_mode() == "error" and "SQNR" in canvas.error_label()
    assert box.currentText() == "error"
