"""The op-type legend stays compact: at 1024 x 700 nudenet_320n's legend (14 op types one per line, a note, the
"7 more op types" line) took 289 x 248 px, half the canvas's height. Its rows now run in two columns, and where the
legend would still cover more than a quarter of the viewport (the Errors dock pulled up) its less frequent op types
go into the "N more op types" line, whose tooltip names them: every colour drawn keeps an entry (pytest-qt,
offscreen, in the main window)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from test_legend_more_ops import OPS, open_many_ops, swatches  # noqa: E402

from workbench.qt.canvas.legend import MAX_OPS, MIN_OPS  # noqa: E402


def _share(canvas) -> float:
    """The share of the viewport's area the legend covers."""
    legend, viewport = canvas.legend_overlay, canvas.viewport()
    return legend.width() * legend.height() / (viewport.width() * viewport.height())


def _entries(canvas) -> set[str]:
    """The colours (#rrggbb) the legend names: its rows and the "more" line's tooltip."""
    legend = canvas.legend_overlay
    return swatches(legend.label.text()) | (swatches(legend.more.toolTip()) if legend.more.isVisible() else set())


def test_op_legend_covers_at_most_a_quarter_of_the_canvas(qtbot, window, open_file, tmp_path):
    canvas, legend = open_many_ops(window, open_file, tmp_path)
    drawn = {canvas.node_color(n).name() for n in canvas.node_names()}
    viewport = canvas.viewport()
    assert legend.isVisible() and viewport.height() > 400
    # two columns of 7: one column of 14 rows was 234 px of a 516 px high viewport
    assert legend.height() <= viewport.height() / 3, (legend.size(), viewport.size())
    assert legend.op_limit == MAX_OPS and legend.text().splitlines()[1:MAX_OPS + 1] == [
        f"{op} ({len(OPS) - k})" for k, op in enumerate(OPS[:MAX_OPS])]
    assert len(swatches(legend.label.text())) == MAX_OPS
    assert _share(canvas) <= 0.25
    assert _entries(canvas) == drawn

    errors = window.docks["Errors"]
    window.resizeDocks([errors], [window.height() - 250], Qt.Orientation.Vertical)  # a canvas under 160 px high
    qtbot.waitUntil(lambda: viewport.height() < 160, timeout=5_000)
    qtbot.waitUntil(lambda: legend.op_limit < MAX_OPS, timeout=5_000)
    assert _share(canvas) <= 0.25, (legend.size(), viewport.size())
    assert legend.geometry().bottom() <= viewport.geometry().bottom()
    assert MIN_OPS <= legend.op_limit < MAX_OPS and legend.more.isVisible()
    assert legend.more.text().count(f"{len(OPS) - legend.op_limit} more op types")
    assert _entries(canvas) == drawn  # the cut op types are in the "more" line's tooltip

    window.resizeDocks([errors], [80], Qt.Orientation.Vertical)  # room again: the 14 rows are back
    qtbot.waitUntil(lambda: legend.op_limit == MAX_OPS, timeout=5_000)
    assert len(swatches(legend.label.text())) == MAX_OPS and _share(canvas) <= 0.25
