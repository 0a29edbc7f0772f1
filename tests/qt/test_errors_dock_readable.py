"""The Errors dock reads apart: bar labels of MiniLM-like names keep the layer that tells them
apart, the SQNR axis's tick labels do not run together and its title is not cut, the empty
histogram gives its room to the bars until a node is chosen, and a spike at 0 (a ReLU output) does
not flatten the rest of the histogram; the quantization grid is drawn behind it (offscreen)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QFontMetrics  # noqa: E402

from workbench.core.api import QParams  # noqa: E402
from workbench.qt.error_view import ErrorView  # noqa: E402

PARTS = ("attention/output/dense/Add", "output/dense/Add", "attention/self/MatMul_1", "intermediate/dense/MatMul")
ROWS = [SimpleNamespace(node=f"/bert/encoder/layer.{layer}/{part}", op_type=part.rsplit("/", 1)[1].split("_")[0],
                        sqnr_db=2.0 + 0.1 * (layer * len(PARTS) + k))
        for layer in range(6) for k, part in enumerate(PARTS)]
RELU = {"tensor": "/f/f.5/Relu_output_0", "values": 16384, "rmin": 0.0, "rmax": 6.345,
        "edges": np.linspace(0.0, 6.345, 97).tolist(),
        "counts": [8000] + [int(400 * np.exp(-k / 20)) + 5 for k in range(95)]}


def make_view(qtbot, width: int, height: int = 330) -> ErrorView:
    view = ErrorView()
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    qtbot.waitExposed(view)
    return view


def tick_texts(view) -> list[str]:
    return [text for _v, text in view.bars_plot.getAxis("left")._tickLevels[0]]


def test_bar_labels_keep_what_tells_them_apart(qtbot):
    view = make_view(qtbot, 900)
    view.set_rows(ROWS)
    texts = tick_texts(view)
    by_node = {view.rows[i].node: texts[i] for i in range(len(texts))}
    assert len(set(texts)) == len(texts), texts  # was "/bert/encode…se/Add (Add)" for 12 of them
    for node, text in by_node.items():
        layer = node.split("/")[3]
        assert layer in text and text.endswith(f"({node.rsplit('/', 1)[1].split('_')[0]})"), (node, text)
    metrics = QFontMetrics(view.bars_plot.font())
    assert all(metrics.horizontalAdvance(t) <= view.bars_plot.getAxis("left").width() - 12 for t in texts)


@pytest.mark.parametrize("width", [560, 420])
def test_sqnr_ticks_stay_apart_and_the_axis_title_is_whole(qtbot, width):
    view = make_view(qtbot, width)
    view.set_rows([SimpleNamespace(node=f"/f/f.{i}/Conv", op_type="Conv", sqnr_db=38.4 + i) for i in range(5)])
    view.set_histogram(RELU, None)  # beside a histogram: the bars' plot is at its narrowest
    qtbot.wait(20)
    plot = view.bars_plot.getPlotItem()
    axis = plot.getAxis("bottom")
    lo, hi = plot.vb.viewRange()[0]
    size = plot.vb.width()
    values = sorted(v for _spacing, ticks in axis.tickValues(lo, hi, size) for v in ticks)
    metrics = QFontMetrics(view.bars_plot.font())
    texts = [f"{v:g}" for v in values]
    xs = [(v - lo) / (hi - lo) * size for v in values]
    assert len(values) >= 2
    for (x0, t0), (x1, t1) in zip(zip(xs, texts, strict=True), list(zip(xs, texts, strict=True))[1:], strict=False):
        # was "0 2040": 20 and 40 touched
        assert x1 - x0 >= (metrics.horizontalAdvance(t0) + metrics.horizontalAdvance(t1)) / 2 + 6, (values, size)
    title = axis.label.mapRectToScene(axis.label.boundingRect())
    assert title.left() >= 0 and title.right() <= view.bars_plot.width(), (title, view.bars_plot.width())


def test_empty_histogram_gives_its_room_to_the_bars(qtbot):
    view = make_view(qtbot, 900)
    view.set_rows(ROWS)
    qtbot.wait(20)
    assert not view.hist_plot.isVisible()
    assert view.bars_plot.width() >= 0.9 * view.split_view.width()  # was about half, beside empty axes
    view.set_histogram(RELU, None)
    qtbot.wait(20)
    assert view.hist_plot.isVisible() and view.hist_plot.width() >= 250
    assert view.bars_plot.width() >= 190 + 200
    view.clear_histogram("Computing the histogram of x...")  # another bar: the plot stays, emptied
    assert view.hist_plot.isVisible()
    view.clear_histogram()  # nothing chosen
    assert not view.hist_plot.isVisible() and view.hist_title.text().startswith("Select one node")


def test_a_spike_at_zero_does_not_flatten_the_histogram(qtbot):
    view = make_view(qtbot, 900)
    qp = QParams(np.array(0.0294, np.float32), np.array(0, np.uint8), "uint8")
    view.set_histogram(RELU, qp)
    vb = view.hist_plot.getPlotItem().vb
    vb.updateAutoRange()
    _lo, top = vb.viewRange()[1]
    counts = np.asarray(RELU["counts"])
    assert counts[1] <= top < counts[0] / 4  # the second bin (405) fills most of the height; was 8000 * 1.05
    assert "holds 8000 values" in view.hist_title.text()
    curves = [i for i in view.hist_plot.getPlotItem().listDataItems()]
    fill = next(c for c in curves if c.opts.get("fillLevel") is not None)
    grid = next(c for c in curves if c is not fill)
    assert grid.zValue() < fill.zValue()  # the grid behind the distribution
    plain = {**RELU, "counts": [5, 40, 80, 20], "edges": [0.0, 1.0, 2.0, 3.0, 4.0]}
    view.set_histogram(plain, None)
    vb.updateAutoRange()
    assert vb.viewRange()[1][1] >= 80  # no spike: the whole of the highest bin
