"""The Errors dock's minimum width: its summary wraps on a row of its own instead of sitting beside the
buttons (the dock could not be made narrower than 423 px, about 600 px for a quantized file); the buttons acting
on the figures sit beside the bars' colour legend, which wraps."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")

from workbench.qt.error_view import ErrorView  # noqa: E402


def min_width(view) -> int:
    view.layout().activate()  # after visibility or text changes
    return view.minimumSizeHint().width()


def test_the_summary_does_not_set_the_width_and_a_quantized_file_shows_only_compare(qtbot):
    view = ErrorView()
    qtbot.addWidget(view)
    view.show()
    view.set_rows([SimpleNamespace(node="/f/f.0/Conv", op_type="Conv", sqnr_db=30.0)])  # the buttons act on rows
    buttons = view.color_button.sizeHint().width() + view.node_data_button.sizeHint().width()
    legend = view.bar_legend.minimumSizeHint().width()  # beside the buttons, it wraps to its narrowest
    assert legend <= 80
    assert min_width(view) <= buttons + legend + 40  # the two buttons, the colour legend and the margins
    view.summary.setText("x" * 10 + " word" * 80)  # a long summary wraps
    assert min_width(view) <= buttons + legend + 40
    view.set_quantized("a_model_quantized_elsewhere_with_a_long_file_name.onnx")
    assert view.compare_button.isVisible()
    assert not view.color_button.isVisible() and not view.node_data_button.isVisible()
    assert min_width(view) <= view.compare_button.sizeHint().width() + 40
    view.set_quantized("")
    assert view.color_button.isVisible() and not view.compare_button.isVisible()
    view.set_rows([])  # a float model before its calibration: the summary line alone
    assert not view.color_button.isVisible() and not view.bars_plot.isVisible()


def test_the_recipe_panels_rules_caption_wraps(window):
    """Its one-line caption set the Recipe panel's minimum width, so the right column showed a sideways
    scrollbar at 336 px."""
    from PySide6.QtGui import QFontMetrics

    panel = window.recipe_panel
    caption = panel.rules_caption
    one_line = QFontMetrics(caption.font()).horizontalAdvance(caption.text())
    panel.layout().activate()
    assert caption.wordWrap() and panel.minimumSizeHint().width() < one_line
