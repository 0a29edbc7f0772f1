"""The histogram's legend stays off the data and the quantization grid's ticks (offscreen).

Found by a new-user trial: anchored in the plot's top-right corner, the legend (values, clip range, quantization
grid: 81 px high) covered the histogram and, in a short Errors dock, the grid's ticks along the value axis. It
now sits under the value axis, as many entries a line as the plot's width holds."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF  # noqa: E402

from workbench.core.api import QParams  # noqa: E402
from workbench.qt.error_view import ErrorView  # noqa: E402

RELU = {"tensor": "/f/f.5/Relu_output_0", "values": 16384, "rmin": 0.0, "rmax": 6.345,
        "edges": np.linspace(0.0, 6.345, 97).tolist(),
        "counts": [400] + [int(400 * np.exp(-k / 20)) + 5 for k in range(95)]}
#: uint4: 16 levels, those in the histogram's range drawn as ticks
QP = QParams(np.array(6.345 / 15, np.float32), np.array(0, np.uint8), "uint4")


@pytest.mark.parametrize(("width", "height", "lines"), [(900, 330, 1), (900, 260, 1), (600, 330, 3)])
def test_legend_is_clear_of_the_ticks_and_the_data(qtbot, width, height, lines):
    view = ErrorView()
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    qtbot.waitExposed(view)
    view.set_rows([SimpleNamespace(node=f"/f/f.{i}/Conv", op_type="Conv", sqnr_db=38.4 + i) for i in range(5)])
    view.set_histogram(RELU, QP)
    qtbot.wait(50)
    item = view.hist_plot.getPlotItem()
    legend = item.legend
    assert [label.text for _sample, label in legend.items] == ["output values", "clip range", "quantization grid"]
    grid = next(d for d in item.listDataItems() if d.name() == "quantization grid")
    xs, ys = grid.getData()
    # q * scale for q = 0..14 (15 * scale lies just past 6.345 in float32)
    assert np.allclose(np.unique(xs), np.float32(6.345 / 15) * np.arange(15), rtol=0, atol=1e-6)
    ticks = grid.curve.mapRectToScene(grid.curve.boundingRect())  # the 15 ticks along the axis
    assert ticks.width() > 0.6 * item.vb.width() and ticks.height() > 2  # drawn, on screen
    placed = legend.sceneBoundingRect()
    assert not placed.intersects(ticks), (placed, ticks)
    assert placed.height() > 0 and legend.rowCount == lines
    assert not placed.intersects(item.vb.sceneBoundingRect())  # the histogram, the clip lines, the ticks
    assert not placed.intersects(item.getAxis("bottom").sceneBoundingRect())  # the tick labels and "value"
    # whole inside the plot: nothing of it cut off
    assert QRectF(0, 0, view.hist_plot.width(), view.hist_plot.height()).contains(placed)
    view.set_histogram(RELU, QP)  # drawn again: cleared and refilled in the same place
    qtbot.wait(50)
    assert legend.sceneBoundingRect() == placed and len(legend.items) == 3
