"""The SQNR bars' labels never overlap or run off the plot: as many bars as the height holds,
long labels elided in the middle with the full label as the bar's tooltip (offscreen)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPointF  # noqa: E402
from PySide6.QtGui import QFontMetrics  # noqa: E402

from workbench.qt.error_view import LABEL_AXIS_WIDTH, ErrorView  # noqa: E402

ROWS = [SimpleNamespace(node=f"/model.22/cv3.{i}/cv3.{i}.1/conv/very_long_scope_name/Conv_{i}", op_type="Conv",
                        sqnr_db=5.0 + i) for i in range(40)]


def test_bar_labels_fit_the_plot_and_the_axis(qtbot):
    view = ErrorView()
    qtbot.addWidget(view)
    view.resize(700, 330)
    view.show()
    view.set_rows(ROWS)
    qtbot.wait(20)  # the view box's resize
    vb = view.bars_plot.getPlotItem().vb
    lo, hi = vb.viewRange()[1]
    shown = round(hi - lo)
    line = QFontMetrics(view.bars_plot.font()).height()
    assert 1 <= shown < 25 and shown * line <= vb.height()  # was 25 rows in ~150 px: labels overlapped
    ticks = view.bars_plot.getAxis("left")._tickLevels[0]
    metrics = QFontMetrics(view.bars_plot.font())
    room = view.bars_plot.getAxis("left").width() - 12  # the labels' column grows with them, from 190 px
    assert LABEL_AXIS_WIDTH - 12 <= room and all(metrics.horizontalAdvance(text) <= room for _v, text in ticks)
    assert "\u2026" in ticks[0][1] and ticks[0][1].endswith("(Conv)")  # elided in the middle
    scene_pos = vb.mapViewToScene(QPointF(1.0, 3.0))
    view.bars_plot.scene().sigMouseMoved.emit(scene_pos)
    assert view.bars_plot.toolTip() == f"{ROWS[3].node} (Conv): output SQNR 8.0 dB"  # the full label, its figure
