"""The "hide the N less frequent op types" line names the N a click hides. Where the compact legend had cut op
types for room (6521dbb: fewer than MAX_OPS rows under a tall Errors dock), listing them all and then reading the
line said N = op types past MAX_OPS, more than the click then left out (pytest-qt, offscreen, the main window)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from test_legend_more_ops import OPS, open_many_ops  # noqa: E402

from workbench.qt.canvas.legend import MAX_OPS, MIN_OPS  # noqa: E402


def _line(legend) -> str:
    return legend.text().splitlines()[-1]


def test_the_hide_line_counts_what_a_click_hides(qtbot, window, open_file, tmp_path):
    canvas, legend = open_many_ops(window, open_file, tmp_path)
    viewport = canvas.viewport()
    errors = window.docks["Errors"]
    window.resizeDocks([errors], [window.height() - 250], Qt.Orientation.Vertical)  # a canvas under 160 px high
    qtbot.waitUntil(lambda: viewport.height() < 160, timeout=5_000)
    qtbot.waitUntil(lambda: legend.op_limit < MAX_OPS, timeout=5_000)
    compact = legend.op_limit
    assert MIN_OPS <= compact < MAX_OPS
    assert _line(legend) == f"\u25b8 {len(OPS) - compact} more op types (click to list)"

    qtbot.mouseClick(legend.more, Qt.MouseButton.LeftButton)  # list them all
    assert len(legend.text().splitlines()) >= len(OPS) + 2  # the title, every op type, the line
    assert _line(legend) == f"\u25be hide the {len(OPS) - compact} less frequent op types"  # was 20 - 14
    hidden_tip = legend.more.toolTip()
    assert all(f"{op} ({len(OPS) - k})" in hidden_tip for k, op in enumerate(OPS) if k >= compact)
    assert not any(f"{op} ({len(OPS) - k})<" in hidden_tip for k, op in enumerate(OPS) if k < compact)

    qtbot.mouseClick(legend.more, Qt.MouseButton.LeftButton)  # hide them: as many as the line said
    assert legend.op_limit == compact
    assert len(legend.text().splitlines()) == 1 + compact + 1
    assert _line(legend) == f"\u25b8 {len(OPS) - compact} more op types (click to list)"


def test_with_room_the_line_counts_past_max_ops(qtbot, window, open_file, tmp_path):
    _canvas, legend = open_many_ops(window, open_file, tmp_path)
    assert legend.op_limit == MAX_OPS
    qtbot.mouseClick(legend.more, Qt.MouseButton.LeftButton)
    assert _line(legend) == f"\u25be hide the {len(OPS) - MAX_OPS} less frequent op types"
    qtbot.mouseClick(legend.more, Qt.MouseButton.LeftButton)
    assert legend.op_limit == MAX_OPS and _line(legend) == f"\u25b8 {len(OPS) - MAX_OPS} more op types (click to list)"
