"""Long tensor and output names in narrow docks: the histogram caption wraps inside a long tensor
name instead of setting the Errors dock's minimum width, and the Evaluate panel's output names that
differ only in their middle still read apart when elided."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QApplication, QStyleOptionViewItem  # noqa: E402

from workbench.qt.document import Document  # noqa: E402
from workbench.qt.error_view import ErrorView  # noqa: E402
from workbench.qt.evaluate_panel import EvaluatePanel  # noqa: E402

#: the longest tensor name of the corpus' minilm_l6_v2 (76 characters)
MINILM = "/bert/encoder/layer.0/attention/output/LayerNorm/LayerNormalization_output_0"
#: a long name with no "/" (Qt's line breaking wraps after a "/" already, not after "." or "_")
PADDLE = "p2o.LayerNormalization.12_output_0_quantized_with_a_very_long_tensor_name"


@pytest.mark.parametrize("name", [MINILM, PADDLE])
def test_a_long_tensor_name_in_the_histogram_caption_does_not_widen_the_errors_dock(qtbot, name):
    view = ErrorView()
    qtbot.addWidget(view)
    view.resize(900, 400)
    view.show()
    view.set_rows([SimpleNamespace(node="/f/f.0/Conv", op_type="Conv", sqnr_db=30.0)])  # a histogram follows rows
    narrowest = view.minimumSizeHint().width()  # its buttons' row: 427 px
    counts = np.arange(1, 65, dtype=float) * 1000
    view.set_histogram({"tensor": name, "counts": counts.tolist(), "edges": np.linspace(-2, 4, 65).tolist(),
                        "rmin": -2.0, "rmax": 4.0, "values": 38400}, None)
    one_line = view.hist_title.fontMetrics().horizontalAdvance(name + ":")
    assert one_line > narrowest + 50  # the name alone is wider than the rest of the view
    assert view.minimumSizeHint().width() == narrowest  # PADDLE: was 506 px, the caption's one long word
    assert view.hist_title.minimumSizeHint().width() < 200
    assert view.hist_title.text() == f"{name}: 38400 values in [-2, 4]"  # the text as written, no break marks
    view.resize(narrowest, 400)
    qtbot.waitUntil(lambda: view.width() == narrowest, timeout=10_000)
    assert view.hist_title.width() <= narrowest and view.hist_title.height() >= 2 * view.fontMetrics().height()  # wrapped


def _report(names: list[str]) -> dict:
    outputs = [SimpleNamespace(name=n, shape=(1, 384), mse=0.01, nonfinite=0, sqnr_db=20.0, cosine=0.99,
                               max_abs_error=0.1) for n in names]
    rep = SimpleNamespace(outputs=outputs, metric=None, float_metric=None, quant_metric=None, samples=8,
                          optimization_level="ORT_ENABLE_ALL", seconds=1.0, notes=[])
    return {"report": rep, "metric": None, "eval_data": "/data/eval.npz", "recipe": ""}


def _drawn_text(table, row: int) -> str:
    """The text the column's delegate hands the style to draw in cell (row, 0)."""
    index = table.model().index(row, 0)
    option = QStyleOptionViewItem()
    option.initFrom(table.viewport())
    option.widget = table
    option.rect = table.visualRect(index)
    table.itemDelegateForColumn(0).initStyleOption(option, index)
    return option.text


def _cell(table, row: int):
    return table.viewport().grab(table.visualRect(table.model().index(row, 0))).toImage()


def test_output_names_that_differ_in_the_middle_read_apart_when_elided(qtbot):
    names = [MINILM, MINILM.replace("layer.0", "layer.5"), "/bert/pooler/dense/MatMul_output_0"]
    panel = EvaluatePanel(Document())
    qtbot.addWidget(panel)
    panel.resize(700, 420)
    panel.show()
    panel.set_result(_report(names))
    table = panel.output_table
    qtbot.waitUntil(lambda: table.columnWidth(0) > 50, timeout=10_000)
    QApplication.processEvents()
    metrics = table.fontMetrics()
    assert metrics.horizontalAdvance(names[0]) > table.columnWidth(0)  # too long for the column: elided
    # the painted cells differ: a middle ellipsis drew both as "/bert/encode...ion_output_0"
    assert _cell(table, 0) != _cell(table, 1)
    shown = [_drawn_text(table, row) for row in range(3)]
    assert "layer.0" in shown[0] and "layer.5" not in shown[0]
    assert shown[0] != shown[1] and shown[1].endswith("output_0") and shown[0].endswith("output_0")
    assert all(s.startswith("\u2026") for s in shown[:2])  # the shared "/bert/encoder/" goes first
    assert all(metrics.horizontalAdvance(s) < table.columnWidth(0) for s in shown)
    # the full name is the cell's tooltip; the table's copy of the name is untouched
    for row, name in enumerate(names):
        assert table.item(row, 0).text() == name and table.item(row, 0).toolTip().startswith(name)
