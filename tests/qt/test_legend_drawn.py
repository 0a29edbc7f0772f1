"""The dtype legend of an already-quantized file lists the colours drawn (no folded weight / bias
DequantizeLinear's int8 / int32) and explains the node tag pills ("in:u8 w:i8 w:i32")."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench
from workbench.qt.canvas.items import EDGE_COLOR

EXAMPLE = Path(workbench.__file__).resolve().parent / "resources" / "example"


@pytest.fixture
def qdq_file(example_qdq_file):
    """Our QDQ export (cpu-u8s8) of the bundled digits_cnn example."""
    return example_qdq_file


def test_dtype_legend_lists_what_is_drawn(window, open_file, qdq_file):
    win = window
    open_file(win, qdq_file)
    canvas = win.canvas
    assert canvas.color_mode() == "dtype"
    drawn = {canvas.node_color(n).name() for n in canvas.node_names()}
    drawn |= {canvas.edge_color(e).name() for e in range(canvas.edge_count())} - {EDGE_COLOR.name()}
    legend = {c.name(): label for label, c in canvas.legend()}
    # it listed int8 and int32 (the folded weight / bias DequantizeLinear nodes) and "not assigned"
    assert set(legend) == drawn and sorted(legend.values()) == ["float", "uint8"]
    tags = canvas._state.data.structure.node_tags
    assert sorted(set(tags.values())) == ["in:u8 w:i8 w:i32", "w:i8 w:i32"]
    text = canvas.legend_overlay.text().splitlines()
    assert "node tag: folded Q/DQ of its graph input (in:), weight / bias (w:)" in text
