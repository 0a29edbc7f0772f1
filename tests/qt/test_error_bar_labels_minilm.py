"""The Errors dock's bar labels of MiniLM's 129 node units read apart (offscreen).

The labels' column was a fixed 190 px and a long name lost its middle there: all but 15 of MiniLM's
labels read like another ("/bert/encoder…tMul (MatMul)" for every MatMul of every layer), since the
names share "/bert/encoder/layer.N/attention/..." and the one unit "/Mul" left no shared scope to drop.
Now the column grows with the labels (up to a share of the plot) and each label keeps the segment that
tells it apart (its layer) and its last one (the op), whatever the plot's width.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QFontMetrics  # noqa: E402

from workbench.core import api  # noqa: E402
from workbench.qt.error_view import LABEL_AXIS_MAX, LABEL_AXIS_WIDTH, ErrorView  # noqa: E402


@pytest.fixture
def minilm_rows(corpus):
    model = api.open_model(corpus / "minilm_l6_v2" / "model.onnx")
    names = api.inspect_model(model, units=True)["units"]["nodes"]
    assert len(names) == 129 and "/Mul" in names
    return [SimpleNamespace(node=n, op_type=api.node_op_type(model, n), sqnr_db=20.0 + 0.1 * i)
            for i, n in enumerate(names)]


def _labels(view) -> dict[str, str]:
    texts = [text for _v, text in view.bars_plot.getAxis("left")._tickLevels[0]]
    assert len(texts) == len(view.rows)
    return {row.node: text for row, text in zip(view.rows, texts, strict=True)}


def _check(view) -> None:
    labels = _labels(view)
    assert len(set(labels.values())) == len(labels), sorted(labels.values())  # was 15 different of 129
    room = view.bars_plot.getAxis("left").width() - 12  # the tick and its gap
    metrics = QFontMetrics(view.bars_plot.font())
    for row in view.rows:
        text = labels[row.node]
        assert metrics.horizontalAdvance(text) <= room, (text, room)
        layer = next((part for part in row.node.split("/") if part.startswith("layer.")), "")
        assert layer in text and row.op_type in text.rsplit("/", 1)[-1], (row.node, text)


@pytest.mark.parametrize("width", [420, 700, 1400])
def test_minilm_bar_labels_are_distinct_and_fit(qtbot, minilm_rows, width):
    view = ErrorView()
    qtbot.addWidget(view)
    view.resize(width, 400)
    view.show()
    qtbot.waitExposed(view)
    view.set_rows(minilm_rows)
    _check(view)
    axis = view.bars_plot.getAxis("left").width()
    assert LABEL_AXIS_WIDTH <= axis <= max(LABEL_AXIS_WIDTH, min(LABEL_AXIS_MAX, 0.45 * view.bars_plot.width()))
    if width == 1400:  # room to spare: the column grows with the labels
        assert axis > LABEL_AXIS_WIDTH


def test_labels_follow_the_plot_width(qtbot, minilm_rows):
    view = ErrorView()
    qtbot.addWidget(view)
    view.resize(1400, 400)
    view.show()
    qtbot.waitExposed(view)
    view.set_rows(minilm_rows)
    wide = view.bars_plot.getAxis("left").width()
    view.resize(420, 400)  # the dock made narrower: the column and its labels with it
    qtbot.waitUntil(lambda: view.bars_plot.getAxis("left").width() < wide, timeout=5_000)
    _check(view)
